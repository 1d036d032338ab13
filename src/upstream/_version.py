"""The package version, in one place (the distribution reads it from pyproject too)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("upstream-lineage")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0"
