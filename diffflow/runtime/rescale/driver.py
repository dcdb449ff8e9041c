"""Driving a dataflow's rescaling: the plan in progress, its steps at epoch boundaries, and
the background work between them.

:meth:`Dataflow.rescale <diffflow.Dataflow.rescale>` and ``rebalance`` hand their request to
a :class:`Rescaling`, which builds the plan (:mod:`.plans`) and tells the runtime which step
moves each bin.  At every epoch boundary :meth:`Rescaling.before_epoch` applies the steps due
-- after computing every closed epoch, so that a step moves complete state -- or, when none
is due or a due step should wait (:mod:`.pacing`), does a slice of background work.

>>> import diffflow as dd
>>> flow = dd.Dataflow(partitions=2); a = flow.input("a", ["x"]); out = a.output()
>>> a.insert([1, 2, 3]); flow.advance()
>>> plan = flow.rescale(partitions=3, strategy="all_at_once"); flow.advance()
>>> plan.done, flow.partitions, sorted(out.snapshot())
(True, 3, [(1,), (2,), (3,)])
"""
from __future__ import annotations

import itertools
import time

import numpy as np

from diffflow.common.errors import GraphError
from diffflow.runtime.rescale.pacing import Background
from diffflow.runtime.rescale.plans import (Plan, Step, check_start, check_strategy, make_plan,
                                            planning_sizes, target_of)
from diffflow.runtime.routing import Routing

# batches keep a plan's step index under its key; never id(plan), which a later plan may reuse
_PLAN_KEYS = itertools.count(1)


class Rescaling:
    """One dataflow's rescaling: the plan in progress and the work it leaves between epochs.

    ``compute`` (given to the methods that may apply steps) computes every closed epoch that
    was not computed yet (``advance(run=False)``): a step moves complete state only.
    """

    def __init__(self):
        self.plan = None      # the plan in progress
        self.work = False     # background work left by steps (merging what they imported)
        self.pace = Background()

    @property
    def busy(self) -> bool:
        """Whether a plan runs or background work is left."""
        return self.plan is not None or self.work

    def rescale(self, runtime, open_epoch: int, compute, partitions=None, strategy="batched",
                *, table=None, bins_per_step=None, max_rows_per_step=None, start_epoch=None,
                steps_per_epoch=1, replace=False) -> Plan:
        """Plan a move to ``partitions`` (or to routing ``table``) and start it."""
        self._check(runtime, replace)
        start = check_start(start_epoch, open_epoch)
        if check_strategy(strategy) == "restart":
            return self._restart_at(runtime, open_epoch, compute, partitions, table, start)
        sizes = planning_sizes(runtime)
        plan = make_plan(runtime.routing, sizes, partitions=partitions, table=table,
                         strategy=strategy, bins_per_step=bins_per_step,
                         max_rows_per_step=max_rows_per_step, start_epoch=start,
                         steps_per_epoch=steps_per_epoch)
        self._start(plan, runtime)
        return plan

    def rebalance(self, runtime, open_epoch: int, strategy="batched", *, bins_per_step=None,
                  max_rows_per_step=None, start_epoch=None, steps_per_epoch=1,
                  replace=False) -> Plan:
        """Plan a move of bins that evens out the rows per partition, and start it."""
        self._check(runtime, replace)
        plan = make_plan(runtime.routing, runtime.bin_sizes(), partitions=None, table=None,
                         strategy=strategy, bins_per_step=bins_per_step,
                         max_rows_per_step=max_rows_per_step,
                         start_epoch=check_start(start_epoch, open_epoch),
                         steps_per_epoch=steps_per_epoch, rebalance=True)
        self._start(plan, runtime)
        return plan

    def _check(self, runtime, replace: bool) -> None:
        """A clear error unless a new plan may start now."""
        if self.plan is not None and not replace:
            raise GraphError(f"a rescaling plan is running ({self.plan.bins_left} bins "
                             f"left); wait for it, or pass replace=True to plan from here")

    def _start(self, plan: Plan, runtime) -> None:
        self.plan = plan if plan.steps else None
        if plan.steps:
            runtime.rescale_plan(next(_PLAN_KEYS), plan.step_of_bin())
        else:
            runtime.rescale_plan(None, None)
        # the workers of the partitions it adds start now, in the background (cancelling
        # any start for a plan it replaces): its steps need not wait for a process start
        runtime.prepare_workers(max([s.parts for s in plan.steps], default=runtime.parts))

    def _restart_at(self, runtime, open_epoch: int, compute, partitions, table,
                    start: int) -> Plan:
        """A restart now, or at ``start`` with its extra workers started meanwhile."""
        if not hasattr(runtime, "restart_at") or runtime.transport.pids == []:
            raise GraphError("strategy='restart' needs worker processes (runtime='processes' "
                             "or 'spark'); other runtimes rescale live with 'all_at_once'")
        parts, target = target_of(runtime.routing, partitions, table)
        now = runtime.routing.table()
        moving = np.flatnonzero(now != target)
        plan = Plan("restart", runtime.parts, parts, target,
                    [Step(start, moving, now[moving], target[moving], parts, 0)])
        self.plan = None  # a restart replaces any plan under way
        runtime.rescale_plan(None, None)
        if start > open_epoch:  # (the pool gets the workers it will lack, started and warm)
            self.plan = plan
            runtime.prepare_workers(parts, restart=True)
            return plan
        runtime.prepare_workers(runtime.parts)  # (cancels a start for a plan replaced)
        self._restart(plan, runtime, compute)
        return plan

    def _restart(self, plan: Plan, runtime, compute) -> None:
        """Apply a restart plan's one step now (after computing every closed epoch)."""
        compute()
        started = time.perf_counter()
        runtime.restart_at(Routing(plan.parts_to, plan.target))
        plan.steps[0].seconds = time.perf_counter() - started
        plan.steps[0].applied = True

    def before_epoch(self, runtime, open_epoch: int, compute) -> None:
        """At an epoch boundary: apply the plan's steps due at ``open_epoch`` (after
        computing every closed epoch), or do a slice of background work."""
        self.pace.begin()
        if not self.busy:
            return
        plan = self.plan
        due = [] if plan is None else plan.due(open_epoch)
        if due and plan.strategy == "restart":  # (its extra workers were started ahead)
            if getattr(runtime, "log_open", None):  # (DataFrames staged: the next boundary)
                plan.postpone()
                return
            self._restart(plan, runtime, compute)
            self.plan = None
            return
        pace = self.pace
        no_room = bool(due) and pace.no_room(plan, due)  # a paced caller has no slack now
        if not due or no_room or pace.must_wait(plan, due, runtime) \
                or pace.must_start(plan, due, runtime):
            # background work: index for coming steps, merge what steps imported
            self.work = pace.work(runtime)
            if not due:
                return
            if no_room or pace.must_wait(plan, due, runtime) \
                    or pace.must_start(plan, due, runtime):  # still: the steps wait an epoch
                plan.postpone()
                return
        compute()
        for step in due:
            plan.apply(step, runtime)
        if plan.done:
            self.plan = None
            runtime.rescale_plan(None, None)
        self.work = True  # imports to merge in the epochs after

    def after_epoch(self, seconds: float) -> None:
        """An epoch was computed in ``seconds``: a steady epoch (no plan, no background
        work) sets the pace of the background work."""
        self.pace.end(seconds if not self.busy else None)
