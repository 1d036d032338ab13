"""Rich tables: what `upstream lineage`, `field-lineage` and `export` print by default.

Every name goes into a `Text`, never into markup, so a dataset called `[bold]x` prints as is;
every cell and heading wraps at word and path boundaries (`upstream.render.wrap`), so a name is
never split mid-word in a narrow terminal.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from upstream.model.facts import ORIGIN_LABELS
from upstream.model.keys import parse_entity_key
from upstream.render.words import counted
from upstream.render.wrap import Wrapped


def dataset_lineage_tables(response: Mapping[str, Any], namespace: str, dataset: str) -> Group:
    """One row per relation (dataset, program, accesses, runs, components), as the API
    returns them."""
    entities = {**response.get("data", {}), **response.get("programs", {})}
    relations = response.get("relations", [])
    table = Table(title=_window_title(f"Lineage of {namespace} / {dataset}", response))
    # Components are named by the recorder only: a column of dashes would take the room the
    # names need in a narrow terminal.
    components = any(relation.get("components") for relation in relations)
    for column in ("Dataset", "Program", "Access", "Runs", "Components")[: 5 if components else 4]:
        table.add_column(column, overflow="fold")
    for relation in relations:
        program_key = relation["program"]
        workflow = program_key.startswith("workflow.")
        program = _entity(program_key, entities, suffix=" (workflow)" if workflow else "")
        cells = [
            _entity(relation["data"], entities, focus=(namespace, dataset)),
            program,
            Text(", ".join(relation.get("accesses", []))),
            _runs(relation.get("runs", [])),
        ]
        if components:
            cells.append(Text(", ".join(relation.get("components", [])) or "-"))
        _add_row(table, *cells)
    datasets, programs = len(response.get("data", {})), len(response.get("programs", {}))
    footer = Text(
        f"{counted(len(relations), 'relation')}, {counted(datasets, 'dataset')}, "
        f"{counted(programs, 'program')}",
        style="dim",
    )
    if response.get("truncated"):
        footer.append(" — truncated: raise the node cap or lower --levels", style="yellow")
    links = response.get("jobLinks", [])
    if not links:
        return Group(table, Wrapped(footer))
    linked = Table(title="Job → job, through temporary datasets")
    for column in ("From", "To", "Through"):
        linked.add_column(column, overflow="fold")
    for link in links:
        through = ", ".join(parse_entity_key(key)[2] for key in link["through"])
        _add_row(
            linked,
            _entity(link["source"], entities),
            _entity(link["target"], entities),
            Text(through),
        )
    return Group(table, Wrapped(footer), linked)


def lineage_diff_tables(response: Mapping[str, Any], namespace: str, dataset: str) -> Group:
    """One row per relation that was added, removed or kept, with its runs on each side,
    then the field edges that changed."""
    entities = {**response.get("data", {}), **response.get("programs", {})}
    sides = _sides_title(response)
    table = Table(title=Text(f"Lineage changes of {namespace} / {dataset}\n{sides}"))
    for column in ("Change", "Dataset", "Program", "Access", "Runs"):
        table.add_column(column, overflow="fold")
    rows: list[tuple[str, str, Mapping[str, Any], str]] = []
    for side, style in (("added", "green"), ("removed", "red")):
        for relation in response.get(side, {}).get("relations", []):
            rows.append((side, style, relation, str(relation["runs"])))
    for relation in response.get("kept", []):
        runs = relation["runs"]
        rows.append(("kept", "", relation, f"{runs['from']} → {runs['to']}"))
    for change, style, relation, runs in rows:
        _add_row(
            table,
            Text(change, style=style),
            _entity(relation["data"], entities, focus=(namespace, dataset)),
            _entity(relation["program"], entities),
            Text(", ".join(relation.get("accesses", []))),
            Text(runs),
        )
    parts: list[RenderableType] = [table]
    fields = Table(title="Field edges")
    for column in ("Change", "From field", "To field"):
        fields.add_column(column, overflow="fold")
    for side, style in (("added", "green"), ("removed", "red")):
        for edge in response.get(side, {}).get("fieldEdges", []):
            _add_row(
                fields, Text(side, style=style), _field(edge["source"]), _field(edge["target"])
            )
    if fields.row_count:
        parts.append(fields)
    added, removed = response.get("added", {}), response.get("removed", {})
    footer = Text(
        f"{counted(len(added.get('relations', [])), 'relation')} added, "
        f"{len(removed.get('relations', []))} removed, {len(response.get('kept', []))} kept; "
        f"{counted(len(added.get('data', [])), 'dataset')} appeared, "
        f"{len(removed.get('data', []))} disappeared",
        style="dim",
    )
    if response.get("truncated"):
        footer.append(" — truncated: raise the node cap or lower --levels", style="yellow")
    parts.append(Wrapped(footer))
    return Group(*parts)


def run_lineage_tables(response: Mapping[str, Any]) -> Group:
    """One row per read: the reading run, the dataset, and the run that wrote the version
    it read; then the runs with their job, state and times."""
    runs = {run["runId"]: run for run in response.get("runs", [])}
    versions = {v["id"]: v for v in response.get("datasetVersions", [])}
    reads = Table(title=Text(f"Lineage of run {response.get('runId', '')}"))
    for column in ("Run", "Read", "Version written by"):
        reads.add_column(column, overflow="fold")
    for edge in response.get("edges", []):
        if edge["type"] != "read":
            continue
        version = versions.get(edge["datasetVersion"], {})
        writer = version.get("writtenBy")
        dataset = version.get("dataset", {})
        read = Text(str(dataset.get("name", "")))
        read.append(f"\n{dataset.get('namespace', '')}", style="dim")
        if version.get("producerVersion"):
            read.append(f"\nversion {version['producerVersion']}", style="dim")
        _add_row(
            reads,
            _run_of_job(runs.get(edge["run"], {"runId": edge["run"]})),
            read,
            _run_of_job(runs.get(writer, {"runId": writer})) if writer else Text("unknown"),
        )
    table = Table(title="Runs")
    for column in ("Run", "Job", "State", "Started (UTC)", "Ended (UTC)", "Level"):
        table.add_column(column, overflow="fold")
    for run in response.get("runs", []):
        job = run.get("job", {})
        job_text = Text(str(job.get("name", "")))
        job_text.append(f"\n{job.get('namespace', '')}", style="dim")
        focus = run["runId"] == response.get("runId")
        _add_row(
            table,
            Wrapped(Text(_short(run["runId"]), style="bold" if focus else ""), whole_words=True),
            job_text,
            Text(str(run.get("state") or "-")),
            Wrapped(_instant(run.get("startedAt")), whole_words=True),
            Wrapped(_instant(run.get("endedAt")), whole_words=True),
            Text(str(run.get("level", 0))),
        )
    footer = Text(
        f"{counted(len(runs), 'run')}, {counted(len(versions), 'dataset version')}", style="dim"
    )
    if response.get("truncated"):
        footer.append(" — truncated: raise the node cap or lower --levels", style="yellow")
    dependencies = response.get("jobDependencies", [])
    if not dependencies:
        return Group(reads, table, Wrapped(footer))
    return Group(reads, table, _dependencies_table(dependencies), Wrapped(footer))


def _dependencies_table(dependencies: Iterable[Mapping[str, Any]]) -> Table:
    """The job dependencies a run is an end of (the `jobDependencies` run facet): control
    flow, which job run goes first and which waits for it."""
    table = Table(title="Job dependencies")
    for column in ("Runs first", "Waits for it", "Kind", "Rules"):
        table.add_column(column, overflow="fold")
    for dependency in dependencies:
        rules = (
            dependency.get(k) for k in ("sequenceTriggerRule", "statusTriggerRule", "triggerRule")
        )
        _add_row(
            table,
            _dependency_end(dependency["upstream"]),
            _dependency_end(dependency["downstream"]),
            Text(str(dependency.get("dependencyType") or "-")),
            Text("\n".join(rule for rule in rules if rule) or "-"),
        )
    return table


def _dependency_end(end: Mapping[str, Any]) -> Wrapped:
    """A job, over the short id of its run when the statement names one."""
    text = Text(str(end.get("name", "")))
    text.append(f"\n{end.get('namespace', '')}", style="dim")
    if end.get("runId"):
        text.append(f"\nrun {_short(end['runId'])}", style="dim")
    return Wrapped(text)


def _field(end: Mapping[str, Any]) -> Text:
    text = Text(f"{end.get('name')}.{end.get('field')}")
    text.append(f"\n{end.get('namespace')}", style="dim")
    return text


def _sides_title(response: Mapping[str, Any]) -> str:
    """`before: … ; after: …`, each side its window, or its time when the diff compares
    times."""

    def described(side: Mapping[str, Any]) -> str:
        if "asOf" in side:
            return f"as of {side['asOf']}"
        return f"{_when(side['start'])} → {_when(side['end'])}"

    return f"before: {described(response['from'])}; after: {described(response['to'])}"


def field_summary_tables(
    response: Mapping[str, Any], namespace: str, dataset: str, field: str
) -> Group:
    """The incoming and outgoing summaries, one row per dataset with its fields."""
    parts: list[RenderableType] = []
    for side, title in (("incoming", "comes from"), ("outgoing", "flows to")):
        if side not in response:
            continue
        parts.append(Wrapped(Text(f"{namespace} / {dataset} . {field} {title}", style="bold")))
        table = Table()
        table.add_column("Namespace", overflow="fold")
        table.add_column("Dataset", overflow="fold")
        table.add_column("Fields", overflow="fold")
        table.add_column("Stated by", overflow="fold")
        for entry in response[side]:
            ref = entry["dataset"]
            origins = sorted({o for names in entry.get("origins", {}).values() for o in names})
            _add_row(
                table,
                Text(ref["namespace"]),
                Text(ref["name"]),
                Text(", ".join(entry["fields"])),
                Text(", ".join(ORIGIN_LABELS.get(o, o) for o in origins)),
            )
        if not response[side]:
            _add_row(table, Text("-", style="dim"), Text("(none)", style="dim"), Text(""), Text(""))
        parts.append(table)
    return Group(*parts)


def field_paths_tables(response: Mapping[str, Any], namespace: str, dataset: str) -> Group:
    """Each way the field was made: its operations in dependency order and the runs."""
    field = response.get("fieldName", "")
    paths = response.get("paths", [])
    parts: list[RenderableType] = []
    for number, path in enumerate(paths, start=1):
        runs = path.get("runs", [])
        heading = f"Path {number} of {len(paths)} to {namespace} / {dataset} . {field}"
        parts.append(Wrapped(Text(heading, style="bold")))
        table = Table(caption=Text(f"{counted(len(runs), 'run')}: {_run_list(runs)}"))
        for column in ("#", "Operation", "Inputs", "Outputs", "Description"):
            table.add_column(column, overflow="fold")
        for step, operation in enumerate(path.get("operations", []), start=1):
            _add_row(
                table,
                Text(str(step)),
                Text(operation.get("name", "")),
                Text(", ".join(_operation_input(i) for i in operation.get("inputs", []))),
                Text(", ".join(operation.get("outputs", []))),
                Text(operation.get("description") or ""),
            )
        parts.append(table)
    if not paths:
        parts.append(Wrapped(Text(f"No operations made {field} in this window.", style="dim")))
    return Group(*parts)


def graph_tables(response: Mapping[str, Any]) -> Group:
    """The whole graph as its dataset-to-dataset flows, with the jobs behind each."""
    entities = {**response.get("data", {}), **response.get("programs", {})}
    table = Table(title="Data flows")
    for column in ("Source", "Job", "Target", "Runs", "How"):
        table.add_column(column, overflow="fold")
    for flow in response.get("flows", []):
        _add_row(
            table,
            _entity(flow["source"], entities),
            _entity(flow["program"], entities) if flow.get("program") else Text("-"),
            _entity(flow["target"], entities),
            Text(str(flow.get("runs", 0))),
            Text("inferred" if flow.get("inferred") else "explicit"),
        )
    footer = Text(
        f"{counted(len(response.get('data', {})), 'dataset')}, "
        f"{counted(len(response.get('programs', {})), 'job')}, "
        f"{counted(len(response.get('flows', [])), 'flow')}",
        style="dim",
    )
    return Group(table, Wrapped(footer))


def impact_table(response: Mapping[str, Any]) -> Group:
    """One row per dataset or field downstream (design §4.6), nearest first."""
    seed = response.get("dataset", {})
    about = f"{seed.get('namespace')} / {seed.get('name')}"
    if response.get("field"):
        about += f" . {response['field']}"
    table = Table(title=_window_title(f"Impact of {about}", response))
    for column in ("Hops", "Dataset", "Field", "Jobs", "Owners", "Latest run"):
        table.add_column(column, overflow="fold")
    for row in response.get("rows", []):
        run = row.get("latestRun")
        jobs = "\n".join(
            f"{j['name']}"
            + (f" ({', '.join(o['name'] for o in j['owners'])})" if j["owners"] else "")
            for j in row.get("jobs", [])
        )
        _add_row(
            table,
            Text("-" if row.get("hops") is None else str(row["hops"])),
            Text(f"{row['name']}\n{row['namespace']}"),
            Text(row.get("field") or ""),
            Text(jobs or "-"),
            Text(", ".join(o["name"] for o in row.get("owners", [])) or "-"),
            Text(f"{run['state'] or '?'} {run['runId'][:8]}" if run else "-"),
        )
    footer = Text(counted(len(response.get("rows", [])), "row"), style="dim")
    if response.get("truncated"):
        footer.append(" — truncated: raise the node cap or lower --levels", style="yellow")
    return Group(table, Wrapped(footer))


def hierarchy_map_table(response: Mapping[str, Any]) -> Group:
    """One row per group of datasets (design §4.7), then the flows between groups."""
    within = " / ".join(response.get("within", [])) or "the whole estate"
    table = Table(title=f"Datasets of {within} by level-{response.get('level')} container")
    for column in ("Group", "Datasets", "Flows within", "Drill down with --within"):
        table.add_column(column, overflow="fold")
    for group in response.get("groups", []):
        _add_row(
            table,
            Text(" / ".join(group["containers"])),
            Text(str(group["datasets"])),
            Text(str(group["flowsWithin"])),
            Text(group["key"] if group["deeper"] else "-"),
        )
    flows = Table(title="Flows between groups")
    for column in ("From", "To", "Flows"):
        flows.add_column(column, overflow="fold")
    for edge in response.get("edges", []):
        _add_row(flows, Text(edge["source"]), Text(edge["target"]), Text(str(edge["flows"])))
    return Group(table, flows)


def _add_row(table: Table, *cells: Text | Wrapped) -> None:
    table.add_row(*(cell if isinstance(cell, Wrapped) else Wrapped(cell) for cell in cells))


def _entity(
    key: str,
    entities: Mapping[str, Any],
    focus: tuple[str, str] | None = None,
    suffix: str = "",
) -> Text:
    """The entity's name (bold when it is the focus) over its namespace; a dataset temporary
    to a workflow run says so."""
    entry = entities.get(key, {})
    entity = entry.get("entityId", {})
    if entry.get("temporary"):
        suffix += " (temporary)"
    namespace, name = str(entity.get("namespace", "")), str(entity.get("name", key))
    text = Text(name, style="bold" if focus == (namespace, name) else "")
    text.append(suffix, style="magenta")
    text.append(f"\n{namespace}", style="dim")
    if entry.get("owners"):
        owned = ", ".join(str(owner["name"]) for owner in entry["owners"])
        text.append(f"\nowners: {owned}", style="cyan")
    return text


def _runs(runs: list[Any]) -> Text:
    return Text(f"{len(runs)}: {_run_list(runs)}" if runs else "declared")


def _run_list(runs: Iterable[Any], shown: int = 3) -> str:
    """The first few runs, their ids shortened to 8 characters as git does; a run given as
    `{"runId", "job"}` also names its job."""
    items = list(runs)
    text = ", ".join(_run(run) for run in items[:shown])
    return text + (f" … (+{len(items) - shown})" if len(items) > shown else "")


def _run(run: Any) -> str:
    if isinstance(run, Mapping):
        job = run.get("job")
        name = f" ({job.get('name')})" if isinstance(job, Mapping) and job.get("name") else ""
        return f"{_short(run.get('runId', ''))}{name}"
    return _short(run)


def _short(run_id: Any) -> str:
    """A run id shortened to 8 characters, as git shortens commits."""
    return str(run_id)[:8]


def _run_of_job(run: Mapping[str, Any]) -> Wrapped:
    """A run's short id over its job's name: the id is never split, the name only between
    its words."""
    text = Text(_short(run.get("runId", "")))
    job = run.get("job")
    if isinstance(job, Mapping) and job.get("name"):
        text.append(f"\n{job['name']}", style="dim")
    return Wrapped(text)


def _instant(value: Any) -> Text:
    """An ISO-8601 time from an answer as `2026-12-03 17:24:42`, in UTC to the second."""
    if not isinstance(value, str):
        return Text("-")
    return Text(datetime.fromisoformat(value).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S"))


def _operation_input(item: Any) -> str:
    if isinstance(item, Mapping):
        if item.get("type") == "source":
            return f"{item.get('namespace')}/{item.get('name')}"
        return str(item.get("name", ""))
    return str(item)


def _window_title(title: str, response: Mapping[str, Any]) -> Text:
    start, end = response.get("start"), response.get("end")
    if isinstance(start, int | float) and isinstance(end, int | float):
        title += f"\n{_when(start)} → {_when(end)}"
    return Text(title)


def _when(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%d %H:%M UTC")
