"""`upstream db rebuild` and the start-up migration: derive every derived table again from the
kept raw events, with a progress bar on the terminal."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from upstream.ingest.rebuild import Progress as OnProgress
from upstream.ingest.rebuild import RebuildReport, prepare_store, rebuild
from upstream.store.engine import Store


@contextmanager
def progress_bar(console: Console, label: str) -> Iterator[OnProgress]:
    """A callback for the rebuild that draws `label` and a bar of events replayed."""
    bar = Progress(
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("events"),
        TimeRemainingColumn(),
        console=console,
        transient=not console.is_terminal,
    )
    task = bar.add_task(label, total=None)

    def show(done: int, total: int) -> None:
        bar.update(task, completed=done, total=total)

    with bar:
        yield show


def rebuild_store(store: Store, console: Console) -> RebuildReport:
    """Rebuild every derived table from the raw events, showing progress."""
    with progress_bar(console, "rebuilding lineage") as show:
        return rebuild(store, show)


def prepare(store: Store, console: Console) -> RebuildReport | None:
    """Migrate the schema, and rebuild the derived tables when the running code's rules
    differ from those that built them (the bar shows only when there is work)."""
    return prepare_store(
        store, lambda: progress_bar(console, "deriving lineage from the kept events")
    )


def summary(report: RebuildReport) -> str:
    text = f"replayed {report.events:,} events"
    if report.refused:
        shown = ", ".join(str(seq) for seq in report.refused[:10])
        text += (
            f"; {len(report.refused):,} stored events are refused by the current rules and "
            f"add nothing (kept; sequence numbers {shown}"
            f"{', …' if len(report.refused) > 10 else ''})"
        )
    return text
