"""Alembic environment: migrations run on the connection `upstream.store.migrate` hands in."""

from __future__ import annotations

from alembic import context

from upstream.store.partitions import not_a_partition
from upstream.store.schema import metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    compare_type=True,
    include_name=not_a_partition,
)
with context.begin_transaction():
    context.run_migrations()
