"""`upstream ingest`: files and stdin into a database or a server, in batches, with each bad
event reported by file and line and exactly the good ones stored."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from typer.testing import CliRunner

from tests.builders import ds, run_event
from tests.conftest import LiveServer
from upstream.cli import app
from upstream.commands.event_files import Located
from upstream.commands.ingest import Ingestion, Stop
from upstream.commands.sinks import BatchRejected, EventProblem
from upstream.store import schema as t
from upstream.store.engine import Store

runner = CliRunner()


def event(number: int) -> dict[str, Any]:
    """A valid event whose run id tells its number (…-0000000000NN)."""
    return run_event(
        ("cli", f"job{number}"),
        run_id=f"00000000-0000-4000-8000-{number:012d}",
        inputs=[ds("cli", f"in{number}")],
        outputs=[ds("cli", f"out{number}")],
    )


def stored_numbers(store: Store) -> set[int]:
    """The numbers of the events stored, from their run ids."""
    with store.read() as conn:
        runs = conn.execute(sa.select(t.events.c.run_id)).scalars().all()
    return {int(str(run)[-12:]) for run in runs}


def write_ndjson(path: Path, lines: list[Any]) -> Path:
    """One line per entry: an event dict as JSON, a string verbatim."""
    path.write_text(
        "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines),
        encoding="utf-8",
    )
    return path


def bad_run_id(number: int) -> dict[str, Any]:
    broken = event(number)
    broken["run"]["runId"] = "not-a-uuid"
    return broken


@pytest.fixture
def troubled_file(tmp_path: Path) -> Path:
    """Ten lines: 4 has an invalid run id, 8 is broken JSON, 9 is an array, not an event."""
    lines: list[Any] = [event(n) for n in range(1, 11)]
    lines[3] = bad_run_id(4)
    lines[7] = '{"eventType": "START", '
    lines[8] = "[1, 2]"
    return write_ndjson(tmp_path / "events.ndjson", lines)


def test_every_input_form_and_stdin_into_a_database(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    ndjson = write_ndjson(tmp_path / "a.ndjson", [event(1), "", event(2), event(3)])
    array = tmp_path / "b.json"
    array.write_text(json.dumps([event(4), event(5)], indent=2), encoding="utf-8")
    single = tmp_path / "c.json"
    single.write_text(json.dumps(event(6), indent=4), encoding="utf-8")
    jq_style = tmp_path / "d.json"  # pretty events one after another, as `jq .` prints
    jq_style.write_text(json.dumps(event(7), indent=2) + "\n" + json.dumps(event(8), indent=2))
    stdin = json.dumps(event(9)) + "\n" + json.dumps(event(10)) + "\n"

    result = runner.invoke(
        app,
        ["ingest", str(ndjson), str(array), str(single), str(jq_style), "-", "--db", db_url],
        input=stdin,
    )

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("10 events stored from 5 files in ")
    assert stored_numbers(store) == set(range(1, 11))
    again = runner.invoke(app, ["ingest", str(ndjson), "--db", db_url])
    assert again.exit_code == 0
    assert "3 events stored from 1 file" in again.stdout
    assert "3 of them already known" in again.stdout


@pytest.mark.parametrize("batch_size", [1, 3, 500])
def test_skip_stores_every_good_event_and_reports_each_bad_line(
    db_url: str, store: Store, troubled_file: Path, batch_size: int
) -> None:
    result = runner.invoke(
        app,
        [
            "ingest",
            str(troubled_file),
            "--db",
            db_url,
            "--on-error",
            "skip",
            "--batch-size",
            str(batch_size),
        ],
    )

    assert result.exit_code == 1
    assert stored_numbers(store) == {1, 2, 3, 5, 6, 7, 10}
    name = str(troubled_file)
    problems = [line for line in result.stderr.splitlines() if line.startswith(f"{name}:")]
    assert [p[len(name) :].split(":")[1] for p in problems] == ["4", "8", "9"], result.stderr
    assert problems[0].startswith(f"{name}:4: run.runId: ")
    assert problems[1].startswith(f"{name}:8: malformed JSON")
    assert problems[2] == f"{name}:9: expected an event (a JSON object), found an array"
    assert "7 events stored from 1 file" in result.stdout
    assert "1 invalid event refused; 2 unreadable entries" in result.stdout


@pytest.mark.parametrize("batch_size", [1, 3, 500])
def test_stop_stores_the_events_before_the_first_bad_one_and_nothing_after(
    db_url: str, store: Store, troubled_file: Path, batch_size: int
) -> None:
    result = runner.invoke(
        app, ["ingest", str(troubled_file), "--db", db_url, "--batch-size", str(batch_size)]
    )

    assert result.exit_code == 1
    assert stored_numbers(store) == {1, 2, 3}
    assert f"{troubled_file}:4: run.runId: " in result.stderr
    assert ":8:" not in result.stderr
    assert "stopped at the first error (--on-error stop)" in result.stdout


def test_a_broken_line_stops_after_storing_what_came_before(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    path = write_ndjson(tmp_path / "e.ndjson", [event(1), event(2), "{oops", event(4)])
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url])
    assert result.exit_code == 1
    assert stored_numbers(store) == {1, 2}
    assert "e.ndjson:3: malformed JSON" in result.stderr


TRUNCATED = '{"eventType": "START", trunc'
#: Bad lines of every shape: cut after a comma, inside a string, not JSON at all, an event cut
#: short, a raw tab in a string.
BAD_LINES = [TRUNCATED, '{"eventType": "STA', "oops", '{"eventType": "START",', '{"a": "b\tc"}']


@pytest.mark.parametrize(
    ("lines", "good", "bad"),
    [
        pytest.param([TRUNCATED, *range(1, 9)], set(range(1, 9)), [1], id="first line"),
        pytest.param([1, 2, 3, 4, TRUNCATED, 5, 6, 7, 8], set(range(1, 9)), [5], id="middle"),
        pytest.param([*range(1, 9), TRUNCATED], set(range(1, 9)), [9], id="last line"),
        pytest.param(BAD_LINES, set(), [1, 2, 3, 4, 5], id="every line"),
        pytest.param([TRUNCATED], set(), [1], id="one bad line only"),
        pytest.param(["oops", "", "{oops", 1, 2], {1, 2}, [1, 3], id="two bad lines first"),
    ],
)
def test_skip_stores_every_good_event_wherever_the_bad_line_is(
    db_url: str, store: Store, tmp_path: Path, lines: list[Any], good: set[int], bad: list[int]
) -> None:
    path = write_ndjson(
        tmp_path / "events.ndjson", [event(n) if isinstance(n, int) else n for n in lines]
    )
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url, "--on-error", "skip"])

    assert result.exit_code == 1
    assert stored_numbers(store) == good
    reported = [line for line in result.stderr.splitlines() if line.startswith(f"{path}:")]
    assert [int(line[len(str(path)) + 1 :].split(":")[0]) for line in reported] == bad
    assert all(": malformed JSON at column " in line for line in reported), reported
    entries = "entry" if len(bad) == 1 else "entries"
    assert result.stdout.startswith(f"{len(good)} events stored from 1 file in ")
    assert f"; {len(bad)} unreadable {entries}" in result.stdout


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (TRUNCATED, "at column 24: Expecting property name enclosed in double quotes"),
        ('{"a": "b\tc"}', "at column 9: Invalid control character"),
        ('{"a": "b', "at column 7: Unterminated string"),
        ('{"a": "\\q"}', "at column 8: Invalid \\escape"),
        ('{"a" 1}', "at column 6: Expecting ':' delimiter"),
        ("oops", "at column 1: Expecting value"),
    ],
)
def test_malformed_json_messages_are_whole(
    db_url: str, tmp_path: Path, line: str, message: str
) -> None:
    path = write_ndjson(tmp_path / "e.ndjson", [event(1), line])
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url, "--on-error", "skip"])
    assert f"e.ndjson:2: malformed JSON {message}\n" in result.stderr


def test_pretty_printed_events_resume_after_a_broken_one(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    broken = json.dumps(event(2), indent=2).replace('"eventType"', '"eventType" "oops"', 1)
    path = tmp_path / "pretty.json"
    path.write_text("\n".join([json.dumps(event(1), indent=2), broken, json.dumps(event(3))]))
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url, "--on-error", "skip"])
    assert result.exit_code == 1
    assert stored_numbers(store) == {1, 3}
    first_line_of_2 = json.dumps(event(1), indent=2).count("\n") + 2
    assert (
        f"pretty.json:{first_line_of_2}: malformed JSON at line {first_line_of_2 + 1} column 15: "
        "Expecting ':' delimiter" in result.stderr
    )


def test_events_of_an_array_are_located_by_their_line(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "array.json"
    path.write_text(
        "[\n" + ",\n".join(json.dumps(e) for e in [event(1), bad_run_id(2), event(3)]) + "\n]\n"
    )
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url, "--on-error", "skip"])
    assert result.exit_code == 1
    assert "array.json:3: run.runId: " in result.stderr
    assert stored_numbers(store) == {1, 3}


def with_repeated_key(number: int) -> str:
    """Event `number` as JSON text whose job names itself twice (`job.name` repeated)."""
    text = json.dumps(event(number))
    return text.replace(f'"name": "job{number}"', f'"name": "job{number}", "name": "other"', 1)


@pytest.mark.parametrize("form", ["ndjson", "array", "pretty"])
def test_a_repeated_key_makes_its_entry_unreadable_naming_the_path(
    db_url: str, store: Store, tmp_path: Path, form: str
) -> None:
    """Read by the standard library, the second `name` would silently win: the entry is
    reported with its path instead, and only the other events are stored."""
    texts = [json.dumps(event(1)), with_repeated_key(2), json.dumps(event(3))]
    if form == "ndjson":
        content, line = "\n".join(texts) + "\n", 2
    elif form == "array":
        content, line = "[\n" + ",\n".join(texts) + "\n]\n", 3
    else:  # events one after another, each over lines (as `jq .` prints them)
        content = "".join(json.dumps(json.loads(t), indent=2) + "\n" for t in texts[:1])
        line = content.count("\n") + 1
        content += texts[1].replace(", ", ",\n  ") + "\n" + json.dumps(event(3), indent=2) + "\n"
    path = tmp_path / f"events.{form}"
    path.write_text(content, encoding="utf-8")
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url, "--on-error", "skip"])
    assert result.exit_code == 1
    assert f"{path}:{line}: job.name: repeated key" in result.stderr.splitlines(), result.stderr
    assert stored_numbers(store) == {1, 3}


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('[{"a": 1}\n{"b": 2}]', 2, "expected ',' or ']' after an array element"),
        ("[\n", 2, "the array is not closed with ']'"),
        ("[{}]\nextra", 2, "unexpected text after the array"),
        ('{\n  "eventType": \n', 1, "malformed JSON"),
    ],
)
def test_broken_files_are_reported_where_they_break(
    db_url: str, tmp_path: Path, text: str, line: int, message: str
) -> None:
    path = tmp_path / "broken.json"
    path.write_text(text)
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url, "--on-error", "skip"])
    assert result.exit_code == 1
    assert f"broken.json:{line}: {message}" in result.stderr


def test_a_file_that_is_not_utf8_is_reported(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "latin1.ndjson"
    path.write_bytes(b'{"name": "caf\xe9"}\n')
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url])
    assert result.exit_code == 1
    assert "latin1.ndjson: not UTF-8 text" in result.stderr


def test_gzipped_files_are_read_and_a_truncated_one_reported(
    db_url: str, store: Store, tmp_path: Path
) -> None:
    text = "".join(json.dumps(event(n)) + "\n" for n in range(1, 4)).encode()
    (tmp_path / "a.ndjson.gz").write_bytes(gzip.compress(text))
    (tmp_path / "cut.ndjson.gz").write_bytes(gzip.compress(text)[:-12])
    result = runner.invoke(
        app,
        ["ingest", str(tmp_path / "a.ndjson.gz"), str(tmp_path / "cut.ndjson.gz"), "--db", db_url],
    )
    assert result.exit_code == 1
    assert "cut.ndjson.gz: not a complete gzip file" in result.stderr
    assert stored_numbers(store) == {1, 2, 3}


def test_an_empty_file_stores_nothing_and_succeeds(db_url: str, tmp_path: Path) -> None:
    path = tmp_path / "empty.ndjson"
    path.write_text("\n\n")
    result = runner.invoke(app, ["ingest", str(path), "--db", db_url])
    assert result.exit_code == 0
    assert result.stdout.startswith("0 events stored from 1 file")


def test_usage_errors_exit_with_2(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["ingest", str(tmp_path / "nope.json"), "--db", "sqlite://"])
    assert missing.exit_code == 2
    assert "no file" in missing.stderr
    path = write_ndjson(tmp_path / "a.ndjson", [event(1)])
    both = runner.invoke(app, ["ingest", str(path), "--db", "sqlite://", "--url", "http://x"])
    assert both.exit_code == 2
    assert "either --url or --db" in both.stderr
    wrong = runner.invoke(app, ["ingest", str(path), "--on-error", "ignore"])
    assert wrong.exit_code == 2
    assert runner.invoke(app, ["ingest"]).exit_code == 2


def test_an_unreachable_server_is_one_line_and_exit_1(tmp_path: Path) -> None:
    path = write_ndjson(tmp_path / "a.ndjson", [event(1)])
    result = runner.invoke(app, ["ingest", str(path), "--url", "http://127.0.0.1:9"])
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [errors[0]]
    assert errors[0].startswith("error: cannot reach http://127.0.0.1:9")
    assert "Traceback" not in result.output
    assert result.stdout.startswith("0 events stored from 1 file")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_tokens_and_a_small_server_batch_limit(db_url: str, store: Store, tmp_path: Path) -> None:
    server = LiveServer(
        db_url, tmp_path, env={"UPSTREAM_TOKENS": "write:s3cret", "UPSTREAM_MAX_BATCH_EVENTS": "2"}
    ).start()
    try:
        path = write_ndjson(tmp_path / "a.ndjson", [event(n) for n in range(1, 8)])
        refused = runner.invoke(app, ["ingest", str(path), "--url", server.url])
        assert refused.exit_code == 1
        assert "(HTTP 401)" in refused.stderr
        assert stored_numbers(store) == set()

        # Batches of 5 are too large for this server (413): they are split, nothing is lost.
        result = runner.invoke(
            app,
            ["ingest", str(path), "--url", server.url, "--batch-size", "5"],
            env={"UPSTREAM_TOKEN": "s3cret"},
        )
        assert result.exit_code == 0, result.output
        assert stored_numbers(store) == set(range(1, 8))
    finally:
        server.stop()


class UnhelpfulServer:
    """A sink that, like some OpenLineage servers, refuses a batch without saying which of
    its events was wrong."""

    def __init__(self) -> None:
        self.stored: list[int] = []

    def send(self, documents: Sequence[dict[str, Any]]) -> int | None:
        if any(d.get("bad") for d in documents):
            raise BatchRejected("invalid event", [EventProblem(None, "invalid event")])
        self.stored += [d["n"] for d in documents]
        return None


@pytest.mark.parametrize(("stop", "stored"), [(False, [1, 3, 5, 6]), (True, [1])])
def test_a_refusal_naming_no_event_is_resolved_one_event_at_a_time(
    stop: bool, stored: list[int]
) -> None:
    sink = UnhelpfulServer()
    reported: list[str] = []
    ingestion = Ingestion(sink, batch_size=10, stop_on_error=stop, report=reported.append)
    documents = [{"n": n, "bad": n in (2, 4)} for n in range(1, 7)]
    try:
        for line, document in enumerate(documents, start=1):
            ingestion.add(Located("f.ndjson", line, document))
        ingestion.flush()
    except Stop:
        assert stop
    assert sink.stored == stored
    expected = ["f.ndjson:2: invalid event"] + ([] if stop else ["f.ndjson:4: invalid event"])
    assert reported == expected
    assert ingestion.result.duplicates is None
