"""Point queries and standing queries: ``tc(30, y)`` computed only as far as it asks.

:meth:`Program.query <diffflow.datalog.program.Program.query>` reads a pattern --
a relation with constants, variables and ``_`` -- and returns the facts that match.
A relation the program computes whole is filtered.  Otherwise the pattern's constants
are *asked*: each relation and adornment (``tc`` with its first argument bound:
``bf``) gets one :class:`QueryEngine`, a dataflow of the program after the demand
transformation (:mod:`~diffflow.datalog.transform.magic`) whose magic relation
``tc#bf#magic`` is an input.  Asking inserts the constants there, so the engine
derives the facts of ``tc`` those constants demand (for ``tc(30, y)``: the paths from
30) and nothing else -- as Differential Dataflow's interactive queries keep the
queries themselves as an input collection.

Every query with the same adornment shares the engine; the engine keeps the
program's input facts, and each :meth:`~diffflow.datalog.program.Program.commit`
brings it up to date.  A one-shot query's constants are withdrawn with the next
change the engine computes (so asking the same thing again right away costs nothing);
a standing query (``live=True``) keeps them until :meth:`StandingQuery.close`, and its
:meth:`~StandingQuery.changes` list the facts entering and leaving its answer, read
from the engine's output changes (cost follows the change).  See docs/DATALOG.md §3.

>>> import diffflow as dd
>>> p = dd.Program('''
...     .decl e(x: number, y: number)
...     .decl tc(x: number, y: number)
...     tc(x, y) :- e(x, y).
...     tc(x, z) :- tc(x, y), e(y, z).
... ''', outputs=[])
>>> _ = p.insert("e", [(1, 2), (2, 3), (5, 6)]); p.commit()
>>> p.query("tc(1, y)")
[(1, 2), (1, 3)]
>>> live = p.query("tc(x, 3)", live=True)
>>> live.changes()
[((1, 3), 1), ((2, 3), 1)]
>>> _ = p.remove("e", [(2, 3)]); _ = p.insert("e", [(6, 3)]); p.commit()
>>> live.rows(), live.changes()
([(5, 3), (6, 3)], [((1, 3), -1), ((2, 3), -1), ((5, 3), 1), ((6, 3), 1)])
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from diffflow.arrangements import columnar
from diffflow.arrangements.updates import concat
from diffflow.common.schema import decode_rows, encode_column
from diffflow.datalog.lower.columns import COLUMN_TYPE
from diffflow.datalog.lower.compiler import compile_program
from diffflow.datalog.lower.join_order import distinct_counts, estimate_sizes
from diffflow.datalog.lower.rows import record_values, structured_positions
from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import did_you_mean
from diffflow.datalog.syntax.intrinsics import NUMBER_RANGE, UNSIGNED_RANGE
from diffflow.datalog.transform.magic import (Unstratifiable, adorned_name, demand_transform,
                                              magic_name)
from diffflow.datalog.values.structures import row_order


@dataclass
class Pattern:
    """A parsed query: ``constants`` (position -> Python value), ``same`` (pairs of
    positions a repeated variable makes equal), and the adornment (``b`` where a constant
    stands)."""
    relation: str
    arity: int
    constants: dict
    same: list
    text: str

    @property
    def adornment(self) -> str:
        return "".join("b" if i in self.constants else "f" for i in range(self.arity))


def parse_pattern(text: str, relations: dict, structures: dict, inlined=()) -> Pattern:
    """``tc(30, y)`` as a :class:`Pattern` of a relation of ``relations``.

    >>> from diffflow.datalog.analysis.analysed import Relation
    >>> tc = Relation("tc", ["x", "y"], ["number", "number"], None)
    >>> parse_pattern("tc(-3, _)", {"tc": tc}, {}).constants
    {0: -3}
    >>> parse_pattern("tc(x, x)", {"tc": tc}, {}).same
    [(0, 1)]
    """
    from diffflow.datalog.syntax.parser import parse_atom

    hint = "write an atom as in a rule body, e.g. tc(30, y): constants, variables and _"
    atom = parse_atom(text, "query", hint)
    relation = relations.get(atom.relation)
    if relation is None and atom.relation in inlined:
        raise ValueError(f"the query {text!r}: relation {atom.relation!r} is declared inline, "
                         f"so it is unfolded into the rules that use it and never computed; "
                         f"remove 'inline' from its .decl to query it")
    if relation is None:
        raise KeyError(f"unknown relation {atom.relation!r} in the query {text!r}"
                       f"{did_you_mean(atom.relation, relations)}")
    if len(atom.args) != relation.arity:
        raise ValueError(f"the query {text!r} gives {len(atom.args)} argument(s); "
                         f"{relation.name} has {relation.arity}")
    if structured_positions(relation, structures):
        raise ValueError(f"the query {text!r}: queries on relations with record or ADT "
                         f"attributes are not supported yet; read the relation whole instead "
                         f"(Program.relation, or an .output with diffflow run)")
    constants, first, same = {}, {}, []
    for i, arg in enumerate(atom.args):
        negative = isinstance(arg, ast.Negative) and isinstance(arg.operand,
                                                                (ast.Number, ast.Float))
        value = arg.operand if negative else arg
        if isinstance(value, (ast.Number, ast.Float, ast.String)):
            constants[i] = -value.value if negative else value.value
        elif isinstance(arg, ast.Var):
            if arg.name in first:
                same.append((first[arg.name], i))
            else:
                first[arg.name] = i
        elif not isinstance(arg, ast.Wildcard):
            raise ValueError(f"the query {text!r}: argument {i + 1} is neither a constant, a "
                             f"variable nor _; {hint}")
    return Pattern(relation.name, relation.arity, constants, same, text)


def encode_constants(pattern: Pattern, relation, symbols) -> dict:
    """Position -> the constant's code in the relation's column (raises for a value
    of the wrong type)."""
    codes = {}
    for i, value in pattern.constants.items():
        kind = relation.types[i]
        where = f"the query {pattern.text!r}: attribute {relation.attributes[i]!r}"
        if kind in ("number", "unsigned") and isinstance(value, int):
            low, high = NUMBER_RANGE if kind == "number" else UNSIGNED_RANGE
            if not low <= value <= high:
                raise ValueError(f"{where} = {value} does not fit a 32-bit {kind}")
        try:
            code = encode_column(np.array([value], dtype=object), COLUMN_TYPE[kind], symbols,
                                 where)
        except TypeError:
            raise ValueError(f"{where} is a {kind}, not {value!r}") from None
        codes[i] = int(code[0])
    return codes


def matching(rows: np.ndarray, codes: dict, same: list) -> np.ndarray:
    """The mask of encoded ``rows`` that match a pattern's constants and repeats."""
    mask = np.ones(len(rows), bool)
    for i, code in codes.items():
        mask &= rows[:, i] == code
    for i, j in same:
        mask &= rows[:, i] == rows[:, j]
    return mask


class QueryEngine:
    """The demand-transformed dataflow answering every query of one relation and adornment."""

    def __init__(self, program, relation: str, adornment: str):
        self.program, self.relation, self.adornment = program, relation, adornment
        asks = "b" in adornment
        full = program._analysis()
        try:
            analysed = demand_transform(full, roots=[] if asks else [relation],
                                        seeds=[(relation, adornment)] if asks else [])
        except Unstratifiable:  # compute the relation whole in the engine, adorning nothing
            asks = False
            analysed = demand_transform(full, roots=[relation], transformable=())
        self.target = adorned_name(relation, adornment) \
            if adorned_name(relation, adornment) in analysed.relations else relation
        self.magic = magic_name(relation, adornment) if asks else None
        # with no magic rules of its own, the magic relation holds exactly the asked
        # constants, so no fact matched a new constant before it was asked
        self.only_asked = asks and not analysed.relations[self.magic].clauses
        partitions, max_rounds, options = engine_settings(program)
        sizes = estimate_sizes(analysed, {n: len(r) for n, r in program._committed.items()})
        self.compiled = compile_program(analysed, partitions, [self.target], max_rounds,
                                        options, sizes=sizes if any(sizes.values()) else None,
                                        symbols=program.flow.symbols,
                                        distinct=distinct_counts(program._committed))
        self.flow = self.compiled.flow
        self.output = self.compiled.outputs[self.target]
        if self.compiled.unit is not None:
            self.compiled.unit.insert([0])
        for name, rows in program._committed.items():
            if len(rows) and name in self.compiled.inputs:
                self.compiled.inputs[name]._stage_encoded(rows, np.ones(len(rows), np.int64))
        # (input, rows, diffs) the program staged since its commit, first those staged
        # before the engine was built
        self.pending: list = staged_changes(program)
        self.present: set = set()  # constants in the magic relation now
        self.held: dict = {}       # constants -> the standing queries holding them
        self.withdraw: set = set()  # constants to take back with the next computation
        # constants one-shot queries asked, oldest first: kept (so asking again is free)
        # until there are more than ``kept_answers``, then the older half is taken back
        self.recent: dict = {}
        self.kept_answers = 64
        self.entered = None  # (rows, diffs) the last computation changed in the output
        self.standing: list = []
        self._run()

    # -- the program's facts -----------------------------------------------------------------
    def stage(self, name: str, rows, diffs) -> None:
        if name in self.compiled.inputs:
            self.pending.append((name, rows, diffs))

    def commit(self) -> None:
        """Bring the engine to the program's last commit (what it staged since)."""
        for name, rows, diffs in self.pending:
            self.compiled.inputs[name]._stage_encoded(rows, diffs)
        self.pending = []
        self._run()

    # -- asking ----------------------------------------------------------------------------
    def ask(self, codes: dict, same=(), holder=None) -> np.ndarray:
        """Make the engine hold the facts ``codes`` ask for (computing them if new) and
        return them, encoded; ``holder``: a standing query keeping them, else they are
        withdrawn after :meth:`done`."""
        if self.magic is None or self.target == self.relation:  # (computed whole)
            rows = self.contents()
            return rows[matching(rows, codes, same)]
        key = tuple(codes[i] for i in sorted(codes))
        if holder is not None:
            self.held.setdefault(key, []).append(holder)
        self.withdraw.discard(key)
        self.recent.pop(key, None)
        if key in self.present:
            rows = self.contents()
            return rows[matching(rows, codes, same)]
        self.present.add(key)
        self._magic_change(key, +1)
        self._run()
        if self.only_asked:  # what entered now is the whole answer
            rows, diffs = self.entered
            return rows[matching(rows, codes, same) & (diffs > 0)]
        rows = self.contents()  # (the constant may have been derived as asked already)
        return rows[matching(rows, codes, same)]

    def done(self, codes: dict, holder=None) -> None:
        """The asker no longer needs the facts (taken back with the next computation,
        unless a standing query holds them)."""
        if self.magic is None or self.target == self.relation:
            return
        key = tuple(codes[i] for i in sorted(codes))
        holders = self.held.get(key, [])
        if holder is not None and holder in holders:
            holders.remove(holder)
        if not holders:
            self.held.pop(key, None)
            self.recent[key] = True
            if len(self.recent) > self.kept_answers:
                for old in list(self.recent)[: len(self.recent) // 2]:
                    del self.recent[old]
                    self.withdraw.add(old)

    def _magic_change(self, key, diff) -> None:
        row = np.array([key], np.int64)
        self.compiled.inputs[self.magic]._stage_encoded(row, np.array([diff], np.int64))

    def _run(self) -> None:
        for key in self.withdraw:
            self.present.discard(key)
            self._magic_change(key, -1)
        self.withdraw = set()
        self.flow.advance()
        rows, diffs = self.entered = self._changes()
        for query in self.standing:
            query.take(rows, diffs)

    def _changes(self):
        runtime = self.flow._runtime
        chunks = runtime.take_output_changes(self.output.node.id)
        width = self.output.node.schema.width
        if not chunks:
            return np.zeros((0, width), np.int64), np.zeros(0, np.int64)
        merged = concat(chunks, width, self.output.node.dim).consolidated()
        return merged.rows, merged.diffs

    def contents(self) -> np.ndarray:
        rows, diffs = self.flow._runtime.output_contents(self.output.node.id)
        return rows[diffs > 0]

    def close(self) -> None:
        self.flow.close()


class StandingQuery:
    """A query kept current by every commit: :meth:`rows` now, :meth:`changes` since the
    last call (see :mod:`diffflow.datalog.query`)."""

    def __init__(self, program, engine: QueryEngine, pattern: Pattern, codes: dict):
        self.program, self.engine, self.pattern, self.codes = program, engine, pattern, codes
        self._rows, self._diffs = [], []
        self.closed = False
        rows = engine.ask(codes, pattern.same, holder=self)
        engine.standing.append(self)
        self.take(rows, np.ones(len(rows), np.int64))  # the first answer enters

    def take(self, rows, diffs) -> None:
        mask = matching(rows, self.codes, self.pattern.same)
        if mask.any():
            self._rows.append(rows[mask])
            self._diffs.append(diffs[mask])

    def rows(self) -> list:
        """The facts matching the query after the last commit, sorted.

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number, y: number)", outputs=[])
        >>> _ = p.insert("e", [(1, 2), (1, 3)]); p.commit()
        >>> p.query("e(1, y)", live=True).rows()
        [(1, 2), (1, 3)]
        """
        rows = self.engine.contents()
        return decoded(self.program, self.pattern.relation, self.engine.output,
                                    rows[matching(rows, self.codes, self.pattern.same)])

    def changes(self) -> list:
        """Net ``[(fact, +1 or -1)]`` since the previous call (or since it was asked), sorted."""
        if not self._rows:
            return []
        rows = np.concatenate(self._rows)
        diffs = np.concatenate(self._diffs)
        self._rows, self._diffs = [], []
        rows, _, diffs = columnar.consolidate(rows, np.zeros((len(rows), 1), np.int64), diffs)
        keep = diffs != 0
        rows, diffs = rows[keep], diffs[keep]
        facts = decoded(self.program, self.pattern.relation, self.engine.output, rows, sort=False)
        items = list(zip(facts, np.sign(diffs).tolist()))
        return sorted(items, key=lambda item: (row_order(item[0]), item[1]))

    def close(self) -> None:
        """Stop keeping the query current (its constants then count among the last asked
        one-shot constants, withdrawn once older than the last 64)."""
        if not self.closed:
            self.closed = True
            self.engine.standing.remove(self)
            self.engine.done(self.codes, self)

    def __repr__(self) -> str:
        return f"StandingQuery({self.pattern.text!r})"


def answer(program, pattern: str, live: bool = False):
    """:meth:`Program.query <diffflow.datalog.program.Program.query>`: filter a relation
    the program computes whole, else ask the relation's engine."""
    parsed = parse_pattern(pattern, program.full_analysed.relations,
                           program.analysed.structures, program.analysed.inlined)
    relation = program.full_analysed.relations[parsed.relation]
    codes = encode_constants(parsed, relation, program.flow.symbols)
    whole = program._compiled.outputs.get(parsed.relation)
    if not live and whole is not None and not program.provenance:
        rows = program._encoded(parsed.relation)
        return decoded(program, parsed.relation, whole, rows[matching(rows, codes, parsed.same)])
    engine = program._engine(parsed.relation, parsed.adornment)
    if live:
        return StandingQuery(program, engine, parsed, codes)
    facts = decoded(program, parsed.relation, engine.output, engine.ask(codes, parsed.same))
    engine.done(codes)
    return facts


def engine_settings(program) -> tuple:
    """``(partitions, max_rounds, runtime options)`` a query engine is built with: the
    program's runtime, without its trace and checkpoints (those files are the program's)."""
    partitions, max_rounds, options = program._engine_options
    options = {k: v for k, v in options.items() if k in ("runtime", "spark")}
    return program.flow.partitions if partitions is None else partitions, max_rounds, options


def staged_changes(program) -> list:
    """``[(input relation, encoded rows, diffs)]``: what the program staged since its last
    commit (the facts present now minus those present then)."""
    staged = []
    for name, now in program._present.items():
        then = program._committed[name]
        if now is then:
            continue
        rows = np.concatenate([now, then])
        diffs = np.concatenate([np.ones(len(now), np.int64), -np.ones(len(then), np.int64)])
        rows, _, diffs = columnar.consolidate(rows, np.zeros((len(rows), 1), np.int64), diffs)
        if (diffs != 0).any():
            staged.append((name, rows[diffs != 0], diffs[diffs != 0]))
    return staged


def decoded(program, name: str, output, rows, sort: bool = True) -> list:
    """Encoded rows of relation ``name`` read from ``output``, as Python tuples."""
    return decode_facts(program.full_analysed.relations[name], output, rows,
                        program.analysed.structures, program.flow.symbols, sort)


def decode_facts(relation, output, rows, structures, symbols, sort: bool = True) -> list:
    """Encoded rows of ``relation`` (read from ``output``) as Python tuples (sorted by value
    with ``sort``)."""
    if relation.arity == 0:
        return [()] * min(len(rows), 1)
    numeric = all(kind in ("number", "unsigned") for kind in relation.types)
    if sort and numeric and len(rows):  # (their codes sort as their values)
        rows = rows[np.lexsort(rows.T[::-1])]
    facts = record_values(relation, decode_rows(rows, output.node.schema, symbols), structures,
                          symbols)
    return sorted(facts, key=row_order) if sort and not numeric else facts
