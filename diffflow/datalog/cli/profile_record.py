"""``diffflow run --profile``: a rule profiler built on the execution trace.

A :class:`ProfileRecorder` is the function a traced program hands every run's
:class:`~diffflow.runtime.events.Events` to (``Program(trace=recorder.sink())``).
Each operator step is charged to what the Datalog compiler built the operator for
(:class:`~diffflow.dataflow.origin.Origin`): a rule (``file:line`` and its text) or a
relation's own operators (its input, the distinct union of its rules, its loop
variable, its output).  Per update step (the initial run is step 0) and per round of a
recursive stratum's loop it adds up

* ``time_ns``: the steps' durations (summed over partitions);
* ``tuples``: for a rule, the rows its last operators emitted towards its relation
  (its derivations, before duplicates are removed; in an update step retractions count
  too); for a relation, the rows its ``distinct`` emitted (facts new to it, or gone);
* ``rows_in``: rows its operators consumed, and ``calls``: operator steps.

A loop whose small delta ran in compiled rounds (:mod:`diffflow.runtime.compiled_rounds`)
logs no operator step: the kernel runs every rule of the loop a row at a time.  Such a
run is recorded as it is, a ``compiled`` row per run (stratum, first and last round,
time, updates it added to the loop's state), never split among rules.  The file's
layout is :mod:`.profile_file`'s.

>>> import diffflow as dd
>>> rec = ProfileRecorder("tc.dl")
>>> p = dd.Program(".decl e(x: number, y: number)\\n.decl p(x: number, y: number)\\n"
...                "p(x, y) :- e(x, y).\\np(x, z) :- p(x, y), e(y, z).", filename="tc.dl",
...                trace=rec.sink())
>>> _ = p.insert("e", [(1, 2), (2, 3), (3, 4)]); rec.attach(p); p.commit(); rec.step_done(0, 1000)
>>> data = rec.profile()
>>> [(r["id"], r["location"], r["relation"]) for r in data["rules"]]
[(1, 'tc.dl:3', 'p'), (2, 'tc.dl:4', 'p')]
>>> sum(row[5] for row in data["activity"]["rows"] if row[1] == "rule" and row[2] == 1)
3
"""
from __future__ import annotations

import numpy as np

from diffflow.dataflow.origin import parse_name
from diffflow.datalog.cli.profile_file import ACTIVITY_COLUMNS, new_profile
from diffflow.runtime.events import ACTIVITY, END, START

_SCHEDULING = ACTIVITY["Scheduling"]
_PROCESSING = ACTIVITY["Processing"]
RULE, RELATION, OTHER = 0, 1, 2
_KINDS = ("rule", "relation", "other")


class _Nodes:
    """What each node of one graph is charged to, as arrays indexed by node id."""

    def __init__(self, graph, rules: dict, relations: dict, others: dict):
        n = len(graph.nodes)
        rule_index = {key: i for i, key in enumerate(rules)}
        relation_index = {name: i for i, name in enumerate(relations)}
        self.kind = np.full(n, OTHER, np.int64)
        self.key = np.zeros(n, np.int64)        # rule id, relation number or other number
        self.head = np.zeros(n, bool)           # a rule's node feeding its relation
        self.distinct = np.zeros(n, bool)       # a relation's distinct
        self.stratum = {}                       # node in a loop -> its stratum's name
        consumers = [[] for _ in range(n)]
        for node in graph.nodes:
            for i in node.inputs:
                consumers[i].append(node)
        for node in graph.nodes:
            origin = node.origin
            stratum = _stratum(node.scope)
            if stratum is not None:
                self.stratum[node.id] = stratum
            parsed = parse_name(node.name) if origin is not None else None
            if origin is None or parsed is None:
                self.key[node.id] = others.setdefault(node.name, len(others))
                continue
            if origin.rule:
                key = (origin.location, origin.what)
                if key not in rules:
                    rules[key] = {"location": origin.location, "text": origin.what,
                                  "relation": origin.relation, "stratum": stratum}
                elif stratum is not None:
                    rules[key]["stratum"] = stratum
                self.kind[node.id] = RULE
                self.key[node.id] = rule_index.setdefault(key, len(rule_index))
                self.head[node.id] = any(c.origin is not None and not c.origin.rule
                                         and c.origin.relation == origin.relation
                                         for c in consumers[node.id])
            else:
                found = relations.setdefault(origin.relation, {
                    "name": origin.relation, "location": origin.location, "stratum": stratum})
                if stratum is not None:
                    found["stratum"] = stratum
                self.kind[node.id] = RELATION
                self.key[node.id] = relation_index.setdefault(origin.relation,
                                                              len(relation_index))
                self.distinct[node.id] = parsed[2] == "distinct"


def _stratum(scope):
    """The name of the outermost loop around a node (``None`` outside every loop)."""
    if scope is None or scope.parent is None:
        return None
    while scope.parent.parent is not None:
        scope = scope.parent
    return scope.label.removeprefix("stratum ")


class ProfileRecorder:
    """Collects a profile from a traced program's runs (see the module docstring).

    ``program`` names the profiled file; :meth:`sink` is the program's ``trace=``,
    :meth:`attach` the program once compiled, :meth:`step_done` after each commit,
    :meth:`note_sizes` now and then, :meth:`profile` the result (a JSON-ready dict).
    """

    def __init__(self, program: str, partitions: int | None = None):
        self.program, self.partitions = program, partitions
        self.rules: dict = {}       # (location, text) -> rule record, in discovery order
        self.relations: dict = {}   # name -> relation record
        self.others: dict = {}      # operator name -> number
        self._nodes = None          # (graph, _Nodes)
        self._source = None         # the program, whose graph names the nodes
        self._activity: list = []   # arrays (step, kind, key, round, time, tuples, in, calls)
        self._compiled: list = []   # rows of COMPILED_COLUMNS
        self.steps: list = []

    def sink(self):
        """The trace sink to give ``Program(trace=...)``: compiled rounds stay on."""
        from diffflow.runtime.trace_sink import TraceSink

        return TraceSink(self.record, option="--profile ", compiled_rounds=True)

    def attach(self, program) -> None:
        """The program whose graph names the traced operators."""
        self._source = program
        self.partitions = program.partitions

    def _graph_nodes(self) -> _Nodes:
        graph = self._source.flow.graph
        if self._nodes is None or self._nodes[0] is not graph:  # (a re-plan builds a new one)
            self._nodes = (graph, _Nodes(graph, self.rules, self.relations, self.others))
        return self._nodes[1]

    def record(self, events) -> None:
        """One run's events (the trace callback): charge every step to its rule or relation."""
        if self._source is None or not len(events):
            return
        nodes = self._graph_nodes()
        order = np.lexsort((events.seq, events.w))
        kind, act, t = events.kind[order], events.act[order], events.t[order]
        ends = np.flatnonzero((kind == END) & (act == _SCHEDULING))
        ends = ends[ends > 0]
        ends = ends[(kind[ends - 1] == START) & (act[ends - 1] == _SCHEDULING)]
        picked = order[ends]
        op = events.op[picked]
        known = (op >= 0) & (op < len(nodes.kind))
        picked, op, duration = picked[known], op[known], (t[ends] - t[ends - 1])[known]
        out = np.maximum(events.out[picked], 0)
        rows_in = np.maximum(events.n[picked], 0)
        node_kind = nodes.kind[op]
        tuples = np.where(node_kind == RULE, np.where(nodes.head[op], out, 0),
                          np.where(node_kind == RELATION, np.where(nodes.distinct[op], out, 0),
                                   out))
        self._activity.append(np.stack([events.e[picked], node_kind, nodes.key[op],
                                        events.r[picked], duration, tuples, rows_in,
                                        np.ones(len(op), np.int64)], 1))
        self._record_compiled(events, order, nodes)

    def _record_compiled(self, events, order, nodes) -> None:
        kind, act = events.kind[order], events.act[order]
        for end in np.flatnonzero((kind == END) & (act == _PROCESSING)).tolist():
            if end == 0 or kind[end - 1] != START or act[end - 1] != _PROCESSING:
                continue
            a, b = order[end - 1], order[end]
            stratum = nodes.stratum.get(int(events.op[b]), f"loop at node {events.op[b]}")
            self._compiled.append([int(events.e[b]), stratum, int(events.r[a]), int(events.r[b]),
                                   int(events.t[b] - events.t[a]), int(events.n[b]),
                                   int(events.out[b])])

    def step_done(self, step: int, wall_ns: int) -> None:
        """Update step ``step`` (0: the initial run) took ``wall_ns``."""
        self.steps.append({"step": step, "wall_ns": int(wall_ns), "sizes": {}})

    def note_sizes(self, program) -> None:
        """The sizes of the relations the program observes (``.output``, ``.printsize``),
        after the last step done.  Counting costs about a pass over each relation, so
        ``diffflow run`` notes them after the last step only."""
        sizes = {}
        for name in program.relations:
            try:
                sizes[name] = program.size(name)
            except (KeyError, ValueError):
                continue  # (not observed)
        if self.steps:
            self.steps[-1]["sizes"] = sizes

    def profile(self) -> dict:
        """The profile as a JSON-ready dict (:func:`.profile_file.new_profile`'s layout)."""
        rows = _summed(np.concatenate(self._activity) if self._activity
                       else np.zeros((0, len(ACTIVITY_COLUMNS)), np.int64))
        rule_ids = _rule_ids(self.rules)
        relation_names = list(self.relations)
        other_names = list(self.others)
        step_of = [s["step"] for s in self.steps]  # (epoch i is the i-th commit)
        activity = []
        for epoch, kind, key, rnd, *rest in rows.tolist():
            step = step_of[epoch] if 0 <= epoch < len(step_of) else epoch
            if kind == RULE:
                ident = rule_ids[key]
            elif kind == RELATION:
                ident = relation_names[key]
            else:
                ident = other_names[key]
            activity.append([step, _KINDS[kind], ident, rnd, *rest])
        rules = [{"id": rule_ids[i], **record} for i, record in enumerate(self.rules.values())]
        rules.sort(key=lambda r: r["id"])
        compiled = [[step_of[row[0]] if 0 <= row[0] < len(step_of) else row[0], *row[1:]]
                    for row in self._compiled]
        return new_profile(self.program, self.partitions, self.steps, rules,
                           list(self.relations.values()), activity, compiled)


def _summed(rows: np.ndarray) -> np.ndarray:
    """Rows ``(step, kind, key, round, time, tuples, rows_in, calls)`` summed per
    ``(step, kind, key, round)``, sorted by it."""
    if not len(rows):
        return rows
    keys, inverse = np.unique(rows[:, :4], axis=0, return_inverse=True)
    sums = np.zeros((len(keys), rows.shape[1] - 4), np.int64)
    np.add.at(sums, inverse.reshape(-1), rows[:, 4:])
    return np.concatenate([keys, sums], 1)


def _rule_ids(rules: dict) -> list:
    """Rule numbers from 1 in source order (file, then line), per discovery index.

    >>> _rule_ids({("a.dl:10", "x"): {}, ("a.dl:9", "y"): {}})
    [2, 1]
    """
    def place(key):
        file, _, line = key[0].rpartition(":")
        return (file, int(line) if line.isdigit() else 0, key[1])

    ranked = sorted(range(len(rules)), key=lambda i: place(list(rules)[i]))
    ids = [0] * len(rules)
    for rank, i in enumerate(ranked, 1):
        ids[i] = rank
    return ids
