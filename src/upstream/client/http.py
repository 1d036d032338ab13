"""A typed HTTP client for Upstream's read API and for posting events.

The CLI talks to a server through it, and programs can too. Every failure surfaces as one
`UpstreamError` with a readable message: the server's own `{"code", "message", "errors"}` body
when it answered, the connection problem when it did not.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import httpx

from upstream._version import __version__
from upstream.client import DEFAULT_URL
from upstream.client.errors import ApiRejected, UpstreamError
from upstream.client.positions import PositionFile
from upstream.client.reader import JsonObject
from upstream.model.errors import InvalidParameter
from upstream.model.read_position import ReadPosition

if TYPE_CHECKING:
    from upstream.query.lineage_query import (
        DiffQuery,
        FieldLineageQuery,
        ImpactQuery,
        LineageQuery,
        MapQuery,
        RunQuery,
    )

#: The header a write answers with its change-log position, and a read sends it back in.
POSITION_HEADER = "X-Upstream-Position"

#: Bodies above this size are gzipped; the server inflates them (design §3.1).
_GZIP_ABOVE_BYTES = 256 * 1024


def segment(value: str) -> str:
    """One percent-encoded path segment: names may hold `/`, `:`, `%`, spaces and unicode."""
    return quote(value, safe="")


class UpstreamClient:
    """Calls one Upstream server; use as a context manager so the connection pool closes.

    Reads see the client's own writes: each write's answer gives the change-log position it
    committed at (a publishing front: its events' Kafka offsets), and every later read sends
    them (`X-Upstream-Position`: the newest store position and the newest offset of each
    partition), so whichever server process answers waits until it includes them.
    `read_your_writes=False` turns that off; `positions` keeps the position between clients
    (the command line's commands, each a process of its own)."""

    def __init__(
        self,
        url: str = DEFAULT_URL,
        *,
        token: str | None = None,
        timeout: float = 60.0,
        transport: httpx.BaseTransport | None = None,
        read_your_writes: bool = True,
        positions: PositionFile | None = None,
    ) -> None:
        headers = {"User-Agent": f"upstream-client/{__version__}"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.url = url.rstrip("/")
        self._read_your_writes = read_your_writes
        self._positions = positions
        #: The position of this client's writes (or the one `positions` kept), as the
        #: header sends it.
        self.position = (
            positions.get(self.url) if positions is not None and read_your_writes else None
        )
        self._http = httpx.Client(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    def __enter__(self) -> UpstreamClient:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # -- writes -----------------------------------------------------------------------------

    def post_events(self, events: Sequence[Mapping[str, Any]]) -> None:
        """Store OpenLineage events as one all-or-nothing batch (`POST /api/v1/lineage`).

        A rejected batch raises ApiRejected whose `errors` paths start with the event's index
        in `events` (`[3].run.runId`).
        """
        self._request("POST", "/api/v1/lineage", body=list(events))

    def post_field_operations(self, namespace: str, document: Mapping[str, Any]) -> None:
        """Store field operations in their JSON document form (design §3.5)."""
        self._request(
            "POST", f"/v3/namespaces/{segment(namespace)}/lineage/field-operations", body=document
        )

    def delete(self, namespace: str, kind: str | None = None, name: str | None = None) -> None:
        """Delete a namespace, or a dataset or job of it (`kind` "datasets" or "jobs")."""
        path = f"/api/v1/namespaces/{segment(namespace)}"
        if kind is not None and name is not None:
            path += f"/{kind}/{segment(name)}"
        self._request("DELETE", path)

    # -- tokens (admin) -----------------------------------------------------------------------

    def create_token(
        self, name: str, scopes: Sequence[str], expires_at: str | None = None
    ) -> JsonObject:
        """Issue a token (`POST /v3/tokens`); the answer holds its secret, shown this once."""
        body = {"name": name, "scopes": list(scopes), "expiresAt": expires_at}
        return self._json("POST", "/v3/tokens", body=body)

    def list_tokens(self) -> JsonObject:
        """The issued tokens, without their secrets (`GET /v3/tokens`)."""
        return self._json("GET", "/v3/tokens")

    def revoke_token(self, token_id: str) -> JsonObject:
        """Revoke a token at once (`DELETE /v3/tokens/{id}`)."""
        return self._json("DELETE", f"/v3/tokens/{segment(token_id)}")

    # -- subscriptions ------------------------------------------------------------------------

    def subscribe(self, subscription: Mapping[str, Any]) -> JsonObject:
        """Create a subscription (`POST /v3/subscriptions`); the answer holds its secret."""
        return self._json("POST", "/v3/subscriptions", body=subscription)

    def unsubscribe(self, subscription: str) -> None:
        self._request("DELETE", f"/v3/subscriptions/{segment(subscription)}")

    def redeliver(self, subscription: str, delivery: str) -> JsonObject:
        path = f"/v3/subscriptions/{segment(subscription)}/deliveries/{segment(delivery)}"
        return self._json("POST", f"{path}/redeliver")

    # -- reads ------------------------------------------------------------------------------

    def subscriptions(self) -> JsonObject:
        return self._json("GET", "/v3/subscriptions")

    def deliveries(self, subscription: str) -> JsonObject:
        return self._json("GET", f"/v3/subscriptions/{segment(subscription)}/deliveries")

    def health(self) -> JsonObject:
        return self._json("GET", "/health")

    def dataset_lineage(self, namespace: str, dataset: str, query: LineageQuery) -> JsonObject:
        """The dataset's lineage as CDAP's relations (design §4.2), as of a time if asked;
        `include=("owners",)` adds each dataset's and program's owners."""
        return self._json("GET", f"{_dataset_path(namespace, dataset)}/lineage", query=query)

    def lineage_diff(self, namespace: str, dataset: str, query: DiffQuery) -> JsonObject:
        """What changed in the dataset's lineage between two windows or times (design §4.5)."""
        path = f"{_dataset_path(namespace, dataset)}/lineage/diff"
        return self._json("GET", path, query=query)

    def run_lineage(self, run_id: str, query: RunQuery) -> JsonObject:
        """The runs that made what a run read, and those that read what it wrote."""
        return self._json("GET", f"/v3/runs/{segment(run_id)}/lineage", query=query)

    def field_lineage(
        self, namespace: str, dataset: str, field: str, query: FieldLineageQuery
    ) -> JsonObject:
        """How a field was made: its paths of operations with their runs (design §4.3)."""
        path = f"{_dataset_path(namespace, dataset)}/fields/{segment(field)}/lineage"
        return self._json("GET", path, query=query)

    def field_lineage_summary(
        self, namespace: str, dataset: str, field: str, query: FieldLineageQuery
    ) -> JsonObject:
        """The datasets and fields a field comes from and flows to (design §4.3)."""
        path = f"{_dataset_path(namespace, dataset)}/lineage/fields/{segment(field)}"
        return self._json("GET", path, query=query)

    def impact(
        self, namespace: str, dataset: str, query: ImpactQuery, *, field: str | None = None
    ) -> JsonObject:
        """Everything downstream of a dataset, or of one of its fields (design §4.6)."""
        path = _dataset_path(namespace, dataset)
        if field is not None:
            path += f"/fields/{segment(field)}"
        return self._json("GET", f"{path}/impact", query=query)

    def lineage_graph(self) -> JsonObject:
        """Every dataset and job with the data flows between them (`upstream export`)."""
        return self._json("GET", "/v3/lineage/graph")

    def hierarchy_map(self, query: MapQuery) -> JsonObject:
        """The datasets grouped by their level-`level` container (design §4.7)."""
        return self._json("GET", "/v3/lineage/graph", query=query)

    # -- plumbing ---------------------------------------------------------------------------

    def _json(
        self, method: str, path: str, *, query: object = None, body: Any = None
    ) -> JsonObject:
        params = None if query is None else url_parameters(query)
        response = self._request(method, path, params=params, body=body)
        return self._document(response, path)

    def _document(self, response: httpx.Response, path: str) -> JsonObject:
        try:
            document = response.json()
        except ValueError:
            raise UpstreamError(f"{self.url}{path} did not answer with JSON") from None
        if not isinstance(document, dict):
            raise UpstreamError(f"{self.url}{path} answered with a JSON {type(document).__name__}")
        return document

    def _request(
        self,
        method: str,
        path: str,
        *,
        params: list[tuple[str, str]] | None = None,
        body: Any = None,
    ) -> httpx.Response:
        headers: dict[str, str] = {}
        content: bytes | None = None
        if body is not None:
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
            headers["Content-Type"] = "application/json"
            if len(content) > _GZIP_ABOVE_BYTES:
                content = gzip.compress(content, compresslevel=1)
                headers["Content-Encoding"] = "gzip"
        sent = self.position if method == "GET" else None
        if sent is not None:
            headers[POSITION_HEADER] = sent
        response = self._send(method, path, params, content, headers)
        if sent is not None and _refused_position(response):
            # A kept position this server never gave: its store started afresh. Forget it.
            self._remember(None)
            del headers[POSITION_HEADER]
            response = self._send(method, path, params, content, headers)
        if not response.is_success:
            raise _rejection(response)
        written = response.headers.get(POSITION_HEADER)
        if method != "GET" and self._read_your_writes and written is not None:
            self._remember(_following(self.position, written))
        return response

    def _send(
        self,
        method: str,
        path: str,
        params: list[tuple[str, str]] | None,
        content: bytes | None,
        headers: dict[str, str],
    ) -> httpx.Response:
        try:
            return self._http.request(
                method, path, params=tuple(params or ()), content=content, headers=headers
            )
        except httpx.HTTPError as exc:
            raise UpstreamError(f"cannot reach {self.url}: {exc or type(exc).__name__}") from exc

    def _remember(self, position: str | None) -> None:
        self.position = position
        if self._positions is not None:
            if position is None:
                self._positions.forget(self.url)
            else:
                self._positions.put(self.url, position)


def _dataset_path(namespace: str, dataset: str) -> str:
    return f"/v3/namespaces/{segment(namespace)}/datasets/{segment(dataset)}"


def url_parameters(query: object) -> list[tuple[str, str]]:
    """A question (`upstream.query.lineage_query`) as URL parameters, each field under its
    parameter's name: a field holding several values repeats it, an absent one is left out
    so that the server's default applies."""
    found: list[tuple[str, str]] = []
    for field in dataclasses.fields(query):  # type: ignore[arg-type]
        value = getattr(query, field.name)
        values = value if isinstance(value, tuple) else () if value is None else (value,)
        found += [(field.metadata["param"], str(v)) for v in values]
    return found


def _following(kept: str | None, written: str) -> str | None:
    """The position to read after once a write answered `written`: its store position, and
    the newest offset of each partition of it and of `kept` (a front's posts each give the
    offsets of the partitions they wrote to). A position the client cannot read is left out."""
    try:
        later = ReadPosition.parse(written)
    except InvalidParameter:
        return kept
    try:
        earlier = ReadPosition() if kept is None else ReadPosition.parse(kept)
    except InvalidParameter:
        earlier = ReadPosition()
    return str(earlier.then(later))


def _refused_position(response: httpx.Response) -> bool:
    """The server refused the position a read sent (`after`: one from the future)."""
    if response.status_code != 400:
        return False
    rejection = _rejection(response)
    return any(error.get("path") == "after" for error in rejection.errors)


def _rejection(response: httpx.Response) -> ApiRejected:
    """The server's error body as an exception; a non-JSON body keeps its first line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        errors = body.get("errors")
        return ApiRejected(
            response.status_code,
            body["message"],
            [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else [],
        )
    text = response.text.strip().splitlines()[0][:200] if response.text.strip() else ""
    return ApiRejected(response.status_code, text or response.reason_phrase or "request failed")
