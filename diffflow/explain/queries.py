"""Witness queries of a dataflow built with ``explain=True``: for each operator whose rule
needs to look something up, the indexes it reads and how (see :mod:`.search` for the rules).

An index is an arrangement of a twin's final value (:mod:`.heights`) by the columns a rule
asks by.  The engine keeps it current as inputs change, like any arrangement; a query reads
it directly, by key, between epochs -- no request travels through the dataflow, so a proof
level costs a few binary searches instead of an engine commit.  Rows are read and answered
in their int64 encoding; the search decodes only the input rows it returns.

>>> import diffflow as dd
>>> flow = dd.Dataflow(explain=True)
>>> a = flow.input("a", ["k", "v"]); top = a.aggregate(by=["k"], hi=dd.max("v")).output()
>>> a.insert([(1, 5)]); flow.advance()
>>> from diffflow.api.features import attached
>>> queries = attached(flow, "explain").provenance.queries
>>> sorted(q.rule for q in queries.values() if not isinstance(q, list))
['input', 'winner']
"""
from __future__ import annotations

import numpy as np

from diffflow.api.features import FlowAccess
from diffflow.dataflow.expr import Col, col
from diffflow.explain.heights import H
from diffflow.operators.reduce_extremum import extremum_of
from diffflow.operators.reducers import DistinctReducer

UNIT = "_unit"   # the constant key of an index read whole (a reduction without keys)


TOP = 1 << 40   # a bound above every height: the final value


def presence(history: list, bound: int) -> tuple:
    """``(start, count)`` of a row at round ``bound`` of a loop, from its ``(round, diff)``
    updates sorted by round: ``count`` its multiplicity then, ``start`` the first round of
    the run of rounds up to ``bound`` in which it was present (``None`` when absent).

    >>> presence([(0, 1), (2, -1), (3, 1)], 5), presence([(0, 1), (2, -1)], 5)
    ((3, 1), (None, 0))
    """
    count, start, at = 0, None, 0
    while at < len(history) and history[at][0] <= bound:
        round_ = history[at][0]
        while at < len(history) and history[at][0] == round_:
            count += history[at][1]
            at += 1
        if count <= 0:
            start = None
        elif start is None:
            start = round_
    return (start, count) if count > 0 else (None, 0)


class Index:
    """``collection`` indexed by ``keys``, read by key without an engine commit.

    Heights come one of three ways (``mode``): ``"ground"``, a collection outside loops, all
    of height 0; ``"traced"``, a collection of a loop, whose trace keeps each update's round
    -- a row's height is the round its presence began; ``"twin"``, a heights twin of a
    nested loop, holding heights in its :data:`H` column.

    :meth:`place` (after every twin is built) picks an arrangement the dataflow already
    keeps whose columns start with ``keys`` -- one by fewer keys serves too, read by a
    longer prefix -- and arranges the collection only when there is none."""

    def __init__(self, collection, keys, mode: str, context, optional: bool = False,
                 record: bool = False):
        self.mode = mode
        self.optional = optional   # only if the dataflow arranges it so already
        self.record = record       # note the keys each epoch changes (live explanations)
        self.recorder = None       # the changed_keys node of the arrangement, if recorded
        if not keys:  # one group: index it under a constant
            collection, keys = collection.select(*collection.columns, **{UNIT: 0}), [UNIT]
        self.collection, self.keys = collection, list(keys)
        self.flow = collection.flow
        self.context = context     # the Provenance: the dataflow's access, recorders, reads
        self.width = len(keys)
        self.constant = keys == [UNIT]
        self.node, self.names = None, []

    def __setstate__(self, state):
        # an index pickled before indexes shared a context read its dataflow directly
        self.__dict__.update(state)
        if "context" not in state:
            self.context = Reading(FlowAccess(self.flow))
            self.context.recorders = self.flow.__dict__.get("_changed_keys", {})

    def place(self) -> None:
        arranged = None
        for (nid, by), candidate in self.context.access.arrangements.items():
            if nid == self.collection.node.id and len(by) <= self.width and \
                    list(candidate.node.schema.names[:self.width]) == self.keys:
                arranged = candidate
                break
        if arranged is None:
            if self.optional:
                return
            arranged = self.collection.arrange(self.keys)
        self.node = arranged.node
        self.names = list(self.node.schema.names)   # keys first, then the rest in order
        if self.record:
            recorders = self.context.recorders
            if self.node.id not in recorders:
                width = self.node.params["key_width"]
                recorders[self.node.id] = self.flow.graph.add(
                    "changed_keys", [self.node.id],
                    self.node.schema.subset(self.names[:width]),
                    params={"key_width": width}, scope=self.node.scope,
                    label="explain: changed keys")
            self.recorder = recorders[self.node.id]

    def position(self, name: str) -> int:
        """Where the arranged rows hold column ``name``."""
        return self.names.index(name)

    def request(self, keys: list) -> tuple:
        """The runtime's request (``Runtime.gather``) for the updates of ``keys``; noted in
        the read log while a live proof is followed."""
        if self.constant:
            keys = [(0,) for _ in keys]
        log = self.context.read_log
        if log is not None and self.recorder is not None:   # what a live proof depends on
            width = self.recorder.params["key_width"]
            log.update((self.recorder.id, key[:width]) for key in keys)
        return (self.node.id, np.array(keys, dtype=np.int64).reshape(len(keys), self.width),
                self.width)

    def gather(self, keys: list) -> tuple:
        """``(key index, arranged rows, times, diffs)`` of the updates of ``keys``."""
        return self.context.access.runtime.gather([self.request(keys)])[0]

    def read(self, keys: list, bounds: list, gathered=None) -> list:
        """For each key, ``{arranged row: (height, multiplicity)}`` of the rows present at
        its bound (``TOP``: now)."""
        found = [{} for _ in keys]
        if not keys:
            return found
        which, rows, times, diffs = self.gather(keys) if gathered is None else gathered
        rows = map(tuple, rows.tolist())
        if self.mode == "traced":
            history: dict = {}
            for i, row, round_, diff in zip(which.tolist(), rows, times[:, -1].tolist(),
                                            diffs.tolist()):
                history.setdefault((i, row), []).append((round_, diff))
            for (i, row), updates in history.items():
                start, count = presence(sorted(updates), bounds[i])
                if count:
                    found[i][row] = (start, count)
            return found
        for i, row, diff in zip(which.tolist(), rows, diffs.tolist()):
            found[i][row] = found[i].get(row, 0) + diff
        at = self.position(H) if self.mode == "twin" else None
        return [{row: (0 if at is None else row[at], m) for row, m in rows_.items()
                 if m and (at is None or row[at] <= bound)}
                for rows_, bound in zip(found, bounds)]


class _Query:
    """One node's witness query; :meth:`answer` maps ``(row, bound)`` items to the
    ``(values, multiplicity)`` found, each ``values`` the found row and its height last."""
    rule = ""
    source: int | None = None   # the node the found rows belong to
    negated = False             # a concat's subtracted input

    def reads(self, items: list):
        """The answer to ``items`` as a generator: it yields the reads it needs, a list of
        ``(index, keys)``, receives their gathered updates, and returns the answer; so
        :func:`answer_all` sends the reads of many queries together."""
        raise NotImplementedError

    def answer(self, items: list) -> dict:
        return answer_all([(self, items)])[0]


def answer_all(asked: list) -> list:
    """The answers of ``[(query, items)]``, their index reads batched: every round of reads
    of all the queries is one runtime request (on worker processes, one round trip).

    >>> import diffflow as dd
    >>> flow = dd.Dataflow(explain=True); a = flow.input("a", ["x"]); out = a.output()
    >>> a.insert([1, 1]); flow.advance()
    >>> from diffflow.api.features import attached
    >>> query = attached(flow, "explain").provenance.queries[a.node.id]
    >>> answer_all([(query, [((1,), TOP), ((2,), TOP)])])
    [{((1,), 1099511627776): [((), 2)]}]
    """
    runs = [query.reads(items) for query, items in asked]
    answers: list = [None] * len(runs)
    waiting: dict = {}   # run -> the reads it asked for

    def resume(i: int, gathered) -> None:
        try:
            waiting[i] = runs[i].send(gathered)
        except StopIteration as done:
            answers[i] = done.value

    for i in range(len(runs)):
        resume(i, None)
    while waiting:
        rounds, waiting = waiting, {}
        wanted = [(index, keys) for reads in rounds.values() for index, keys in reads if keys]
        got = iter(wanted[0][0].context.access.runtime.gather(
            [index.request(keys) for index, keys in wanted]) if wanted else [])
        for i, reads in rounds.items():
            resume(i, [next(got) if keys else None for _, keys in reads])
    return answers


class _InputRows(_Query):
    """An input's multiplicity of a row."""
    rule = "input"

    def __init__(self, node, index):
        self.node, self.index = node, index

    def reads(self, items):
        keys = [row for row, _ in items]
        [gathered] = yield [(self.index, keys)]
        found = self.index.read(keys, [TOP] * len(items), gathered)
        return {item: [((), m)] for item, rows in zip(items, found) for _, m in rows.values()}


class _Lookup(_Query):
    """Rows of ``index`` whose key columns equal some of the asked row's columns; the found
    values are ``take`` columns of the arranged row and its height (at most the bound when
    ``bounded``)."""

    def __init__(self, node, rule, index, ask, take, source, bounded, negated=False):
        self.node, self.rule, self.index, self.source = node, rule, index, source
        self.ask = ask                  # positions of the asked row forming the key
        self.take_names = list(take)
        self.bounded, self.negated = bounded, negated

    def reads(self, items):
        keys = [tuple(row[i] for i in self.ask) for row, _ in items]
        [gathered] = yield [(self.index, keys)]
        found = self.index.read(keys, [bound if self.bounded else TOP for _, bound in items],
                                gathered)
        take = [self.index.position(n) for n in self.take_names]
        answers = {}
        for (row, bound), rows in zip(items, found):
            for arranged, (height, m) in rows.items():
                values = tuple(arranged[i] for i in take) + (height,)
                answers.setdefault((row, bound), []).append((values, m))
        return answers


class _JoinPreimage(_Query):
    """A projection of a join: its pre-image found in the join's two inputs, first by a side
    the projection fixes columns of, then by the other side's join keys.  With a plan for
    each side, a read takes the one whose first side holds fewer matching rows."""
    rule = "select"

    def __init__(self, node, join, plans, shapes):
        self.node, self.source = node, join.id
        self.plans = plans   # [(first index, second index, ask first, link, ask second)]
        self.shapes = shapes   # per plan: (first side's row, second's) -> the join's row

    def reads(self, items):
        if not hasattr(self, "usable"):   # plans whose indexes the dataflow keeps
            self.usable = [p for p in self.plans if p[0].node is not None
                           and p[1].node is not None]
        plans = self.usable
        gathered = yield [(plan[0], [tuple(row[i] for i in plan[2]) for row, _ in items])
                          for plan in plans]
        best = min(range(len(plans)), key=lambda p: len(gathered[p][0]))
        first, second, ask, link, more = plans[best]
        shape = self.shapes[self.plans.index(plans[best])]
        found = first.read([None] * len(items), [bound for _, bound in items], gathered[best])
        pairs, keys, bounds = [], [], []
        for (row, bound), rows in zip(items, found):
            for arranged, (h1, m1) in rows.items():
                one = dict(zip(first.names, arranged))
                pairs.append((row, bound, one, h1, m1))
                keys.append(tuple(one[n] for n in link) + tuple(row[i] for i in more))
                bounds.append(bound)
        [more_gathered] = yield [(second, keys)]
        answers = {}
        for (row, bound, one, h1, m1), rows in zip(pairs, second.read(keys, bounds,
                                                                      more_gathered)):
            for arranged, (h2, m2) in rows.items():
                two = dict(zip(second.names, arranged))
                values = shape(one, two) + (max(h1, h2),)
                answers.setdefault((row, bound), []).append((values, m1 * m2))
        return answers


class _Delegate(_Query):
    """A ``concat`` input whose own query finds its rows with their heights (a ``select``
    or a ``min``/``max``): asking that query says both whether the input holds a row and
    why, so the input needs no index of its own and the search saves a level."""
    rule = "concat"

    def __init__(self, node, inner):
        self.node, self.inner, self.source = node, inner, inner.node.id

    def reads(self, items):
        return (yield from self.inner.reads(items))


def indexes_of(queries: dict) -> list:
    """Every :class:`Index` the queries of ``queries`` (node id -> query or list) read."""
    found, stack, seen = [], list(queries.values()), set()
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, Index):
            if id(item) not in seen:
                seen.add(id(item))
                found.append(item)
        elif isinstance(item, _Query):
            stack.extend(v for v in vars(item).values()
                         if isinstance(v, (Index, _Query, list, tuple)))
    return found


class Reading:
    """What the indexes of one dataflow share (an :class:`Index`'s ``context``): the
    dataflow's :class:`~diffflow.api.features.FlowAccess`, the ``changed_keys`` node
    recording each arrangement's changed keys, and, while a live proof is followed, the
    log of the keys it reads."""

    def __init__(self, access):
        self.access = access
        self.recorders: dict = {}   # arrangement node id -> its changed_keys node
        self.read_log = None        # a set, while a live proof is followed


class Queries:
    """Builds the witness queries of every user node (once, before the first epoch)."""

    def __init__(self, context, heights):
        self.context, self.heights, self.graph = context, heights, heights.graph
        self.indexes: list = []

    def _index(self, collection, keys, mode: str, optional: bool = False):
        index = Index(collection, keys, mode, self.context, optional, record=True)
        self.indexes.append(index)
        return index

    def build(self) -> dict:
        """``node id -> query`` (a list for a ``concat``: one per input)."""
        queries = {}
        # a variable's change (definition - initial) is never asked: searches go from the
        # variable to its definition
        changes = {self.graph.nodes[f].inputs[0] for f in self.heights.feeds}
        for node in self.heights.user:
            query = self._query(node, queries) if node.id not in changes else None
            if query is not None:
                queries[node.id] = query
        self.heights.close_loops()
        for index in self.indexes:
            index.place()
        return queries

    def _final(self, nid: int, keys, optional: bool = False):
        """An index of node ``nid``'s twin by ``keys``, in the twin's own scope: read whole,
        a loop's trace sums to the final value, and the twin's own operators often arrange
        it so already (no second copy)."""
        while self.graph.nodes[nid].kind == "enter":   # the same rows: index them outside
            nid = self.graph.nodes[nid].inputs[0]
        mode = self.heights.mode(nid)
        collection = self.heights.of(nid) if mode == "twin" else self.heights.collection(nid)
        return self._index(collection, list(keys), mode, optional)

    def _query(self, node, built: dict):
        kind, hs = node.kind, self.heights
        if kind == "input":
            return _InputRows(node, self._index(hs.collection(node.id), list(node.schema.names),
                                                "ground"))
        if kind == "select":
            source = self.graph.nodes[node.inputs[0]]
            through = self._through_join(node, source)
            if through is not None:
                return through
            return self._select(node, source)
        if kind == "concat" and node.id in hs.loop_variables:
            initial = [i for i in node.inputs if i < node.id]
            if not initial:
                return None
            return self._same_row(node, initial[0], "variable")
        if kind == "concat":  # a negated input is asked for its source's rows
            return [self._concat_input(node, i, built) for i in node.inputs]
        if kind == "reduce" and not isinstance(node.params["reducer"], DistinctReducer):
            arranged = self.graph.nodes[node.inputs[0]]
            source = self.graph.nodes[arranged.inputs[0]]
            kk = node.params["key_width"]
            keys = list(arranged.schema.names[:kk])
            extremum = extremum_of(node.params["reducer"])
            source_names = list(source.schema.names)
            if extremum is not None:   # its lowest winner: keys and the won value
                value = arranged.schema.names[kk + extremum[1]]
                index = self._final(source.id, [*keys, value])
                return _Lookup(node, "winner", index, list(range(kk + 1)), source_names,
                               source.id, bounded=True)
            index = self._final(source.id, keys)
            return _Lookup(node, "group", index, list(range(kk)), source_names, source.id,
                           bounded=False)
        return None

    def _concat_input(self, node, nid: int, built: dict):
        source = self.graph.nodes[nid]
        if source.kind == "negate":
            return self._same_row(node, source.inputs[0], "concat", True)
        own = built.get(nid)
        if isinstance(own, (_Lookup, _JoinPreimage)) and own.rule in ("select", "winner"):
            return _Delegate(node, own)
        return self._same_row(node, nid, "concat")

    def _same_row(self, node, source_id, rule, negated=False):
        """Whether ``source_id`` (same columns) holds the asked row, and how high."""
        source_names = list(self.graph.nodes[source_id].schema.names)
        index = self._final(source_id, source_names)
        return _Lookup(node, rule, index, list(range(len(source_names))), [], source_id,
                       bounded=True, negated=negated)

    def _select(self, node, source):
        """Pre-images of a ``select``: the source's final twin indexed by the image."""
        image = {f"_o{i}": e for i, e in enumerate(node.params["exprs"])}
        pre = {f"_p{j}": col(n) for j, n in enumerate(source.schema.names)}
        exprs = node.params["exprs"]
        if all(isinstance(e, Col) for e in exprs) and \
                len({e.name for e in exprs}) == len(exprs):   # a projection: no image to compute
            index = self._final(source.id, [e.name for e in exprs])
            return _Lookup(node, "select", index, list(range(len(exprs))),
                           list(source.schema.names), source.id, bounded=True)
        mode = self.heights.mode(source.id)
        mapped = self.heights.of(source.id).select(**image, **pre, **{H: H}) \
            if mode == "twin" else self.heights.collection(source.id).select(**image, **pre)
        index = self._index(mapped, list(image), mode)
        return _Lookup(node, "select", index, list(range(len(image))), list(pre), source.id,
                       bounded=True)

    def _through_join(self, node, join):
        """A projection of a join (see :class:`_JoinPreimage`), or ``None``."""
        exprs = node.params["exprs"]
        if join.kind != "join" or not all(isinstance(e, Col) for e in exprs):
            return None
        left_arr, right_arr = (self.graph.nodes[i] for i in join.inputs)
        kk = join.params["key_width"]
        left, right = (self.graph.nodes[a.inputs[0]] for a in (left_arr, right_arr))
        lkeys, rkeys = list(left_arr.schema.names[:kk]), list(right_arr.schema.names[:kk])
        right_rest = [n for n in right.schema.names if n not in rkeys]
        # every join column: which side and which of that side's columns holds it
        origin = {n: ("L", n) for n in left.schema.names}
        origin.update({out: ("R", r) for out, r in
                       zip(join.schema.names[left.schema.width:], right_rest)})
        fixed = {"L": {}, "R": {}}      # side -> {side column: position in the asked row}
        for position, e in enumerate(exprs):
            side, name = origin[e.name]
            fixed[side].setdefault(name, position)
        for lk, rk in zip(lkeys, rkeys):   # a fixed key fixes the other side's key too
            if lk in fixed["L"]:
                fixed["R"].setdefault(rk, fixed["L"][lk])
            elif rk in fixed["R"]:
                fixed["L"].setdefault(lk, fixed["R"][rk])
        sides = {"L": (left, lkeys), "R": (right, rkeys)}
        plans, shapes = [], []
        for first in ("R", "L"):
            if not fixed[first]:
                continue
            second = "L" if first == "R" else "R"
            first_node, first_keys = sides[first]
            second_node, second_keys = sides[second]
            # the second side by its join keys (the first side's row has them), then the
            # columns the asked row fixes
            more = [c for c in fixed[second] if c not in second_keys]
            optional = bool(plans)   # a second plan only on indexes kept anyway
            plans.append((self._final(first_node.id, list(fixed[first]), optional),
                          self._final(second_node.id, [*second_keys, *more], optional),
                          list(fixed[first].values()), first_keys,
                          [fixed[second][c] for c in more]))
            shapes.append(self._shape(first, list(left.schema.names), right_rest))
        if not plans:
            return None
        return _JoinPreimage(node, join, plans, shapes)

    @staticmethod
    def _shape(first: str, left_names, right_rest):
        def shape(one, two):   # the join's row: the left row, then the right's other columns
            lrow, rrow = (one, two) if first == "L" else (two, one)
            return tuple(lrow[n] for n in left_names) + tuple(rrow[n] for n in right_rest)
        return shape
