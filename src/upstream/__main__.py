"""`python -m upstream` is the `upstream` command."""

from upstream.cli import main

main()
