"""The recorder: programs tell how they made each field of what they wrote (design §3.5).

```python
recorder = LineageRecorder(url="http://127.0.0.1:5000")
with recorder.run("myns", "ETLMapReduce") as run:
    run.record(Destination("myns", "mytableds"), operations)
```

Events are standard OpenLineage RunEvents sent through openlineage-python's transports (HTTP
to Upstream, or file, console, Kafka… — any `Transport`): START when the `with` block is
entered, one event per `record`, and COMPLETE (FAIL when an exception escaped) on leaving it.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from types import TracebackType

from openlineage.client.client import OpenLineageClient
from openlineage.client.transport.http import ApiKeyTokenProvider, HttpConfig, HttpTransport
from openlineage.client.transport.transport import Transport

from upstream.ingest.operations_event import ParentRun, Recording, RunIdentity, run_event
from upstream.model.field_operations import Destination, FieldOperation, resolve


class LineageRecorder:
    """Emits the runs of programs and the field operations they record.

    Give `url` (an Upstream server, or any OpenLineage HTTP endpoint) or any openlineage-python
    `transport`.
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        transport: Transport | None = None,
        api_key: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        if (url is None) == (transport is None):
            raise ValueError("give either url or transport")
        if transport is None:
            assert url is not None
            config = HttpConfig(url=url, timeout=timeout)
            if api_key:
                config.auth = ApiKeyTokenProvider({"api_key": api_key})
            transport = HttpTransport(config)
        self.transport = transport
        self._client = OpenLineageClient(transport=transport)

    @classmethod
    def http(cls, url: str, *, api_key: str | None = None) -> LineageRecorder:
        """A recorder posting to the server at `url`."""
        return cls(url, api_key=api_key)

    def run(
        self,
        namespace: str,
        name: str,
        *,
        workflow: bool = False,
        parent: RecordedRun | None = None,
        run_id: uuid.UUID | None = None,
    ) -> RecordedRun:
        """A run of job (program) `name`; use it as a context manager. `workflow=True` marks
        the job as a workflow; `parent` is the workflow run this run belongs to."""
        if not (namespace.strip() and name.strip()):
            raise ValueError("a run needs a non-empty namespace and job name")
        identity = RunIdentity(
            namespace=namespace,
            name=name,
            run_id=run_id or uuid.uuid4(),
            workflow=workflow,
            parent=ParentRun(parent.namespace, parent.name, parent.run_id) if parent else None,
        )
        return RecordedRun(self, identity)

    def emit(self, identity: RunIdentity, state: str, recordings: Sequence[Recording]) -> None:
        self._client.emit(run_event(identity, state, datetime.now(UTC), recordings))

    def close(self) -> None:
        self._client.close(timeout=-1)


class RecordedRun:
    """One run being recorded. `run_id` is its UUID."""

    def __init__(self, recorder: LineageRecorder, identity: RunIdentity) -> None:
        self._recorder = recorder
        self._identity = identity
        self._recordings: list[Recording] = []

    @property
    def run_id(self) -> uuid.UUID:
        return self._identity.run_id

    @property
    def namespace(self) -> str:
        return self._identity.namespace

    @property
    def name(self) -> str:
        return self._identity.name

    def __enter__(self) -> RecordedRun:
        self._recorder.emit(self._identity, "START", [])
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        state = "COMPLETE" if exc_type is None else "FAIL"
        self._recorder.emit(self._identity, state, self._recordings)

    def record(
        self,
        destination: Destination,
        operations: Sequence[FieldOperation],
        *,
        component: str | None = None,
    ) -> None:
        """Record how `destination`'s fields were made, and emit it.

        Raises ValueError naming the operation, and emits nothing, when the operations are
        invalid: none reads a Source, a field input no earlier operation output, an empty
        name, an operation without inputs.
        """
        if not (destination.namespace.strip() and destination.name.strip()):
            raise ValueError("the destination needs a non-empty namespace and name")
        if component is not None and not component.strip():
            raise ValueError("component must not be empty")
        recording = Recording(destination, resolve(operations), component)
        self._recorder.emit(self._identity, "RUNNING", [recording])
        self._recordings.append(recording)
