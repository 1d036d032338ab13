"""Upstream: a data-lineage server.

The public Python surface is the field-operations recorder; everything else may move. Its names
are imported on first use, so that `upstream --version` and `--help` do not load the recorder
with OpenLineage's client (a second of start-up on their own).
"""

import typing as _typing
from importlib import import_module as _import_module

from upstream._version import __version__

if _typing.TYPE_CHECKING:
    from upstream.client.recorder import LineageRecorder
    from upstream.model.field_operations import Destination, FieldOperation, Source

__all__ = ["Destination", "FieldOperation", "LineageRecorder", "Source", "__version__"]

#: The module each public name comes from.
_HOMES = {
    "Destination": "upstream.model.field_operations",
    "FieldOperation": "upstream.model.field_operations",
    "LineageRecorder": "upstream.client.recorder",
    "Source": "upstream.model.field_operations",
}


def __getattr__(name: str) -> _typing.Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'upstream' has no attribute {name!r}")
    value = getattr(_import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
