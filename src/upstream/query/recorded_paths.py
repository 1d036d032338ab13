"""Which recorded field-operation paths a reader may see (design §5), for the field paths and
field operations answers.

A path is what one run of a job recorded: operations that read some source datasets and
wrote a destination, so in lineage terms the relations (destination, job, run, write) and
(source, job, run, read) of each source it reads. Walked from the dataset asked about, the
job comes first: a path of a hidden job stops there, and only the relation linking the asked
dataset to that job is met. A path of a shown job is shown only when every dataset it names
is shown too (its operations name them, and an operation is never rewritten); each relation
with a hidden dataset is met. What is met is counted as the walks count it
(`graph_index.visibility.VisibleNodes`): the distinct hidden datasets and jobs, and the
distinct relations with them, never named.
"""

from __future__ import annotations

from collections.abc import Sequence

from upstream.model.access import Visibility
from upstream.model.field_operations import Step
from upstream.model.identity import DatasetRef
from upstream.query.field_operation_sets import RunOf

#: A dataset or job, as ("dataset" | "job", namespace, name).
_Node = tuple[str, str, str]
#: A relation met: (dataset, job, run id, access).
_Relation = tuple[_Node, _Node, str, str]


class RecordedPaths:
    """One reader's view of the paths recorded around the dataset `asked`."""

    def __init__(self, visibility: Visibility, asked: DatasetRef) -> None:
        self.visibility = visibility
        self.asked: _Node = ("dataset", asked.namespace, asked.name)
        self._met: set[_Relation] = set()

    @property
    def filters(self) -> bool:
        """Whether anything may be hidden at all (answers say their counts only then)."""
        return not self.visibility.everything

    def shows(self, destination: DatasetRef, steps: Sequence[Step], run: RunOf) -> bool:
        """Whether the path `steps` that `run` recorded for `destination` is shown; the
        relations with a hidden end it meets are remembered."""
        if not self.filters:
            return True
        job: _Node = ("job", run.job_namespace, run.job_name)
        run_id = str(run.run_id)
        relations = [(("dataset", destination.namespace, destination.name), "write")]
        relations += [
            (("dataset", source.namespace, source.name), "read")
            for source in dict.fromkeys(s for step in steps for s in step.sources)
        ]
        if not self._visible(job):
            near = next((r for r in relations if r[0] == self.asked), relations[0])
            self._met.add((near[0], job, run_id, near[1]))
            return False
        hidden = [(d, job, run_id, access) for d, access in relations if not self._visible(d)]
        self._met.update(hidden)
        return not hidden

    def _visible(self, node: _Node) -> bool:
        return self.visibility.shows(node[1])

    @property
    def hidden_nodes(self) -> int:
        ends = {end for dataset, job, _, _ in self._met for end in (dataset, job)}
        return sum(1 for end in ends if not self._visible(end))

    @property
    def hidden_relations(self) -> int:
        return len(self._met)
