"""The work behind the `upstream` commands; `upstream.cli` only declares options and wires."""
