"""What the root command's options leave for every command: kept apart from the failure
handling so that `upstream --version` reads it without loading anything else."""

from __future__ import annotations

from dataclasses import dataclass

import typer


@dataclass(frozen=True)
class CliState:
    """Global options, kept on the root context for every command."""

    debug: bool = False


def debugging(ctx: typer.Context) -> bool:
    state = ctx.find_root().obj
    return isinstance(state, CliState) and state.debug
