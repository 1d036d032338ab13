"""`upstream ingest`: events from files into a server or a database, in batches.

Batches make it fast; a refused batch is not a lost batch. The sink names the refused events
by index, those are reported with their file and line, and the rest of the batch is sent again
(`--on-error skip`), or only the events before the first bad one are (`--on-error stop`, which
then ends the run), so the outcome is exactly that of sending the events one by one.
"""

from __future__ import annotations

import gzip
import io
import sys
import time
import zlib
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, BinaryIO, cast

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from upstream.commands.event_files import Item, Located, Malformed, read_events
from upstream.commands.sinks import BatchRejected, BatchTooLarge, EventSink
from upstream.render.words import counted

STDIN = "-"


@dataclass
class IngestReport:
    """What one `upstream ingest` did."""

    files: int = 0
    read: int = 0
    stored: int = 0
    duplicates: int | None = 0
    rejected: int = 0
    malformed: int = 0
    stopped: bool = False
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    #: What ended the run early (the server went away, the database failed): raised again by
    #: the caller once the summary of what was stored has been shown.
    failure: Exception | None = None

    @property
    def failed(self) -> bool:
        return bool(self.rejected or self.malformed or self.stopped or self.failure)

    def summary(self) -> str:
        rate = self.stored / self.seconds if self.seconds > 0 else 0.0
        stored, files = counted(self.stored, "event"), counted(self.files, "file")
        text = f"{stored} stored from {files} in {self.seconds:.2f} s ({rate:,.0f} events/s)"
        if self.duplicates:
            text += f", {self.duplicates:,} of them already known"
        if self.rejected:
            text += f"; {counted(self.rejected, 'invalid event')} refused"
        if self.malformed:
            text += f"; {counted(self.malformed, 'unreadable entry', 'unreadable entries')}"
        if self.stopped:
            text += "; stopped at the first error (--on-error stop)"
        return text


class Stop(Exception):
    """An error under `--on-error stop`: nothing after it is sent."""


class Ingestion:
    """Batches located events into a sink and accounts for every one of them."""

    def __init__(
        self,
        sink: EventSink,
        *,
        batch_size: int,
        stop_on_error: bool,
        report: Callable[[str], None],
    ) -> None:
        self.sink = sink
        self.batch_size = batch_size
        self.stop_on_error = stop_on_error
        self.report_line = report
        self.result = IngestReport()
        self.pending: list[Located] = []

    def add(self, item: Item) -> None:
        """Queue an event (sending a full batch), or report a malformed entry."""
        if isinstance(item, Malformed):
            self.flush()
            self.result.malformed += 1
            where = f"{item.origin}:{item.line}" if item.line else item.origin
            self._problem(f"{where}: {item.message}")
            if self.stop_on_error:
                raise Stop
            return
        self.result.read += 1
        self.pending.append(item)
        if len(self.pending) >= self.batch_size:
            self.flush()

    def flush(self) -> None:
        batch, self.pending = self.pending, []
        self._deliver(batch)

    def _deliver(self, batch: Sequence[Located]) -> None:
        while batch:
            try:
                duplicates = self.sink.send([event.document for event in batch])
            except BatchTooLarge:
                middle = len(batch) // 2
                self._deliver(batch[:middle])
                self._deliver(batch[middle:])
                return
            except BatchRejected as exc:
                batch = self._without_bad_events(batch, exc)
                continue
            self.result.stored += len(batch)
            if duplicates is None or self.result.duplicates is None:
                self.result.duplicates = None
            else:
                self.result.duplicates += duplicates
            return

    def _without_bad_events(self, batch: Sequence[Located], exc: BatchRejected) -> list[Located]:
        """Report the events the sink refused; the events left to send again."""
        by_index: dict[int, list[str]] = {}
        for problem in exc.problems:
            if problem.index is not None and 0 <= problem.index < len(batch):
                by_index.setdefault(problem.index, []).append(problem.message)
        if not by_index:
            return self._unlocated(batch, exc)
        bad = sorted(by_index)
        if self.stop_on_error:
            self._deliver(batch[: bad[0]])
            self._refuse(batch[bad[0]], by_index[bad[0]])
            raise Stop
        for index in bad:
            self._refuse(batch[index], by_index[index])
        return [event for index, event in enumerate(batch) if index not in by_index]

    def _unlocated(self, batch: Sequence[Located], exc: BatchRejected) -> list[Located]:
        """A refusal that names no event: find the bad ones by sending one at a time."""
        if len(batch) == 1:
            self._refuse(batch[0], [p.message for p in exc.problems] or [exc.message])
            if self.stop_on_error:
                raise Stop
            return []
        for event in batch:
            self._deliver([event])
        return []

    def _refuse(self, event: Located, messages: list[str]) -> None:
        self.result.rejected += 1
        self._problem(f"{event.origin}:{event.line}: {'; '.join(messages)}")

    def _problem(self, line: str) -> None:
        self.result.problems.append(line)
        self.report_line(line)


class EventRateColumn(ProgressColumn):
    """Events sent so far and events per second."""

    def render(self, task: Task) -> Text:
        events = int(task.fields.get("events", 0))
        elapsed = task.elapsed or 0.0
        rate = events / elapsed if elapsed > 0 else 0.0
        return Text(f"{events:,} events  {rate:,.0f} events/s", style="cyan")


def ingest(
    sources: Sequence[str],
    sink: EventSink,
    *,
    batch_size: int,
    stop_on_error: bool,
    console: Console,
    stdin: IO[str] | None = None,
) -> IngestReport:
    """Send every event of `sources` (paths, or `-` for standard input) through `sink`."""
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        EventRateColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    total = sum(_size(source) or 0 for source in sources) or None
    started = time.perf_counter()
    ingestion = Ingestion(
        sink,
        batch_size=batch_size,
        stop_on_error=stop_on_error,
        report=lambda line: progress.console.print(Text(line, style="red"), soft_wrap=True),
    )
    with progress:
        task = progress.add_task("ingesting", total=total, events=0)
        done_bytes = 0
        try:
            for source in sources:
                ingestion.result.files += 1
                progress.update(task, description=_short(source))
                with _opened(source, stdin) as (stream, size_of_read):
                    for item in _decoded(read_events(stream, source), source):
                        ingestion.add(item)
                        if len(ingestion.pending) == 0 or isinstance(item, Malformed):
                            _show(progress, task, ingestion, done_bytes + size_of_read())
                    ingestion.flush()
                    done_bytes += size_of_read()
                _show(progress, task, ingestion, done_bytes)
        except Stop:
            ingestion.result.stopped = True
        except Exception as exc:  # the caller reports it after the summary
            ingestion.result.failure = exc
    ingestion.result.seconds = time.perf_counter() - started
    return ingestion.result


def _show(progress: Progress, task_id: TaskID, ingestion: Ingestion, position: int) -> None:
    progress.update(task_id, completed=position, events=ingestion.result.stored)


def _decoded(items: Iterator[Item], origin: str) -> Iterator[Item]:
    """The items, with a file that is not UTF-8 text (or not gzip, for .gz) reported as a
    malformed entry; nothing after that point of the file can be read."""
    try:
        yield from items
    except UnicodeDecodeError as exc:
        yield Malformed(origin, 0, f"not UTF-8 text (byte {exc.start} of a read block)")
    except (gzip.BadGzipFile, EOFError, zlib.error) as exc:
        yield Malformed(origin, 0, f"not a complete gzip file ({exc})")


@contextmanager
def _opened(source: str, stdin: IO[str] | None) -> Iterator[tuple[IO[str], Callable[[], int]]]:
    """The source as text (gunzipped when its name ends in .gz), with a function telling how
    many of its bytes were read."""
    if source == STDIN:
        yield (stdin or sys.stdin), lambda: 0
        return
    with Path(source).open("rb") as raw:
        binary = gzip.GzipFile(fileobj=raw) if source.endswith(".gz") else raw
        with io.TextIOWrapper(cast(BinaryIO, binary), encoding="utf-8") as stream:
            yield stream, raw.tell


def _size(source: str) -> int | None:
    if source == STDIN:
        return None
    try:
        return Path(source).stat().st_size
    except OSError:
        return None


def _short(source: str, width: int = 30) -> str:
    name = "stdin" if source == STDIN else Path(source).name
    return name if len(name) <= width else "…" + name[-(width - 1) :]
