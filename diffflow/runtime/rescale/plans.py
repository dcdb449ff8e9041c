"""Live rescaling: plans that move bins between partitions at epoch boundaries (Megaphone).

A running dataflow's keys hash into :data:`~diffflow.runtime.routing.BINS`
bins and one routing table says which partition owns each bin
(:mod:`diffflow.runtime.routing`).  :meth:`Dataflow.rescale` plans a change of
table -- to more partitions, fewer, or the same number with the load evened
out -- as a list of :class:`Step` s, each applied at an epoch boundary: the
dataflow computes every closed epoch, the step's bins move with their trace
rows (:mod:`diffflow.runtime.rescale.migrate`), and from that epoch on rows of those
keys go to their new owners.  Updates keep arriving between steps and every
output is exactly what a dataflow that never rescaled gives.

Strategies (Megaphone's, RESCALE.md §3):

* ``"all_at_once"``: one step moves everything; its epoch waits for all of it;
* ``"fluid"``: ``bins_per_step`` bins per step (by default 1/4096 of the
  bins, Megaphone's granularity), one step after another;
* ``"batched"``: every step lets each partition send at most
  ``max_rows_per_step`` rows to one partition and receive at most that many
  from one (a matching of senders and receivers, as Megaphone's optimized
  strategy), so a step's cost is bounded by the budget, not by the state.

>>> import diffflow as dd
>>> flow = dd.Dataflow(partitions=2); a = flow.input("a", ["x"]); out = a.distinct().output()
>>> a.insert(list(range(100))); flow.advance()
>>> plan = flow.rescale(partitions=3, strategy="fluid", bins_per_step=100_000)
>>> len(plan.steps), flow.migration is plan
(3, True)
>>> for _ in range(3): a.insert([1000]); flow.advance()
>>> plan.done, flow.partitions, flow.migration, len(out.snapshot())
(True, 3, None, 101)
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from diffflow.runtime.routing import BINS, Routing, check_table

LIVE_STRATEGIES = ("all_at_once", "fluid", "batched")  # bins move while the dataflow runs
STRATEGIES = LIVE_STRATEGIES + ("restart",)  # restart: through a checkpoint (the driver's)
FLUID_BINS = -(-BINS // 4096)  # fluid's default step: 1/4096 of the bins, as Megaphone's 2^12
BATCH_ROWS = 1_000_000         # batched's default budget per partition and step
# up to this many trace rows, a plan counts each bin's rows (a pass over the state's keys);
# above, it estimates them from the partitions' row counts (keys hash evenly over the bins)
EXACT_ROWS = 1_000_000


@dataclass(eq=False)  # steps are told apart by identity (their bins are arrays)
class Step:
    """One cut-over: from ``epoch`` on, ``bins[i]`` belongs to ``dests[i]`` (was ``sources[i]``)."""

    epoch: int
    bins: np.ndarray
    sources: np.ndarray
    dests: np.ndarray
    parts: int                 # partitions once the step is applied
    rows_planned: int          # trace rows of the bins when the plan was made
    rows_moved: int | None = None   # filled in when applied
    seconds: float | None = None
    applied: bool = False
    over_budget: int | None = None  # max_rows_per_step, when one bin alone holds more

    def __repr__(self) -> str:
        state = f"moved {self.rows_moved} rows in {self.seconds:.3f} s" if self.applied \
            else "pending"
        over = "" if self.over_budget is None else \
            f" (a single bin over max_rows_per_step={self.over_budget}: bins move whole)"
        return (f"Step(epoch={self.epoch}, {len(self.bins)} bins, ~{self.rows_planned} rows"
                f"{over}, {state})")


@dataclass
class Plan:
    """A migration: its steps, applied one per epoch boundary (``steps_per_epoch``)."""

    strategy: str
    parts_from: int
    parts_to: int
    target: np.ndarray = field(repr=False)
    steps: list = field(default_factory=list)
    waited: int = 0   # epochs the steps waited for their preparation (:meth:`postpone`)
    waiting: int = field(default=0, repr=False)  # of them, since the last step applied

    @property
    def done(self) -> bool:
        """Whether every step is applied."""
        return all(s.applied for s in self.steps)

    @property
    def progress(self) -> tuple:
        """``(steps applied, steps)``."""
        return sum(s.applied for s in self.steps), len(self.steps)

    @property
    def bins_left(self) -> int:
        """Bins still to move."""
        return sum(len(s.bins) for s in self.steps if not s.applied)

    @property
    def rows_moved(self) -> int:
        """Trace rows moved so far."""
        return sum(s.rows_moved or 0 for s in self.steps)

    def report(self) -> list:
        """One dict per step: epoch, bins, planned and moved rows, wall seconds, applied."""
        return [{"epoch": s.epoch, "bins": len(s.bins), "rows_planned": s.rows_planned,
                 "rows_moved": s.rows_moved, "seconds": s.seconds, "applied": s.applied}
                for s in self.steps]

    def due(self, epoch: int) -> list:
        """The steps not applied yet whose epoch is at most ``epoch``."""
        return [s for s in self.steps if not s.applied and s.epoch <= epoch]

    def step_of_bin(self) -> np.ndarray:
        """The step moving each bin (-1: none), for the engines' step indexes."""
        steps = np.full(BINS, -1, np.int32)
        for i, s in enumerate(self.steps):
            steps[s.bins] = i
        return steps

    def postpone(self) -> None:
        """Move every step not applied yet one epoch later (their preparation is not done)."""
        for s in self.steps:
            if not s.applied:
                s.epoch += 1
        self.waited += 1
        self.waiting += 1

    def apply(self, step: Step, runtime) -> None:
        """Apply ``step`` (one of :attr:`steps`) to ``runtime`` now (between runs)."""
        table = runtime.routing.table()
        table[step.bins] = step.dests
        started = time.perf_counter()
        number = next(i for i, s in enumerate(self.steps) if s is step)
        step.rows_moved = runtime.rescale_step(Routing(step.parts, table), number)
        step.seconds = time.perf_counter() - started
        step.applied = True
        self.waiting = 0


# -- targets --------------------------------------------------------------------------------
def balanced_table(current: np.ndarray, parts: int, weights: np.ndarray) -> np.ndarray:
    """A table for ``parts`` partitions that moves as little weight as it can while giving
    every partition about ``total / parts``: a partition over that keeps a prefix of its
    bins, bins of retired partitions and the rest are dealt to partitions under it.

    >>> cur = np.arange(BINS, dtype=np.int32) % 2
    >>> t = balanced_table(cur, 4, np.ones(BINS))
    >>> np.bincount(t).tolist(), int((t != cur).sum())
    ([180180, 180180, 180180, 180180], 360360)
    """
    weights = np.asarray(weights, dtype=np.float64)
    goal = weights.sum() / parts
    pool = current >= parts
    loads = np.bincount(current[~pool], weights[~pool], minlength=parts)[:parts]
    for p in np.flatnonzero(loads > goal).tolist():
        mine = np.flatnonzero(current == p)
        kept = np.cumsum(weights[mine]) <= goal
        pool[mine[~kept]] = True
        loads[p] = weights[mine[kept]].sum()
    table = current.copy()
    spare = np.flatnonzero(pool)
    if len(spare):
        # deficits sum to the spare weight: deal spare bins out by cumulative weight
        bounds = np.cumsum(np.maximum(goal - loads, 0.0))
        middle = np.cumsum(weights[spare]) - weights[spare] / 2
        owner = np.searchsorted(bounds, middle, side="left")
        table[spare] = np.minimum(owner, parts - 1)
    return table.astype(np.int32)


def target_table(current: np.ndarray, parts: int) -> np.ndarray:
    """The table ``rescale(partitions=parts)`` moves to: every partition gets an equal share
    of the bins (so of future keys too), keeping as many bins in place as it can; ``bin %
    parts`` (routed with no table lookup) when that moves no more bins.

    >>> now = np.arange(BINS, dtype=np.int32) % 2
    >>> bool((target_table(now, 4) == np.arange(BINS) % 4).all())
    True
    """
    modulo = np.arange(BINS, dtype=np.int32) % parts
    kept = balanced_table(current, parts, np.ones(BINS))
    return modulo if (modulo != current).sum() <= (kept != current).sum() else kept


def _weights(sizes: np.ndarray) -> np.ndarray:
    """Rows per bin, plus a hundredth of the mean for every bin: rows decide, and empty
    bins still spread evenly."""
    return sizes.astype(np.float64) + max(float(sizes.sum()), 1.0) / BINS * 0.01


def planning_sizes(runtime) -> np.ndarray:
    """Rows per bin a plan is cut with: counted (:meth:`bin_sizes`) when the state holds at
    most :data:`EXACT_ROWS` rows, so a step's rows are those it will move; else estimated
    from each partition's row count (:func:`estimated_sizes`, no pass over the state)."""
    partition_rows = runtime.partition_rows()
    if sum(partition_rows) <= EXACT_ROWS:
        return runtime.bin_sizes()
    return estimated_sizes(runtime.routing.table(), partition_rows)


def estimated_sizes(table: np.ndarray, partition_rows: list) -> np.ndarray:
    """Rows per bin assuming each partition's rows spread evenly over its bins (keys hash
    uniformly): what a plan of a large state is cut with (:func:`planning_sizes`), without
    reading the state.

    >>> t = np.zeros(BINS, np.int32); t[:10] = 1
    >>> s = estimated_sizes(t, [0, 50]); int(s[:10].sum()), int(s[10:].sum())
    (50, 0)
    """
    owned = np.bincount(table, minlength=len(partition_rows))[:len(partition_rows)]
    per_bin = np.asarray(partition_rows, np.float64) / np.maximum(owned, 1)
    return per_bin[table]


# -- steps ----------------------------------------------------------------------------------
def plan_steps(current: np.ndarray, target: np.ndarray, sizes: np.ndarray, strategy: str,
               bins_per_step: int | None, max_rows_per_step: int | None) -> list:
    """The moves from ``current`` to ``target`` cut into steps: lists of bin arrays."""
    moving = np.flatnonzero(current != target)
    if not len(moving):
        return []
    if strategy == "all_at_once":
        return [moving]
    rows = sizes[moving]
    if strategy == "fluid":
        return _sequential(moving, rows, bins_per_step or FLUID_BINS, max_rows_per_step)
    return _matched(moving, current[moving], target[moving], rows, bins_per_step,
                    max_rows_per_step or BATCH_ROWS)


def _sequential(moving, rows, bins_per_step: int, max_rows: int | None) -> list:
    steps, start = [], 0
    csum = np.concatenate([[0], np.cumsum(rows)])
    while start < len(moving):
        end = min(start + bins_per_step, len(moving))
        if max_rows is not None:  # at least one bin, at most max_rows rows
            end = max(start + 1, min(end, int(np.searchsorted(
                csum, csum[start] + max_rows, side="right")) - 1))
        steps.append(moving[start:end])
        start = end
    return steps


def _matched(moving, sources, dests, rows, bins_per_step, max_rows: int) -> list:
    """Batched steps: per step a matching of senders to receivers (each partition sends
    to one and receives from one), each matched pair moving a prefix of its bins within
    ``max_rows`` rows (at least one bin) and ``bins_per_step`` bins."""
    pairs: dict = {}
    order = np.lexsort((moving, dests, sources))
    for (s, d), idx in _groups(sources[order], dests[order], order):
        pairs[(s, d)] = [idx, 0, np.concatenate([[0], np.cumsum(rows[idx])])]
    steps = []
    while pairs:
        busy_s, busy_d, chosen = set(), set(), []
        by_left = sorted(pairs, key=lambda k: -(pairs[k][2][-1] - pairs[k][2][pairs[k][1]]))
        for s, d in by_left:
            if s in busy_s or d in busy_d:
                continue
            busy_s.add(s)
            busy_d.add(d)
            idx, at, csum = pairs[(s, d)]
            end = int(np.searchsorted(csum, csum[at] + max_rows, side="right")) - 1
            end = max(at + 1, min(end, len(idx)))
            if bins_per_step:
                end = min(end, at + bins_per_step)
            chosen.append(moving[idx[at:end]])
            if end >= len(idx):
                del pairs[(s, d)]
            else:
                pairs[(s, d)][1] = end
        steps.append(np.sort(np.concatenate(chosen)))
    return steps


def _groups(sources, dests, order):
    """``((source, dest), positions)`` runs of equal pairs in sorted arrays."""
    if not len(order):
        return
    change = np.flatnonzero((np.diff(sources) != 0) | (np.diff(dests) != 0)) + 1
    bounds = np.concatenate([[0], change, [len(order)]])
    for a, b in zip(bounds[:-1], bounds[1:]):
        yield (int(sources[a]), int(dests[a])), order[a:b]


def check_strategy(strategy) -> str:
    """``strategy`` if it is one of :data:`STRATEGIES`, else an error listing them.

    >>> check_strategy("slow")
    Traceback (most recent call last):
    ValueError: unknown rescaling strategy 'slow'; choose one of all_at_once, fluid, batched, restart
    """
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown rescaling strategy {strategy!r}; choose one of "
                         f"{', '.join(STRATEGIES)}")
    return strategy


def check_partitions(partitions) -> int:
    """A partition count as an int, or a clear error.

    >>> check_partitions(0)
    Traceback (most recent call last):
    ValueError: partitions must be a positive int (at most 720720, one per bin), got 0
    """
    if not isinstance(partitions, (int, np.integer)) or isinstance(partitions, (bool, np.bool_)) \
            or not 1 <= partitions <= BINS:
        raise ValueError(f"partitions must be a positive int (at most {BINS}, one per bin), "
                         f"got {partitions!r}")
    return int(partitions)


def check_start(start_epoch, open_epoch: int) -> int:
    """The epoch of a plan's first step: an int, not before the open epoch."""
    if start_epoch is None:
        return open_epoch
    if not isinstance(start_epoch, (int, np.integer)) or isinstance(start_epoch, bool) \
            or start_epoch < open_epoch:
        raise ValueError(f"start_epoch must be an int >= the open epoch {open_epoch}, "
                         f"got {start_epoch!r}")
    return int(start_epoch)


def target_of(current: Routing, partitions, table) -> tuple:
    """``(partition count, target table)`` for ``rescale(partitions=, table=)``."""
    if table is not None:
        table = np.asarray(table)
        if table.dtype.kind not in "iu":
            raise ValueError(f"table= must hold partition numbers (ints), got {table.dtype}")
        if table.ndim == 1 and len(table) and int(table.min()) < 0:
            raise ValueError(f"a routing table names partition {int(table.min())}; "
                             f"partitions are numbered from 0")
        parts = check_partitions(int(table.max()) + 1 if partitions is None and table.size
                                 else partitions)
        check_table(table, parts)
        return parts, table.astype(np.int32)
    parts = check_partitions(partitions)
    return parts, target_table(current.table(), parts)


def make_plan(current: Routing, sizes: np.ndarray, *, partitions: int | None, table,
              strategy: str, bins_per_step: int | None, max_rows_per_step: int | None,
              start_epoch: int, steps_per_epoch: int, rebalance: bool = False) -> Plan:
    """Check the request and build its :class:`Plan` (see :meth:`Dataflow.rescale`)."""
    check_strategy(strategy)
    if strategy not in LIVE_STRATEGIES:
        raise ValueError(f"strategy={strategy!r} cannot rebalance (it rescales through a "
                         f"checkpoint); choose one of {', '.join(LIVE_STRATEGIES)}")
    for name, value in (("bins_per_step", bins_per_step),
                        ("max_rows_per_step", max_rows_per_step),
                        ("steps_per_epoch", steps_per_epoch)):
        if value is not None and (not isinstance(value, (int, np.integer))
                                  or isinstance(value, bool) or value < 1):
            raise ValueError(f"{name} must be a positive int, got {value!r}")
    now = current.table()
    if rebalance:
        parts = current.parts
        target = balanced_table(now, parts, _weights(sizes))
    else:
        parts, target = target_of(current, partitions, table)
    plan = Plan(strategy, current.parts, parts, target)
    cuts = plan_steps(now, target, sizes, strategy, bins_per_step, max_rows_per_step)
    width = max(current.parts, parts)
    budget = (max_rows_per_step or BATCH_ROWS) if strategy == "batched" else max_rows_per_step
    for i, bins in enumerate(cuts):
        last = i == len(cuts) - 1
        step = Step(start_epoch + i // steps_per_epoch, bins, now[bins], target[bins],
                    parts if last else width, round(float(sizes[bins].sum())))
        if budget is not None and strategy != "all_at_once" and len(bins) and \
                float(sizes[bins].max()) > budget:
            step.over_budget = budget  # steps keep to it except for such a bin (plan_steps)
        plan.steps.append(step)
    if not cuts and parts != current.parts:  # nothing to move, only partitions to add or drop
        empty = np.zeros(0, np.int64)
        plan.steps.append(Step(start_epoch, empty, empty.astype(np.int32),
                               empty.astype(np.int32), parts, 0))
    return plan
