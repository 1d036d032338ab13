"""The package version, in one place: the distribution reads it from here (pyproject's
`dynamic` version), so `upstream --version` needs no package metadata lookup at start-up."""

__version__ = "0.1.0"
