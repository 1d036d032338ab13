"""The `sql` job facet's statement for a planned job, written from the same plan as its lineage.

Each output is one `INSERT INTO … SELECT` over exactly the inputs that feed it: every output
field is a projection of its planned source fields (`COALESCE` when there are two), the first
source is the `FROM`, every other source is joined on `id` (the join keys are the output's
dataset-wide inputs of subtype JOIN), a planned filter is a `WHERE … IS NOT NULL`, and a dataset
read as a whole (no field) is an `EXISTS` gate. An input that feeds no output (the lookup of a
facet-style job) is read by a `SELECT count(*)` of its own. So a correct SQL parser derives from
the statement the same tables, and the same field and dataset-wide edges, as the plan: for plain
jobs, which send no field lineage, those are the `sql_field_edges` of the ground truth.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from benchmarks.generator import Dataset, Job, OutputPlan

_PLAIN = re.compile(r"[a-z_][a-z0-9_]*")
#: The name of a dataset as the statement refers to it (a temporary dataset's name carries its
#: workflow run).
Namer = Callable[["Dataset"], str]


def identifier(name: str) -> str:
    """A table name as SQL text: dotted parts, each quoted unless it is a plain identifier
    (a landing path `landing/app/orders_3/` becomes one quoted part)."""
    parts = name.split(".") if "/" not in name else [name]
    return ".".join(p if _PLAIN.fullmatch(p) else '"' + p.replace('"', '""') + '"' for p in parts)


def job_statement(job: Job, named: Namer) -> str:
    """Every statement of the job, separated by `;` as SQL operators send them."""
    statements = [_insert(output, job.plans[output], named) for output in job.outputs]
    fed = {d for plan in job.plans.values() for d in plan.sources()}
    statements += [
        f"SELECT count(*) FROM {identifier(named(d))}" for d in job.inputs if d not in fed
    ]
    return ";\n\n".join(statements) + ";"


def _insert(output: Dataset, plan: OutputPlan, named: Namer) -> str:
    joined = plan.joined
    alias = {source: f"t{index}" for index, source in enumerate(joined)}
    columns = ", ".join(plan.fields)
    projections = ",\n    ".join(
        f"{_expression(pairs, alias)} AS {name}" for name, pairs in plan.fields.items()
    )
    lines = [
        f"INSERT INTO {identifier(named(output))} ({columns})",
        f"SELECT\n    {projections}",
        f"FROM {identifier(named(joined[0]))} AS {alias[joined[0]]}",
    ]
    lines += [
        f"JOIN {identifier(named(source))} AS {alias[source]} "
        f"ON {alias[source]}.id = {alias[joined[0]]}.id"
        for source in joined[1:]
    ]
    conditions = [
        f"{alias[d]}.{name} IS NOT NULL" for d, name, kind in plan.wide if kind == "FILTER"
    ]
    conditions += [f"EXISTS (SELECT 1 FROM {identifier(named(d))})" for d in plan.whole]
    if conditions:
        lines.append("WHERE " + "\n  AND ".join(conditions))
    return "\n".join(lines)


def _expression(pairs: Sequence[tuple[Dataset, str]], alias: dict[Dataset, str]) -> str:
    terms = [f"{alias[d]}.{name}" for d, name in pairs]
    return terms[0] if len(terms) == 1 else f"COALESCE({', '.join(terms)})"
