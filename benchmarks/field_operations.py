"""`python -m benchmarks.field_operations`: the wide field-operations case of issue 4.

100 fields read from one source, then 5 rounds of one all-to-all transform followed by one
one-to-one transform per field (506 operations). A walk per path would visit 100^4 paths per
field; the memoised forward pass visits each operation once. Measures the pure derivation
(resolve, every field's trimmed path and source fields), the ingestion of the recorder's event
(SQLite, 10,000 field edges) and the path and summary queries.
"""

from __future__ import annotations

import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from openlineage.client.serde import Serde

from upstream import Destination, FieldOperation, Source
from upstream.api.services import read
from upstream.ingest.operations_event import Recording, RunIdentity, run_event
from upstream.ingest.service import ingest_documents
from upstream.model.field_operations import resolve
from upstream.model.window import Window
from upstream.query.field_lineage import FieldQuery, field_paths
from upstream.query.field_summary import field_summary
from upstream.store.engine import Store
from upstream.store.migrate import upgrade

FIELDS, ROUNDS = 100, 5


def wide(fields: int = FIELDS, rounds: int = ROUNDS) -> list[FieldOperation]:
    names = [f"f{i}" for i in range(fields)]
    ops = [FieldOperation("read", inputs=[Source("wide", "src")], outputs=names)]
    for r in range(1, rounds + 1):
        ops.append(FieldOperation(f"all{r}", inputs=names, outputs=names))
        ops.extend(
            FieldOperation(f"t{r}_{i}", inputs=[n], outputs=[n]) for i, n in enumerate(names)
        )
    return ops


def timed(label: str, work: Callable[[], object], repeat: int = 5) -> None:
    samples = []
    for _ in range(repeat):
        began = time.perf_counter()
        work()
        samples.append(time.perf_counter() - began)
    print(f"{label:<58} median {statistics.median(samples) * 1000:8.1f} ms  (n={repeat})")


def derive() -> None:
    operations = resolve(wide())
    operations.field_lineage()
    for name in operations.alive:
        operations.trim_to_field(name)


def main() -> None:
    print(f"{FIELDS} fields x {ROUNDS} rounds: {1 + ROUNDS * (FIELDS + 1)} operations")
    timed("resolve + source fields + trimmed path of all 100 fields", derive)
    operations = resolve(wide())
    event = Serde.to_dict(
        run_event(
            RunIdentity("wide", "job", uuid.uuid4()),
            "COMPLETE",
            datetime.now(UTC),
            [Recording(Destination("wide", "dest"), operations)],
        )
    )
    with tempfile.TemporaryDirectory() as folder:
        store = Store(f"sqlite:///{Path(folder) / 'bench.db'}")
        upgrade(store)
        began = time.perf_counter()
        ingest_documents(store, [event], batch=False)
        print(
            f"{'ingest the recorder event (SQLite, 10,000 field edges)':<58} "
            f"{(time.perf_counter() - began) * 1000:8.1f} ms  (n=1)"
        )
        query = FieldQuery(
            Window(datetime(2000, 1, 1, tzinfo=UTC), datetime(2100, 1, 1, tzinfo=UTC))
        )
        timed(
            "GET …/fields/f7/lineage (407-operation path)",
            lambda: read(store, field_paths, "wide", "dest", "f7", query),
        )
        timed(
            "GET …/lineage/fields/f7 (incoming + outgoing)",
            lambda: read(store, field_summary, "wide", "dest", "f7", query),
        )
        store.dispose()


if __name__ == "__main__":
    main()
