"""The command line shared by the generated documentation pages (API, CLI, settings).

Each page is rendered from the code so it cannot drift; `--check` compares instead of
writing, which is what the docs test and CI rely on.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def generated_page_main(
    module: str,
    description: str,
    default_output: Path,
    refresh: Callable[[str], str],
    argv: list[str] | None = None,
) -> int:
    """Write (or with --check, compare) the page `refresh` makes from the current text."""
    parser = argparse.ArgumentParser(prog=f"python -m {module}", description=description)
    parser.add_argument("--output", type=Path, default=default_output, help="file to write")
    parser.add_argument(
        "--check", action="store_true", help="only compare; exit 1 when the file is stale"
    )
    args = parser.parse_args(argv)
    output: Path = args.output
    current = output.read_text(encoding="utf-8") if output.is_file() else ""
    text = refresh(current)
    if args.check:
        if current != text:
            print(f"{output} is out of date: run `python -m {module}`", file=sys.stderr)
            return 1
        return 0
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}")
    return 0
