"""What refusing repeated keys costs the parse of a posted batch: the CPU per event of
`model.strict_json.parse_json` now, against the same parse at an older revision (before the
check), on the first events of a generated workload posted as batches of 500.

    python -m benchmarks.parse_check --size medium --before <revision>

The older parse is read from git (`api/body.py` there), so the two run side by side in one
process, alternating, and the best of several rounds of each is kept: the machine's load
moves both alike. The figure to compare is the difference per event against the ingest's
CPU per event (`python -m benchmarks ingest` prints it).
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

from upstream.ingest import json_shape
from upstream.model.strict_json import parse_json

OUT = Path(__file__).resolve().parent / "out"
BATCH = 500


def _old_parse(revision: str) -> Callable[[bytes], Any]:
    """`parse_json` of `api/body.py` at `revision`, loaded as a module of its own."""
    source = subprocess.run(
        ["git", "show", f"{revision}:src/upstream/api/body.py"],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    ).stdout
    # It imported the shape checks from where they were then; they only run on bombs here.
    sys.modules.setdefault("upstream.api.json_shape", json_shape)
    module = types.ModuleType("body_before")
    sys.modules["body_before"] = module  # its dataclass looks itself up there
    exec(compile(source, "body_before.py", "exec"), module.__dict__)
    parse: Callable[[bytes], Any] = module.parse_json
    return parse


def _batches(events: Path, count: int) -> list[bytes]:
    with events.open("rb") as lines:
        chosen = [line.rstrip(b"\n") for line in itertools.islice(lines, count)]
    return [
        b"[" + b",".join(chosen[start : start + BATCH]) + b"]"
        for start in range(0, len(chosen), BATCH)
    ]


def _cpu_ms_per_event(parse: Callable[[bytes], Any], batches: list[bytes], events: int) -> float:
    started = time.process_time()
    for batch in batches:
        parse(batch)
    return 1000 * (time.process_time() - started) / events


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="medium")
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--before", required=True, help="a revision without the check")
    args = parser.parse_args(argv)
    path = OUT / args.size / "events.ndjson"
    if not path.exists():
        sys.exit(f"no {path}: run `python -m benchmarks generate --size {args.size}` first")
    batches = _batches(path, args.events)
    events = sum(batch.count(b'"eventType"') for batch in batches)
    before = _old_parse(args.before)
    best = {"before": float("inf"), "now": float("inf")}
    for _ in range(args.rounds):
        best["before"] = min(best["before"], _cpu_ms_per_event(before, batches, events))
        best["now"] = min(best["now"], _cpu_ms_per_event(parse_json, batches, events))
    added = best["now"] - best["before"]
    print(
        f"{events:,} events of {args.size} in batches of {BATCH}, best of {args.rounds}: "
        f"parse {best['before']:.3f} ms/event before, {best['now']:.3f} now "
        f"(+{added:.3f} ms, {100 * added / best['before']:.0f} % of the parse)"
    )


if __name__ == "__main__":
    main()
