"""Render the command-line reference (`docs/cli.md`) from the `upstream` command itself.

Like the API reference, it is generated so it cannot drift: every command, argument, option,
default and environment variable comes from the Typer app, and a test regenerates the page.
Run `python -m upstream.clidoc` after changing a command; `--check` only compares.
"""

from __future__ import annotations

import enum
import sys
from pathlib import Path
from typing import Any

import typer

from upstream.apidoc import table_cell
from upstream.docgen import generated_page_main

DEFAULT_OUTPUT = Path("docs/cli.md")

INTRO = """\
Generated from the `upstream` command by `python -m upstream.clidoc` — do not edit by hand.
`upstream COMMAND --help` prints the same in a terminal, `upstream --version` the version;
`python -m upstream` is the same command as `upstream`.

The read commands (`lineage`, `field-lineage`, `export`) and `ingest` and `demo` talk to a
server (`--url`, default `UPSTREAM_URL`, else `http://127.0.0.1:5000`; `--token` or
`UPSTREAM_TOKEN` when it has tokens), or, with `--db URL`, work straight on a database without
a server. Every command exits with status 0 on success, 1 on an error (the message, one line on
standard error, names what is wrong) and 2 on a usage error.
"""


def _commands(group: Any, prefix: list[str]) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for name, command in group.commands.items():
        if getattr(command, "hidden", False):
            continue
        path = [*prefix, name]
        if hasattr(command, "commands"):
            found += _commands(command, path)
        else:
            found.append((" ".join(path), command))
    return found


def render_help(text: str) -> list[str]:
    """A command's docstring as Markdown: prose stays prose, example commands become code."""
    lines: list[str] = []
    for paragraph in text.replace("\b", "").strip().split("\n\n"):
        rows = [row.strip() for row in paragraph.strip().splitlines() if row.strip()]
        if not rows:
            continue
        head, _, rest = rows[0].partition(": ")
        if rest.startswith("upstream "):  # "Example: upstream …" on one line
            rows = [rest, *rows[1:]]
            lines += [f"{head}:", ""]
        if all(row.startswith(("upstream ", "cat ", "curl ")) for row in rows):
            lines += ["```sh", *rows, "```", ""]
        else:
            lines += [" ".join(rows), ""]
    return lines


def _default(param: Any) -> str:
    value = param.default
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or value is False or value == () or not param.show_default:
        return ""
    return f"`{value}`"


def render_params(params: list[Any]) -> list[str]:
    lines = ["| Argument / option | Env var | Default | Description |", "|---|---|---|---|"]
    for param in params:
        if getattr(param, "hidden", False):
            continue
        if type(param).__name__.endswith("Argument"):
            many = " …" if param.nargs == -1 else ""
            label = f"`{(param.metavar or param.name).upper()}{many}`"
            if not param.required:
                label += " (optional)"
        else:
            label = ", ".join(f"`{opt}`" for opt in param.opts)
            if param.is_flag and param.secondary_opts:
                label += ", " + ", ".join(f"`{opt}`" for opt in param.secondary_opts)
        envvar = f"`{param.envvar}`" if param.envvar else ""
        lines.append(f"| {label} | {envvar} | {_default(param)} | {table_cell(param.help or '')} |")
    return lines


def render() -> str:
    from upstream.cli import app

    root = typer.main.get_command(app)
    lines = ["# Command line (`upstream`)", "", INTRO]
    commands = _commands(root, ["upstream"])
    lines += ["| Command | What it does |", "|---|---|"]
    for name, command in commands:
        summary = (command.help or "").strip().splitlines()[0] if command.help else ""
        lines.append(f"| [`{name}`](#{name.replace(' ', '-')}) | {table_cell(summary)} |")
    lines.append("")
    for name, command in commands:
        lines += [f"## {name}", ""]
        lines += render_help(command.help or "")
        params = [p for p in command.params if p.name != "help"]
        if params:
            lines += [*render_params(params), ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    return generated_page_main(
        "upstream.clidoc",
        "Write the command-line reference.",
        DEFAULT_OUTPUT,
        lambda _current: render(),
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
