"""Python clients of Upstream: the field-operations recorder for programs."""

from upstream.client.recorder import LineageRecorder, RecordedRun

__all__ = ["LineageRecorder", "RecordedRun"]
