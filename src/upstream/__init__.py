"""Upstream: a data-lineage server.

The public Python surface is the field-operations recorder; everything else may move.
"""

from upstream._version import __version__

__all__ = ["__version__"]
