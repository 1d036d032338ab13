"""Who may see and change what: a token's scopes, and the namespaces they open (design §5).

A scope is `read:<pattern>`, `write:<pattern>` or `admin`. A pattern matches a namespace
exactly, or, ending in `*`, every namespace that starts with what comes before it
(`finance/*`, `postgres://warehouse:5432`, `*` for every one). `write` on a pattern implies
`read` on it, and `admin` implies both on every namespace, as the settings' roles do.
Namespaces are the unit of visibility: a dataset or job is visible exactly when its namespace
is, so no answer needs more than a namespace to decide.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from upstream.model.errors import Forbidden, InvalidInput, Problem, shown

Action = Literal["read", "write"]
ADMIN = "admin"
#: Every namespace: what a token from the settings, or the command line on a database, sees.
ALL_NAMESPACES = "*"
_WILDCARD = "*"


def pattern_problem(pattern: str) -> str | None:
    """Why `pattern` is no namespace pattern, or None: blank, or a `*` anywhere but last."""
    if not pattern.strip():
        return "the namespace pattern is empty"
    if pattern != pattern.strip():
        return "the namespace pattern starts or ends with a space"
    if _WILDCARD in pattern[:-1]:
        return "a namespace pattern may hold `*` only as its last character"
    return None


def matches(pattern: str, namespace: str) -> bool:
    """Whether `pattern` opens `namespace`: exactly, or by the prefix before a trailing `*`."""
    if pattern.endswith(_WILDCARD):
        return namespace.startswith(pattern[:-1])
    return namespace == pattern


@dataclass(frozen=True)
class Visibility:
    """The namespaces a reader (or a writer) may reach, as patterns; `everything` for a
    reader no pattern limits. Walks and lists consult it per node: a node whose namespace
    it does not show is hidden, and nothing says its name."""

    patterns: tuple[str, ...]

    @property
    def everything(self) -> bool:
        return ALL_NAMESPACES in self.patterns

    def shows(self, namespace: str) -> bool:
        return any(matches(pattern, namespace) for pattern in self.patterns)


#: The visibility of a reader no scope limits.
EVERYTHING = Visibility((ALL_NAMESPACES,))
#: The visibility of a token without that kind of scope.
NOTHING = Visibility(())


@dataclass(frozen=True)
class Access:
    """What one request may do: read and write visibilities and whether it administers
    tokens. `token_id` and `prefix` name the issued token it came from, for the audit log
    (None for a settings token or an open server)."""

    read: Visibility
    write: Visibility
    admin: bool
    token_id: str | None = None
    prefix: str | None = None

    @classmethod
    def full(cls, *, write: bool = True, admin: bool = True) -> Access:
        """A settings token's access by role, or an open server's."""
        return cls(EVERYTHING, EVERYTHING if write else NOTHING, admin)

    @classmethod
    def of_scopes(
        cls, scopes: Sequence[str], *, token_id: str | None = None, prefix: str | None = None
    ) -> Access:
        """The access `scopes` (already checked by `parse_scopes`) grant."""
        if ADMIN in scopes:
            return cls(EVERYTHING, EVERYTHING, True, token_id, prefix)
        reads: list[str] = []
        writes: list[str] = []
        for scope in scopes:
            action, _, pattern = scope.partition(":")
            (writes if action == "write" else reads).append(pattern)
        # Writing a namespace implies reading it.
        return cls(
            Visibility(tuple(dict.fromkeys(reads + writes))),
            Visibility(tuple(writes)),
            False,
            token_id,
            prefix,
        )

    @property
    def may_write_anything(self) -> bool:
        return bool(self.write.patterns)

    def require_write(self, namespace: str, what: str = "write to") -> None:
        """Forbidden, naming the namespace, unless this access may write it."""
        if not self.write.shows(namespace):
            raise Forbidden(
                f"this token may not {what} namespace {namespace!r}: that needs a scope "
                f"write:<pattern> matching it"
            )

    def require_read_everything(self, what: str) -> None:
        """Forbidden unless this access may read every namespace: `what` hands out lineage
        that no reader's scopes filter (a subscription's notifications are sent as made)."""
        if not self.read.everything:
            raise Forbidden(f"{what} needs a token that may read every namespace")

    def require_admin(self) -> None:
        """Forbidden unless this access administers tokens."""
        if not self.admin:
            raise Forbidden("managing tokens needs an admin token")


def parse_scopes(values: Sequence[object], path: str = "scopes") -> tuple[str, ...]:
    """The scopes of a token, checked and without repeats, in the order given; InvalidInput
    locating each malformed one (`scopes[2]`). Patterns naming namespaces nothing has
    written yet are fine: they may come later."""
    problems: list[Problem] = []
    found: list[str] = []
    if not values:
        problems.append(Problem(path, "a token needs at least one scope"))
    for index, value in enumerate(values):
        where = f"{path}[{index}]"
        if not isinstance(value, str):
            problems.append(Problem(where, "a scope is a string"))
            continue
        if value == ADMIN:
            found.append(value)
            continue
        action, sep, pattern = value.partition(":")
        if not sep or action not in ("read", "write"):
            problems.append(
                Problem(
                    where,
                    f"{shown(value)} is no scope: use read:<namespace pattern>, "
                    "write:<namespace pattern> or admin",
                )
            )
            continue
        problem = pattern_problem(pattern)
        if problem is not None:
            problems.append(Problem(where, problem))
            continue
        found.append(value)
    if problems:
        raise InvalidInput(problems)
    return tuple(dict.fromkeys(found))
