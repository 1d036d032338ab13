"""`upstream delete`: soft-delete a dataset, a job or a namespace on a server or a database,
as `DELETE /api/v1/namespaces/…` does (the same service against a database)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Literal

from upstream.commands.database import database
from upstream.commands.failures import CliError
from upstream.commands.target import Target
from upstream.model.errors import NotFound
from upstream.query.marquez import curation

Kind = Literal["dataset", "job", "namespace"]


def delete_entity(target: Target, kind: Kind, namespace: str, name: str | None) -> str:
    """Delete one entity; the sentence saying what was deleted."""
    if target.db is not None:
        _delete_in_database(target.db, kind, namespace, name)
    else:
        with target.client() as client:
            client.delete(namespace, None if kind == "namespace" else f"{kind}s", name)
    what = (
        f"namespace {namespace!r} with its datasets and jobs"
        if kind == "namespace"
        else f"{kind} {name!r} in namespace {namespace!r}"
    )
    return f"deleted {what}; the next event naming it brings it back"


def _delete_in_database(db: str, kind: Kind, namespace: str, name: str | None) -> None:
    now = datetime.now(UTC)
    with database(db, migrate=True) as store:
        try:
            if kind == "namespace":
                store.write(lambda conn: curation.delete_namespace(conn, namespace, now))
            elif kind == "dataset":
                store.write(lambda conn: curation.delete_dataset(conn, namespace, name or "", now))
            else:
                store.write(lambda conn: curation.delete_job(conn, namespace, name or "", now))
        except NotFound as exc:
            raise CliError(exc.message) from None
