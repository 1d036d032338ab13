"""Recorded answers: what the server answers to a few hundred query variants on a workload,
kept as canonical JSON with a manifest of their SHA-256, so that a rewrite of the store or the
queries can show that every answer stayed the same, byte for byte.

The variants cover every dataset-lineage direction, levels 1/5/10/20, rollup and collapse for
three seed datasets (the deepest mart, the landing dataset that feeds most, a middle-layer
dataset), a temporary dataset, a narrower window, lineage diffs of the three seeds (two
windows, and two times), the Marquez graph for dataset and job nodes at
several depths, Marquez column lineage, field paths, field summaries and field lists. Windows
are absolute (the workload's days), never relative to now. The node and relation caps are
raised so that no answer is cut: a cut answer depends on where the cut falls, which a rewrite
may rightly move. Times that are the moment of ingestion (`createdAt`, `updatedAt`) are
replaced by a placeholder before hashing: they differ from one load to the next.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import queue
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from benchmarks.queries import analyze, answer_size
from benchmarks.server import Server

MANIFEST = "manifest.json"
#: Settings the server answers under: large enough that nothing is cut on the medium size.
SETTINGS = {
    "UPSTREAM_MAX_LINEAGE_NODES": "10000000",
    "UPSTREAM_MAX_LINEAGE_RELATIONS": "100000000",
    "UPSTREAM_MAX_LEVELS": "100",
}
#: Keys whose values are the moment a row was written, not anything an event said.
INGEST_TIMES = frozenset({"createdAt", "updatedAt"})
PLACEHOLDER = "(time of ingestion)"
DIRECTIONS = ("both", "upstream", "downstream")
LEVELS = (1, 5, 10, 20)
ROLLUPS = ("", "workflow")
COLLAPSES: tuple[tuple[str, ...], ...] = ((), ("run",), ("access", "run", "component"))


@dataclass(frozen=True)
class Variant:
    """One request: a unique name (its file's stem), a path and its query parameters."""

    name: str
    path: str
    params: tuple[tuple[str, str], ...]

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "params": [list(p) for p in self.params]}


def _seg(text: str) -> str:
    return quote(text, safe="")


def _dataset_path(ns: str, name: str) -> str:
    return f"/v3/namespaces/{_seg(ns)}/datasets/{_seg(name)}"


def variants(summary: dict[str, Any]) -> list[Variant]:
    """Every variant asked of the workload described by `summary` (generator.load_summary)."""
    targets = summary["targets"]
    start, end = summary["window"]
    window = (("start", start), ("end", end))
    found: list[Variant] = []
    seeds = {"mart": targets["upstream"], "landing": targets["downstream"]}
    seeds["middle"] = targets["both"]
    for seed, (ns, name) in seeds.items():
        path = _dataset_path(ns, name) + "/lineage"
        for direction in DIRECTIONS:
            for levels in LEVELS:
                for rollup in ROLLUPS:
                    for collapse in COLLAPSES:
                        params = [*window, ("levels", str(levels)), ("direction", direction)]
                        params += [("collapse", c) for c in collapse]
                        if rollup:
                            params.append(("rollup", rollup))
                        label = f"lineage_{seed}_{direction}_l{levels}"
                        label += f"_rollup-{rollup}" if rollup else ""
                        label += f"_collapse-{'-'.join(collapse)}" if collapse else ""
                        found.append(Variant(label, path, tuple(params)))
    ns, name = targets["temporary"]
    for direction in DIRECTIONS:
        for levels in (1, 5):
            for rollup in ROLLUPS:
                params = [*window, ("levels", str(levels)), ("direction", direction)]
                params += [("rollup", rollup)] if rollup else []
                label = f"lineage_temporary_{direction}_l{levels}" + (
                    f"_rollup-{rollup}" if rollup else ""
                )
                found.append(Variant(label, _dataset_path(ns, name) + "/lineage", tuple(params)))
    narrow = _narrow_window(start)
    for seed, direction in (("mart", "upstream"), ("landing", "downstream"), ("middle", "both")):
        ns, name = seeds[seed]
        for collapse in ((), ("run",)):
            params = [*narrow, ("levels", "10"), ("direction", direction)]
            params += [("collapse", c) for c in collapse]
            label = f"lineage_{seed}_{direction}_l10_days-3-5" + (
                "_collapse-run" if collapse else ""
            )
            found.append(Variant(label, _dataset_path(ns, name) + "/lineage", tuple(params)))
    found += _diffs(seeds, start, end)
    found += _marquez(targets)
    found += _fields(targets, window)
    return found


def _diffs(seeds: dict[str, Any], start: str, end: str) -> list[Variant]:
    """Lineage diffs of each seed: the workload's first half against its second (`from`,
    `to`), and the lineage as of its end against as of its middle (`asOf`, `against`)."""
    first, last = (datetime.fromisoformat(at.replace("Z", "+00:00")) for at in (start, end))
    middle = (first + (last - first) / 2).isoformat().replace("+00:00", "Z")
    halves = (("from", f"{start}..{middle}"), ("to", f"{middle}..{end}"))
    times = (("asOf", end), ("against", middle), ("start", start), ("end", end))
    found: list[Variant] = []
    for seed, (ns, name) in seeds.items():
        path = _dataset_path(ns, name) + "/lineage/diff"
        for direction in DIRECTIONS:
            # (`both` at levels=10 answers with every relation of the seed's region twice.)
            for levels in (1, 5) if direction == "both" else (1, 5, 10):
                for form, sides in (("halves", halves), ("asof", times)):
                    params = (*sides, ("levels", str(levels)), ("direction", direction))
                    label = f"diff_{seed}_{direction}_l{levels}_{form}"
                    found.append(Variant(label, path, params))
    return found


def _narrow_window(start: str) -> tuple[tuple[str, str], ...]:
    """Days 3 to 5 of the workload: runs inside, runs outside."""
    first = datetime.fromisoformat(start.replace("Z", "+00:00"))
    return tuple(
        (key, (first + timedelta(days=day)).isoformat().replace("+00:00", "Z"))
        for key, day in (("start", 3), ("end", 5))
    )


def _marquez(targets: dict[str, Any]) -> list[Variant]:
    nodes = {
        "mart": f"dataset:{targets['upstream'][0]}:{targets['upstream'][1]}",
        "landing": f"dataset:{targets['downstream'][0]}:{targets['downstream'][1]}",
        "middle": f"dataset:{targets['both'][0]}:{targets['both'][1]}",
        "martjob": f"job:{targets['upstream_job'][0]}:{targets['upstream_job'][1]}",
    }
    found = [
        Variant(f"marquez_lineage_{label}_d{depth}", "/api/v1/lineage",
                (("nodeId", node), ("depth", str(depth))))
        for label, node in nodes.items()
        for depth in (1, 5, 10, 20)
    ]  # fmt: skip
    ns, name, field = targets["field"]
    f_ns, f_name, f_field = targets["facet_field"]
    columns = {
        "mart": nodes["mart"],
        "martfield": f"datasetField:{ns}:{name}:{field}",
        "facetfield": f"datasetField:{f_ns}:{f_name}:{f_field}",
        "martjob": nodes["martjob"],
    }
    for label, node in columns.items():
        for depth in (1, 10):
            for downstream in ("false", "true"):
                params = (("nodeId", node), ("depth", str(depth)), ("withDownstream", downstream))
                suffix = "_downstream" if downstream == "true" else ""
                found.append(
                    Variant(f"marquez_columns_{label}_d{depth}{suffix}", "/api/v1/column-lineage",
                            params)
                )  # fmt: skip
    return found


def _fields(targets: dict[str, Any], window: tuple[tuple[str, str], ...]) -> list[Variant]:
    landing_ns, landing_name = targets["downstream"]
    fields = {
        "mart": targets["field"],
        "facet": targets["facet_field"],
        "plain": targets["plain_field"],
        "landing": [landing_ns, landing_name, "id"],
    }
    found: list[Variant] = []
    for label, (ns, name, field) in fields.items():
        base = _dataset_path(ns, name)
        found.append(
            Variant(f"field_paths_{label}", f"{base}/fields/{_seg(field)}/lineage", window)
        )
        for direction in ("incoming", "outgoing", "both"):
            for levels in (1, 3):
                found.append(
                    Variant(
                        f"field_summary_{label}_{direction}_l{levels}",
                        f"{base}/lineage/fields/{_seg(field)}",
                        (*window, ("direction", direction), ("levels", str(levels))),
                    )
                )
        found.append(
            Variant(
                f"field_operations_{label}",
                f"{base}/lineage/fields/{_seg(field)}/operations",
                (*window, ("direction", "both")),
            )
        )
        found.append(Variant(f"field_list_{label}", f"{base}/lineage/fields", window))
        found.append(
            Variant(
                f"field_list_{label}_current",
                f"{base}/lineage/fields",
                (*window, ("includeCurrent", "true")),
            )
        )
        found.append(
            Variant(
                f"field_list_{label}_prefix", f"{base}/lineage/fields", (*window, ("prefix", "c"))
            )
        )
    return found


# -- recording ------------------------------------------------------------------------------


@dataclass
class Answer:
    """One variant's answer, canonical: status and body, ingestion times replaced."""

    variant: Variant
    status: int
    body: Any
    milliseconds: float

    @property
    def canonical(self) -> bytes:
        return canonical({"status": self.status, "body": self.body})

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.canonical).hexdigest()


def canonical(document: Any) -> bytes:
    """Sorted keys, no spaces, UTF-8: the same document always gives the same bytes."""
    return json.dumps(
        _without_ingest_times(document), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")


def _without_ingest_times(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: PLACEHOLDER if k in INGEST_TIMES and v is not None else _without_ingest_times(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_without_ingest_times(v) for v in value]
    return value


def ask_all(
    url: str, work_dir: Path, asked: list[Variant], processes: int = 1, done: Path | None = None
) -> Iterator[Answer]:
    """Each variant's answer, in order, from `processes` single-worker servers on the database
    at `url`, as many variants at a time. A variant whose answer is already in the folder
    `done` (a recording that was cut short) is read from there instead of asked again."""
    analyze(url)
    with (
        Server(url, work_dir, 1, env=SETTINGS, processes=processes) as server,
        ThreadPoolExecutor(processes) as pool,
    ):
        clients: queue.Queue[httpx.Client] = queue.Queue()
        for port in server.ports:
            clients.put(httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=1800))

        def ask(variant: Variant) -> Answer:
            if done is not None and (recorded := _recorded(done, variant)) is not None:
                return recorded
            client = clients.get()
            try:
                started = time.perf_counter()
                response = client.get(variant.path, params=list(variant.params))
                elapsed = (time.perf_counter() - started) * 1000
            finally:
                clients.put(client)
            try:
                body = response.json()
            except ValueError:
                body = response.text
            return Answer(variant, response.status_code, body, elapsed)

        try:
            yield from pool.map(ask, asked)
        finally:
            while not clients.empty():
                clients.get().close()


def _recorded(folder: Path, variant: Variant) -> Answer | None:
    try:
        document = load_answer(folder, variant.name)
    except (OSError, EOFError, ValueError):
        return None
    return Answer(variant, document["status"], document["body"], float("nan"))


def save(answers: Iterator[Answer], folder: Path, workload: dict[str, Any]) -> dict[str, Any]:
    """Write each answer as <name>.json.gz (gzip without a timestamp, so the file too is the
    same for the same answer) and the manifest of their hashes; return the manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    recorded: dict[str, Any] = {}
    for answer in answers:
        data = answer.canonical
        path = folder / f"{answer.variant.name}.json.gz"
        partial = path.with_suffix(".partial")
        partial.write_bytes(gzip.compress(data, mtime=0))
        partial.replace(path)  # whole or absent, should the recording be cut short
        datasets, relations = answer_size(answer.body)
        recorded[answer.variant.name] = {
            **answer.variant.as_dict(),
            "status": answer.status,
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
            "datasets": datasets,
            "relations": relations,
            "truncated": isinstance(answer.body, dict) and bool(answer.body.get("truncated")),
            "ms": None if math.isnan(answer.milliseconds) else round(answer.milliseconds, 1),
        }
    manifest = {"workload": workload, "settings": SETTINGS, "answers": recorded}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def load_manifest(folder: Path) -> dict[str, Any]:
    manifest: dict[str, Any] = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    return manifest


def recorded_variants(manifest: dict[str, Any]) -> list[Variant]:
    """The variants a manifest recorded, to be asked again exactly as they were."""
    return [
        Variant(name, entry["path"], tuple((k, v) for k, v in entry["params"]))
        for name, entry in sorted(manifest["answers"].items())
    ]


def load_answer(folder: Path, name: str) -> Any:
    return json.loads(gzip.decompress((folder / f"{name}.json.gz").read_bytes()))


# -- comparing ------------------------------------------------------------------------------


@dataclass
class Comparison:
    """How two recordings differ: the answers in both with other hashes, and those in one."""

    same: list[str]
    different: dict[str, list[str]]
    only_before: list[str]
    only_after: list[str]

    @property
    def identical(self) -> bool:
        return not (self.different or self.only_before or self.only_after)


def compare(before: Path, after: Path, details: int = 5) -> Comparison:
    """Answer by answer, by hash; for each differing answer its first `details` differences."""
    old = load_manifest(before)["answers"]
    new = load_manifest(after)["answers"]
    result = Comparison([], {}, sorted(set(old) - set(new)), sorted(set(new) - set(old)))
    for name in sorted(set(old) & set(new)):
        if old[name]["sha256"] == new[name]["sha256"]:
            result.same.append(name)
        else:
            result.different[name] = differences(
                load_answer(before, name), load_answer(after, name), details
            )
    return result


def differences(before: Any, after: Any, limit: int = 5) -> list[str]:
    """The first `limit` places where two JSON documents differ, as `path: before -> after`.
    Lists of the same length are compared item by item; of other lengths, by which items one
    has and the other lacks."""
    found: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(found) >= limit:
            return
        if type(a) is not type(b):
            found.append(f"{path}: {_short(a)} -> {_short(b)}")
        elif isinstance(a, dict):
            for key in sorted(set(a) | set(b)):
                if key not in a:
                    found.append(f"{path}.{key}: added {_short(b[key])}")
                elif key not in b:
                    found.append(f"{path}.{key}: removed (was {_short(a[key])})")
                else:
                    walk(a[key], b[key], f"{path}.{key}")
                if len(found) >= limit:
                    return
        elif isinstance(a, list):
            if len(a) == len(b):
                for index, (x, y) in enumerate(zip(a, b, strict=True)):
                    walk(x, y, f"{path}[{index}]")
                return
            texts_a, texts_b = [canonical(x) for x in a], [canonical(y) for y in b]
            kept_a, kept_b = set(texts_a), set(texts_b)
            lost = [t for t in texts_a if t not in kept_b]
            gained = [t for t in texts_b if t not in kept_a]
            found.append(
                f"{path}: {len(a)} items -> {len(b)} ({len(lost)} gone, {len(gained)} new)"
                + (f"; first gone {_short(json.loads(lost[0]))}" if lost else "")
                + (f"; first new {_short(json.loads(gained[0]))}" if gained else "")
            )
        elif a != b:
            found.append(f"{path}: {_short(a)} -> {_short(b)}")

    walk(before, after, "$")
    return found


def _short(value: Any, width: int = 160) -> str:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"


def print_comparison(result: Comparison, before: Path, after: Path, shown: int = 20) -> None:
    """Counts, then the first `shown` differing answers with their first differences."""
    total = len(result.same) + len(result.different)
    print(
        f"{total} answers in both ({before} -> {after}): {len(result.same)} identical, "
        f"{len(result.different)} different; {len(result.only_before)} only before, "
        f"{len(result.only_after)} only after"
    )
    for name in result.only_before[:shown]:
        print(f"  only before: {name}")
    for name in result.only_after[:shown]:
        print(f"  only after: {name}")
    for name, lines in list(result.different.items())[:shown]:
        print(f"  {name}:")
        for line in lines:
            print(f"      {line}")
    if len(result.different) > shown:
        print(f"  … and {len(result.different) - shown} more different answers")
