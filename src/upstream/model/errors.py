"""The errors services raise, one class per way a request can fail, and the located problems
of input that is refused.

Services raise these and nothing else for a caller to answer; `api.errors` maps each class to an
HTTP status once and `commands.failures` to an exit status once (a test fails when a class has
no mapping in either). Each adapter decides how a failure looks, the services only what failed.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Self

from pydantic import ValidationError


class ServiceError(Exception):
    """A failure a service reports to whoever called it; `message` is one line for the user."""

    @property
    def message(self) -> str:
        return str(self)


class NotFound(ServiceError, LookupError):
    """The namespace, dataset, job, run, field, tag or node asked for is not stored (or was
    deleted); the message says which."""


@dataclass(frozen=True)
class Problem:
    """One reason to reject input: where (`job.facets.lineage.entries[1]`) and why."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class InvalidInput(ServiceError, ValueError):
    """A posted document that must be rejected whole; nothing of it may be stored. Each
    problem is located by its path into the document."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(str(p) for p in self.problems))

    @classmethod
    def at(cls, path: str, message: str) -> Self:
        return cls([Problem(path, message)])

    def within(self, prefix: str) -> Self:
        """The same problems, located inside `prefix` (e.g. the batch index `[3]`)."""
        return type(self)([Problem(join_path(prefix, p.path), p.message) for p in self.problems])


class MalformedDocument(InvalidInput):
    """Bytes that are no JSON document the server reads: broken gzip, not UTF-8, malformed JSON,
    a repeated key, nesting too deep, text no database can store. Refused before anything in
    them is read as an event; a problem inside the document is located by its path."""


class DocumentTooLarge(InvalidInput):
    """A document over one of the server's limits (its bytes, before or after inflation; the
    events of a batch; the values of one event). Refused before it is parsed where its bytes
    already say so; sent again in smaller pieces, it may be accepted."""


class InvalidParameter(InvalidInput):
    """Request parameters (a query string, a command's options) that are refused; each
    problem is located by the parameter's name. Distinct from a refused document because
    the API answers it 400, a mistyped request, where a document is 422."""


class Conflict(InvalidInput):
    """Input that contradicts what is already stored (a run reported again for a different
    job). It is refused like any invalid input, located in the document."""


class Forbidden(ServiceError, PermissionError):
    """The token may not do this: write a namespace its scopes do not open, or manage
    tokens without `admin`. The message names the namespace (which the token could name
    itself) and what scope is missing; nothing was stored."""


class StoreUnavailable(ServiceError):
    """The database cannot do the work now (unreachable, restarting, overloaded); retrying
    later may succeed, and re-sending events is safe."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ReplicasBehind(StoreUnavailable):
    """Every read replica lags too far behind the primary, and reads must not go to the
    primary (`replica_lag_fallback = "unavailable"`); retrying later may succeed."""


class BrokerUnavailable(StoreUnavailable):
    """Kafka did not take or acknowledge a publishing front's events; re-sending them later
    is safe."""


class NotCaughtUp(ServiceError):
    """A read asked for a change-log position (`after`) that this process's view does not
    include yet, and did not catch up within the wait allowed; asking again shortly (or
    another process) may succeed."""

    def __init__(
        self, after: int | str, included: int | str, *, by: str = "this server's view"
    ) -> None:
        super().__init__(f"{by} includes position {included}, not yet {after}; retry later")
        self.after = after
        self.included = included


class IndexLoading(StoreUnavailable):
    """This process is still loading its lineage index (design §6) and a read waited for it
    as long as it may; retrying shortly succeeds."""


def join_path(prefix: str, path: str) -> str:
    """Join two path pieces: `job` + `facets` -> `job.facets`, `entries` + `[1]` -> `entries[1]`."""
    if not prefix:
        return path
    if not path:
        return prefix
    return prefix + path if path.startswith("[") else f"{prefix}.{path}"


def path_of(loc: Iterable[int | str]) -> str:
    """Render a pydantic location tuple as `a.b[2].c`."""
    path = ""
    for part in loc:
        path = join_path(path, f"[{part}]" if isinstance(part, int) else str(part))
    return path


_UNION_TAGS = frozenset({"DATASET", "JOB"})
#: The last step of a pydantic location whose dict key, not value, was refused.
_DICT_KEY = "[key]"


def from_validation_error(exc: ValidationError, prefix: str = "") -> InvalidInput:
    """Turn pydantic's errors into located problems, skipping union-branch noise."""
    problems: list[Problem] = []
    seen: set[tuple[str, str]] = set()
    for err in exc.errors(include_url=False):
        # Discriminated unions add their tag (DATASET, JOB) to the location; it is no path.
        loc = [p for p in err["loc"] if not (isinstance(p, str) and p in _UNION_TAGS)]
        message = str(err["msg"]).removeprefix("Value error, ")
        if len(loc) >= 2 and loc[-1] == _DICT_KEY:
            # A refused key (a blank field name): the problem is the mapping's, naming the key.
            message = f"the key {shown(str(loc[-2]))} {message}"
            loc = loc[:-2]
        key = (path_of(loc), message)
        if key not in seen:
            seen.add(key)
            problems.append(Problem(join_path(prefix, key[0]), message))
    return InvalidInput(problems)


def json_syntax_reason(exc: json.JSONDecodeError) -> str:
    """Why JSON text is malformed, as a whole phrase: the json module's messages for some errors
    end mid-sentence ("Invalid control character at", "Unterminated string starting at"),
    expecting the position after them. Callers give the position first."""
    return exc.msg.removesuffix(" at").removesuffix(" starting")


def shown(value: str, limit: int = 40) -> str:
    """`value` quoted for a message, cut to `limit` characters: an answer never echoes a
    10,000-character parameter back."""
    return repr(value if len(value) <= limit else f"{value[:limit]}…")
