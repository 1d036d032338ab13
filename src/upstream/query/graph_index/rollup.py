"""`rollup=workflow` on the index (design §3.4, §4.2): relation rows shown in place of the runs
inside a workflow run by that workflow run, rows of datasets temporary to it left out, and
what a walk met on the way (the jobs that stood for workflows, the datasets found temporary),
each with the least level it was met at, so a walk cut at a level says only what it met by
then.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from upstream.query.graph_index.workflows import Workflows

Ints = npt.NDArray[np.int64]
Flags = npt.NDArray[np.bool_]
_UNMET = np.iinfo(np.int64).max


class RollUp:
    """One rolled-up walk's rule and findings over one version's workflow columns."""

    def __init__(self, workflows: Workflows, datasets: int, jobs: int) -> None:
        self.workflows = workflows
        #: Per dataset (job): the least level it was met temporary (standing for a workflow).
        self.temporary_level = np.full(datasets + 1, _UNMET, dtype=np.int64)
        self.workflow_level = np.full(jobs + 1, _UNMET, dtype=np.int64)

    def links(self, runs: Ints) -> Ints:
        """The workflow run of each of `runs` (NONE: in none)."""
        return self.workflows.workflow_of(runs).astype(np.int64)

    def passing(self, datasets: Ints, runs: Ints) -> Flags:
        """Which steps into `datasets`, each made by the run beside it, lead into a dataset
        temporary to that run's workflow run: a walk passes through it within the level."""
        return self.workflows.temporary(datasets, self.links(runs))

    def rolled(self, keys: Ints, levels: Ints) -> tuple[Ints, Ints]:
        """Relation rows (dataset, job, run, write, component) shown at `levels`, rolled up:
        a row of a run inside a workflow run is that workflow run's, with its job; a row of
        a dataset temporary to it is left out. Notes what it met."""
        links = self.links(keys[:, 2])
        inside = links >= 0
        dropped = inside & self.workflows.temporary(keys[:, 0], links)
        np.minimum.at(self.temporary_level, keys[dropped, 0], levels[dropped])
        kept = ~dropped
        keys, links, inside, levels = keys[kept], links[kept], inside[kept], levels[kept]
        jobs = np.where(inside, self.workflows.run_job[np.maximum(links, 0)], keys[:, 1])
        np.minimum.at(self.workflow_level, jobs[inside], levels[inside])
        rolled = keys.copy()
        rolled[:, 1] = jobs
        rolled[:, 2] = np.where(inside, links, keys[:, 2])
        return rolled, levels

    def met(self, level_column: Ints, by: int) -> Ints:
        """The numbers whose least level in `level_column` is at most `by`."""
        found: Ints = np.flatnonzero(level_column[:-1] <= by)
        return found
