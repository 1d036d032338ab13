"""OpenLineage events (spec 2-0-x): RunEvent, JobEvent and DatasetEvent.

Strict where lineage would be corrupted (identities, run ids, event types), lenient on the quirks
real producers send (design §3.1): a missing `schemaURL`, an `eventTime` without a timezone,
stray top-level keys, a JobEvent carrying `eventType`, `null` where a list is expected.
Facets are kept as sent; the ones we interpret are parsed in `upstream.model.facets`.
"""

from __future__ import annotations

import re
import uuid
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
)

from upstream.model.errors import InvalidInput, from_validation_error


def _non_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _strict_str(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError(f"must be a string, not {type(value).__name__}")
    return value


def parse_uuid(value: Any) -> uuid.UUID:
    """A run id: a string holding a UUID."""
    if isinstance(value, uuid.UUID):
        return value
    if not isinstance(value, str):
        raise ValueError(f"must be a UUID string, not {type(value).__name__}")
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ValueError(f"{value[:80]!r} is not a UUID") from None


_FRACTION = re.compile(r"(\.\d{6})\d+")


def parse_time(value: Any) -> datetime:
    """An ISO-8601 timestamp; without an offset it is UTC; sub-microseconds are dropped."""
    if isinstance(value, datetime):
        parsed = value
    elif isinstance(value, str):
        text = _FRACTION.sub(r"\1", value.strip())
        try:
            parsed = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{value[:80]!r} is not an ISO-8601 date-time") from None
    else:
        raise ValueError(f"must be an ISO-8601 string, not {type(value).__name__}")
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    try:
        return parsed.astimezone(UTC)
    except OverflowError:  # 9999-12-31T23:00-05:00 is past the last representable instant
        raise ValueError(f"{value!s:.80} is out of the supported range of years") from None


def _none_to_empty_dict(value: Any) -> Any:
    return {} if value is None else value


def _none_to_empty_list(value: Any) -> Any:
    return [] if value is None else value


Name = Annotated[str, BeforeValidator(_strict_str), AfterValidator(_non_blank)]
RunId = Annotated[uuid.UUID, BeforeValidator(parse_uuid)]
EventTime = Annotated[datetime, BeforeValidator(parse_time)]
Facets = Annotated[dict[str, Any], BeforeValidator(_none_to_empty_dict)]
EventType = Literal["START", "RUNNING", "COMPLETE", "ABORT", "FAIL", "OTHER"]


class _Lenient(BaseModel):
    """Unknown keys are kept (`extra="allow"`), never rejected."""

    model_config = ConfigDict(extra="allow", frozen=True)


class RunInfo(_Lenient):
    runId: RunId
    facets: Facets = Field(default_factory=dict)


class JobInfo(_Lenient):
    namespace: Name
    name: Name
    facets: Facets = Field(default_factory=dict)


class DatasetInfo(_Lenient):
    namespace: Name
    name: Name
    facets: Facets = Field(default_factory=dict)


class InputDataset(DatasetInfo):
    inputFacets: Facets = Field(default_factory=dict)


class OutputDataset(DatasetInfo):
    outputFacets: Facets = Field(default_factory=dict)


Inputs = Annotated[list[InputDataset], BeforeValidator(_none_to_empty_list)]
Outputs = Annotated[list[OutputDataset], BeforeValidator(_none_to_empty_list)]


class _EventBase(_Lenient):
    eventTime: EventTime
    producer: Annotated[str, BeforeValidator(_strict_str)]
    schemaURL: str | None = None


class RunEvent(_EventBase):
    eventType: EventType | None = None
    run: RunInfo
    job: JobInfo
    inputs: Inputs = Field(default_factory=list)
    outputs: Outputs = Field(default_factory=list)


class JobEvent(_EventBase):
    # A JobEvent needs no eventType; producers that send one are not rejected for it.
    eventType: EventType | None = None
    job: JobInfo
    inputs: Inputs = Field(default_factory=list)
    outputs: Outputs = Field(default_factory=list)


class DatasetEvent(_EventBase):
    dataset: DatasetInfo


OpenLineageEvent = RunEvent | JobEvent | DatasetEvent
EVENT_KINDS: dict[str, type[RunEvent] | type[JobEvent] | type[DatasetEvent]] = {
    "RunEvent": RunEvent,
    "JobEvent": JobEvent,
    "DatasetEvent": DatasetEvent,
}


def event_kind(document: dict[str, Any]) -> str:
    """RunEvent, JobEvent or DatasetEvent: from the schemaURL suffix, else from the shape."""
    schema_url = document.get("schemaURL")
    if isinstance(schema_url, str) and "#" in schema_url:
        suffix = schema_url.rsplit("/", 1)[-1]
        if suffix in EVENT_KINDS:
            return suffix
    if "run" in document:
        return "RunEvent"
    if "job" in document:
        return "JobEvent"
    if "dataset" in document:
        return "DatasetEvent"
    return "RunEvent"  # validation then names what a RunEvent lacks


def parse_event(document: Any) -> OpenLineageEvent:
    """Validate one event document; raise InvalidInput naming every offending path."""
    if not isinstance(document, dict):
        raise InvalidInput.at("", f"an event must be a JSON object, not {_json_type(document)}")
    model = EVENT_KINDS[event_kind(document)]
    try:
        return model.model_validate(document)
    except ValidationError as exc:
        raise from_validation_error(exc) from None


def _json_type(value: Any) -> str:
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")
