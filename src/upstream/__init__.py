"""Upstream: a data-lineage server.

The public Python surface is the field-operations recorder; everything else may move.
"""

from upstream._version import __version__
from upstream.client.recorder import LineageRecorder
from upstream.model.field_operations import Destination, FieldOperation, Source

__all__ = ["Destination", "FieldOperation", "LineageRecorder", "Source", "__version__"]
