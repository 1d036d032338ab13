"""The seed's field-operations JSON document, for producers in other languages (design §3.5).

```json
{"destination": {"namespace", "name", "description"?, "fields"?, "temporary"?},
 "source": {"namespace", "name", "description"?}   (or "sources": [...]),
 "operations": [{"name", "description", "inputs": ["source", "body", ...], "outputs": [...]}],
 "job": {"namespace"?, "name"}, "run": {"runId"}, "eventTime"?, "eventType"?, "component"?,
 "parent"?: {"namespace", "name", "runId"}}
```
Namespaces left out are the one in the URL. An input naming the source (`"source"`, or a
source's name) reads it; any other string is a field. The document becomes the very RunEvent
the recorder would emit and takes the one ingestion path.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from openlineage.client.serde import Serde

from upstream.ingest.operations_event import ParentRun, Recording, RunIdentity, run_event
from upstream.model.errors import InvalidInput, Problem
from upstream.model.events import parse_time, parse_uuid
from upstream.model.field_operations import (
    Destination,
    Source,
    operations_from_json,
    resolve,
)

_STATES = ("START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER")


def operations_document_event(namespace: str, document: Any) -> dict[str, Any]:
    """The OpenLineage RunEvent (as JSON) equivalent to the document."""
    if not isinstance(document, dict):
        raise InvalidInput.at("", "the field-operations document must be a JSON object")
    problems: list[Problem] = []

    def take(path: str, parse: Any) -> Any:
        try:
            return parse()
        except InvalidInput as exc:
            problems.extend(exc.within(path).problems)
        except ValueError as exc:
            problems.append(Problem(path, str(exc)))
        return None

    destination = take("destination", lambda: _destination(document.get("destination"), namespace))
    sources = take("", lambda: _sources(document, namespace)) or []
    job = take("job", lambda: _job(document.get("job"), namespace))
    run = document.get("run")
    run_id = take(
        "run.runId", lambda: parse_uuid(run.get("runId") if isinstance(run, dict) else None)
    )
    time = take("eventTime", lambda: _time(document.get("eventTime")))
    state = take("eventType", lambda: _state(document.get("eventType")))
    parent = take("parent", lambda: _parent(document.get("parent"), namespace))
    component = take("component", lambda: _component(document.get("component")))
    by_name: dict[str, Source] = {s.name: s for s in sources}
    if len(sources) == 1:
        by_name["source"] = sources[0]
    operations = take(
        "", lambda: resolve(operations_from_json(document.get("operations"), sources=by_name))
    )
    if problems:
        raise InvalidInput(problems)
    identity = RunIdentity(job[0], job[1], run_id, parent=parent)
    event = run_event(identity, state, time, [Recording(destination, operations, component)])
    return Serde.to_dict(event)


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{what} must be a non-empty string")
    return value


def _destination(raw: Any, namespace: str) -> Destination:
    if not isinstance(raw, dict):
        raise ValueError("must be an object with namespace and name")
    fields = raw.get("fields")
    if fields is not None and (
        not isinstance(fields, list) or not all(isinstance(f, str) and f.strip() for f in fields)
    ):
        raise InvalidInput.at("fields", "must be an array of non-empty field names")
    description = raw.get("description")
    return Destination(
        _text(raw.get("namespace", namespace), "namespace"),
        _text(raw.get("name"), "name"),
        description if isinstance(description, str) else None,
        fields=fields,
        temporary=raw.get("temporary") is True,
    )


def _source(raw: Any, namespace: str) -> Source:
    if not isinstance(raw, dict):
        raise ValueError("must be an object with namespace and name")
    description = raw.get("description")
    return Source(
        _text(raw.get("namespace", namespace), "namespace"),
        _text(raw.get("name"), "name"),
        description if isinstance(description, str) else None,
    )


def _sources(document: dict[str, Any], namespace: str) -> list[Source]:
    if "sources" in document:
        raw = document["sources"]
        if not isinstance(raw, list):
            raise InvalidInput.at("sources", "must be an array of sources")
        found = []
        for index, item in enumerate(raw):
            try:
                found.append(_source(item, namespace))
            except ValueError as exc:
                raise InvalidInput.at(f"sources[{index}]", str(exc)) from None
        return found
    if "source" in document:
        try:
            return [_source(document["source"], namespace)]
        except ValueError as exc:
            raise InvalidInput.at("source", str(exc)) from None
    return []


def _job(raw: Any, namespace: str) -> tuple[str, str]:
    if isinstance(raw, str):
        return namespace, _text(raw, "job")
    if not isinstance(raw, dict):
        raise ValueError("must be an object with the job's name (and namespace)")
    return _text(raw.get("namespace", namespace), "namespace"), _text(raw.get("name"), "name")


def _time(raw: Any) -> datetime:
    return datetime.now(UTC) if raw is None else parse_time(raw)


def _state(raw: Any) -> str:
    if raw is None:
        return "COMPLETE"
    if raw not in _STATES:
        raise ValueError(f"must be one of {', '.join(_STATES)}")
    return str(raw)


def _parent(raw: Any, namespace: str) -> ParentRun | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise ValueError("must be an object with namespace, name and runId")
    run_id: uuid.UUID = parse_uuid(raw.get("runId"))
    return ParentRun(
        _text(raw.get("namespace", namespace), "namespace"), _text(raw.get("name"), "name"), run_id
    )


def _component(raw: Any) -> str | None:
    return None if raw is None else _text(raw, "component")
