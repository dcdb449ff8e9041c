"""``dd.Program``: a Datalog program kept up to date as facts are inserted and removed.

>>> import diffflow as dd
>>> p = dd.Program('''
...     .decl edge(x: number, y: number)
...     .decl path(x: number, y: number)
...     path(x, y) :- edge(x, y).
...     path(x, z) :- path(x, y), edge(y, z).
... ''')
>>> new = p.insert("edge", [(1, 2), (2, 3)]); p.commit()
>>> sorted(p.relation("path"))
[(1, 2), (1, 3), (2, 3)]
>>> p.changes("path")
[((1, 2), 1), ((1, 3), 1), ((2, 3), 1)]
>>> gone = p.remove("edge", [(2, 3)]); p.commit(); p.changes("path")
[((1, 3), -1), ((2, 3), -1)]
"""
from __future__ import annotations

import warnings as _warnings

import numpy as np

from diffflow.api.features import FlowAccess
from diffflow.arrangements import columnar
from diffflow.datalog import program_durable
from diffflow.datalog.analysis.pragmas import jobs_value
from diffflow.datalog.lower.compiler import compile_program
from diffflow.datalog.lower.rows import (encode_facts, record_values, structured_positions)
from diffflow.datalog.passes import analyse, front_end, magic_sets
from diffflow.datalog.program_files import ProgramFiles
from diffflow.datalog.program_queries import ProgramQueries
from diffflow.datalog.syntax.errors import DatalogError, decode_utf8, did_you_mean


def read_program_text(path) -> str:
    """A ``.dl`` file's text; a file that cannot be read or is not UTF-8 is a DatalogError.

    >>> read_program_text("no/such.dl")
    Traceback (most recent call last):
    ...
    diffflow.common.errors.DatalogError: no/such.dl: error: cannot read the program: No such file or directory
    """
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        raise DatalogError(f"cannot read the program: {exc.strerror or exc}",
                           filename=str(path)) from None
    return decode_utf8(data, str(path), "the program")


class Program(ProgramQueries, ProgramFiles):
    """A compiled Datalog program over the local runtime.

    ``source`` is Soufflé-style Datalog text.  Input relations (``.input``,
    relations with facts in the text, and relations without rules) accept
    :meth:`insert` and :meth:`remove`; every relation can be read after
    :meth:`commit` with :meth:`relation`, :meth:`size` and :meth:`changes`.
    Relations are sets: inserting a present fact or removing an absent one
    changes nothing.  ``outputs`` limits which relations can be read (all by
    default; fewer saves the memory of their result copies; ``"directives"``
    means those with ``.output`` or ``.printsize``).  A recursive stratum has no
    round limit by default, as in Soufflé (a recursion may need millions of
    rounds); with ``max_rounds=N`` one still changing after ``N`` rounds raises
    :class:`~diffflow.NonConvergenceError`.  ``partitions`` splits the state
    (default: ``.pragma "jobs"``, else 1).
    ``runtime``, ``spark``, ``checkpoint_every`` and ``checkpoint_dir`` choose
    where it runs, as for :class:`~diffflow.Dataflow` (``runtime="spark"``
    needs ``spark=session``); ``trace`` (a file path or a function) records
    what every partition worker does in each commit (see
    :mod:`diffflow.runtime.tracing`); ``memory_limit`` (bytes, or ``"512MiB"``...)
    stops a rule about to allocate past it, naming the rule's ``file:line``, as for
    :class:`~diffflow.Dataflow`.  ``durable=True`` (with ``checkpoint_dir``) logs
    every commit before computing it, and ``resume=True`` continues from what a crashed
    run left there (docs/DURABILITY.md).  ``changes=False`` keeps no change feeds: a
    feed holds each change until :meth:`changes` reads it, so a long-running program
    that only reads contents (:meth:`rows`, :meth:`relation`) saves that memory.

    Text with ``#include``, ``#define``, ``#if``... goes through the C
    preprocessor first, as in Soufflé (see :mod:`~diffflow.datalog.syntax.preprocess`):
    ``include_dirs`` and ``macros`` are Soufflé's ``-I DIR`` and
    ``-M "NAME=VALUE"``.  ``pragmas`` holds the program's ``.pragma`` settings
    (``.pragma "max-rounds" "N"`` applies when ``max_rounds`` is not given);
    ``warnings`` the :class:`~diffflow.datalog.syntax.errors.DatalogWarning` s found, which
    are also issued with :func:`warnings.warn` unless ``.pragma "no-warn"``.
    Relations declared ``inline`` are unfolded into the rules that use them
    and cannot be read.
    """

    def __init__(self, source: str, partitions: int | None = None, filename: str = "<program>",
                 outputs=None, max_rounds: int | None = None, *, runtime: str = "local",
                 spark=None, checkpoint_every: int | None = None,
                 checkpoint_dir: str | None = None, include_dirs=None, macros=None, trace=None,
                 provenance: bool | None = None, functors: dict | None = None,
                 memory_limit: int | str | None = None, durable: bool = False,
                 resume: bool = False, changes: bool = True):
        self.source, self.filename = source, filename
        self.keeps_changes = bool(changes)
        self._text_options = {"include_dirs": include_dirs, "macros": macros,
                              "functors": functors}  # (what a replica is built with)
        text, self.ast, self.analysed = front_end(source, filename, include_dirs, macros,
                                                  functors)
        self.relations = self.analysed.relations
        self.pragmas = dict(self.analysed.pragmas)
        self.warnings = [*getattr(text, "warnings", []), *self.analysed.warnings]
        if "max-rounds" in self.pragmas and max_rounds is None:
            max_rounds = int(self.pragmas["max-rounds"])  # the caller's value wins
        if partitions is None:  # likewise .pragma "jobs"
            partitions = jobs_value(self.pragmas.get("jobs")) or 1
        if isinstance(outputs, str) and outputs == "directives":
            outputs = [r.name for r in self.relations.values() if r.outputs or r.printsize]
        if outputs is not None:
            for name in outputs:
                self._relation(name)
        self.full_analysed = self.analysed  # (before magic sets: what queries transform)
        if not provenance and "provenance" not in self.pragmas:
            self.analysed = magic_sets(self.analysed, outputs)
            self.relations = self.analysed.relations
            self.warnings += [w for w in self.analysed.warnings if w not in self.warnings]
        options = dict(runtime=runtime, spark=spark, checkpoint_every=checkpoint_every,
                       checkpoint_dir=checkpoint_dir, trace=trace, memory_limit=memory_limit,
                       durable=durable, resume=resume)
        if provenance is None:  # Soufflé's switch: .pragma "provenance" "explain"
            provenance = "provenance" in self.pragmas
        self.provenance = bool(provenance)
        if self.provenance and any(r.eqrel for r in self.relations.values()):
            # an eqrel's facts need proofs: its closure as rules
            self.analysed = analyse(self.ast, text, functors, eqrel_as_rules=True)
            self.relations = self.analysed.relations
        if self.provenance:  # explanations read every relation (explain_absent, replays)
            from diffflow.datalog.explain.witness import Lookups
            from diffflow.datalog.lower.provenance import compile_provenance
            self._compiled = compile_provenance(self.analysed, partitions, None, max_rounds,
                                                options, changes=self.keeps_changes)
            # witnesses read between commits from the partitions' own arrangements
            self._compiled.lookups = Lookups(self._compiled.flow,
                                             self._compiled.collections, self.relations)
        else:
            self._compiled = compile_program(self.analysed, partitions, outputs, max_rounds,
                                             options, changes=self.keeps_changes)
        # (the join order is revisited once, with the facts of the first commit)
        self._build = None if self.provenance else (partitions, outputs, max_rounds, options)
        self._engine_options = (partitions, max_rounds, options)
        self._engines: dict = {}  # (relation, adornment) -> QueryEngine (see .query)
        self.flow = self._compiled.flow
        self.warnings += self._compiled.warnings  # (rules that are cross products)
        if "no-warn" not in self.pragmas:
            for warning in self.warnings:
                _warnings.warn(warning, stacklevel=2)
        self._watches: list = []   # live explanations, refreshed by every commit
        self._present = {name: np.zeros((0, inp.schema.width), np.int64)
                         for name, inp in self._compiled.inputs.items()}
        self._committed = dict(self._present)  # the facts as of the last commit
        self._change_marks: dict = {}
        if self.flow.durable:  # (a resumed program must compile to the same dataflow)
            self._build = None
            if program_durable.attach(self):
                return  # (its facts, the unit row and the text's facts included)
        if self._compiled.unit is not None:
            self._compiled.unit.insert([0])
        for relation in self.relations.values():
            if relation.facts:
                rows = [tuple(arg.value for arg in rule.head.args) for rule in relation.facts]
                self.insert(relation.name, rows)

    def __getstate__(self) -> dict:
        state = dict(self.__dict__)
        state["_engines"] = {}  # (query engines are built again on demand)
        return state

    def __setstate__(self, state: dict) -> None:
        """Unpickled: query engines start afresh, and nothing is compiled again from the
        analysis, whose term types are keyed by the ids of nodes that moved (see
        :meth:`_analysis`); a program pickled before queries gets what they keep."""
        self.__dict__.update(state)
        self._engines, self._build, self._stale_analysis = {}, None, True
        self.__dict__.setdefault("_committed", dict(self._present))
        self.__dict__.setdefault("keeps_changes", True)
        self.__dict__.setdefault("full_analysed", self.analysed)
        self.__dict__.setdefault("_engine_options", (None, None, {}))

    def _analysis(self):
        """The analysed program to compile query engines from (analysed again after
        unpickling: term types are keyed by node ids)."""
        if self.__dict__.get("_stale_analysis"):
            _, _, self.full_analysed = front_end(self.source, self.filename,
                                                 **self._text_options)
            self._stale_analysis = False
        return self.full_analysed

    @classmethod
    def from_file(cls, path, partitions: int | None = None, outputs=None,
                  max_rounds: int | None = None, **runtime_options) -> "Program":
        """Read and compile a ``.dl`` file (errors name the file; ``#include`` looks next
        to it first; ``include_dirs`` and ``macros`` as for :class:`Program`)."""
        return cls(read_program_text(path), partitions=partitions, filename=str(path),
                   outputs=outputs, max_rounds=max_rounds, **runtime_options)

    def close(self) -> None:
        """Stop the workers of a multi-process or Spark runtime (see :meth:`Dataflow.close`).

        >>> Program(".decl e(x: number)").close()
        """
        self.flow.close()
        for engine in self._engines.values():
            engine.close()

    # -- rescaling (see Dataflow.rescale) -----------------------------------------------------
    def rescale(self, partitions: int | None = None, strategy: str = "batched", **kw):
        """Move the program to ``partitions`` partitions while facts keep changing, a step
        per :meth:`commit` (:meth:`Dataflow.rescale`; relations stay exact).

        >>> p = Program(".decl e(x: number)\\n.decl r(x: number)\\nr(x) :- e(x).", partitions=2)
        >>> _ = p.insert("e", [(1,), (2,)]); p.commit()
        >>> plan = p.rescale(partitions=3, strategy="all_at_once"); p.commit()
        >>> p.partitions, plan.done, sorted(p.relation("r"))
        (3, True, [(1,), (2,)])
        """
        return self.flow.rescale(partitions, strategy, **kw)

    def rebalance(self, strategy: str = "batched", **kw):
        """Even out the rows per partition by moving bins (:meth:`Dataflow.rebalance`)."""
        return self.flow.rebalance(strategy, **kw)

    @property
    def partitions(self) -> int:
        """The partitions the program runs on now."""
        return self.flow.partitions

    @property
    def migration(self):
        """The rescaling plan in progress, or ``None`` (:attr:`Dataflow.migration`)."""
        return self.flow.migration

    # -- facts in -------------------------------------------------------------------------
    def _relation(self, name):
        relation = self.relations.get(name)
        if relation is None and name in getattr(self.analysed, "on_demand", {}):
            raise ValueError(f"relation {name!r} is not computed whole: magic sets compute "
                             f"only what the outputs ask of it; ask with Program.query("
                             f"'{name}(...)'), or name it in outputs=[...]")
        if relation is None and name in self.analysed.inlined:
            raise ValueError(f"relation {name!r} is declared inline: it is unfolded into the "
                             f"rules that use it and never computed, so it has no facts to "
                             f"read or change; remove 'inline' from its .decl to use it")
        if relation is None:
            raise KeyError(f"unknown relation {name!r}{did_you_mean(name, self.relations)}; "
                           f"relations: {', '.join(self.relations)}")
        return relation

    def _input(self, name):
        relation = self._relation(name)
        inp = self._compiled.inputs.get(name)
        if inp is None:
            raise ValueError(f"relation {name!r} is computed by rules and takes no facts; "
                             f"declare it .input to add facts to it as well")
        return relation, inp

    def encode(self, name: str, rows) -> np.ndarray:
        """Validate and encode rows for an input relation (raises, changing nothing)."""
        relation, inp = self._input(name)
        return encode_facts(relation, rows, inp, self.analysed.structures, self.flow.symbols)

    def _record_values(self, name, rows) -> list:
        """Decoded rows with their record and ADT ids as Python values."""
        return record_values(self.relations[name], rows, self.analysed.structures,
                             self.flow.symbols)

    def insert(self, name: str, rows) -> int:
        """Add facts (tuples, a 2-D int array, or a DataFrame); returns how many were new.

        >>> p = Program(".decl e(x: number)")
        >>> p.insert("e", [(1,), (1,), (2,)])
        2
        """
        return self._change(name, self.encode(name, rows), +1)

    def remove(self, name: str, rows) -> int:
        """Remove facts; absent ones are ignored.  Returns how many were present.

        >>> p = Program(".decl e(x: number)"); p.insert("e", [(1,)])
        1
        >>> p.remove("e", [(1,), (5,)])
        1
        """
        return self._change(name, self.encode(name, rows), -1)

    def _change(self, name, encoded, sign) -> int:
        if len(encoded) == 0:
            return 0
        zeros = np.zeros((len(encoded), 1), np.int64)
        unique, _, _ = columnar.consolidate(encoded, zeros, np.ones(len(encoded), np.int64))
        present = self._present[name]
        member = np.zeros(len(unique), bool)
        if len(present):
            at = columnar.searchsorted_rows(present, unique)
            inside = at < len(present)
            member[inside] = np.all(present[at[inside]] == unique[inside], axis=1)
        changed = unique[~member] if sign > 0 else unique[member]
        if len(changed) == 0:
            return 0
        diffs = np.full(len(changed), sign, np.int64)
        merged = columnar.merge_consolidated(present, np.zeros((len(present), 1), np.int64),
                                             np.ones(len(present), np.int64),
                                             changed, np.zeros((len(changed), 1), np.int64), diffs)
        self._present[name] = merged[0]
        self._compiled.inputs[name]._stage_encoded(changed, diffs)
        for engine in self._engines.values():
            engine.stage(name, changed, diffs)
        return len(changed)

    def commit(self) -> None:
        """Compute every relation for the facts inserted and removed so far."""
        from diffflow.common.errors import NonConvergenceError

        if self._build is not None:
            self.plan_by_sizes()
            self._build = None  # (after the first commit orders stay: see plan_by_sizes)
        try:
            self.flow.advance()
        except NonConvergenceError as exc:
            if exc.scope is None:
                raise
            stratum = exc.scope.label.removeprefix("stratum ")
            raise NonConvergenceError(
                f"{exc.scope.location}: error: the recursion of {stratum} was still deriving "
                f"new facts "
                f"after {exc.scope.max_rounds} rounds (the max-rounds limit), so its relations "
                f"are cut at that round. If it needs more rounds, raise the limit (diffflow run "
                f"--max-rounds N, .pragma \"max-rounds\" \"N\", Program(max_rounds=N)); if it "
                f"never stops (min through a negative cycle, arithmetic that keeps making new "
                f"values), change the rules.", exc.scope, exc.epochs) from None
        self._committed = dict(self._present)
        for engine in self._engines.values():
            engine.commit()
        for watch in list(self._watches):
            watch.refresh()

    def plan_by_sizes(self, always: bool = False) -> bool:
        """Order every rule's joins by the sizes of the facts given so far, once, before the
        first commit (which calls it); returns whether the program was compiled again
        (when an order changed, or ``always``: so that the plan shows the estimates).
        After the first commit orders stay as they are, so ``changes()`` never sees a
        re-plan.

        >>> p = Program(".decl a(x: number, y: number)\\n.decl b(y: number, z: number)\\n"
        ...             ".decl r(x: number, z: number)\\nr(x, z) :- a(x, y), b(y, z).")
        >>> _ = p.insert("a", [(i, 1) for i in range(100)]); _ = p.insert("b", [(1, 2)])
        >>> p.plan_by_sizes(), p.plan().splitlines()[-1].strip()
        (True, 'scan b(y, z) ~1 → join a(x, y) ~100 on (y)')
        """
        from diffflow.datalog.lower.compiler import recompiled_by_sizes
        from diffflow.datalog.lower.join_order import distinct_counts

        build = self._build
        if build is None:
            return False
        old = self._compiled
        sizes = {name: len(rows) for name, rows in self._present.items()}
        if not any(sizes.values()):
            return False  # (no facts yet: the first commit looks again)
        self._build = None
        compiled = recompiled_by_sizes(old, self.analysed, sizes, *build, always=always,
                                       distinct=distinct_counts(self._present),
                                       changes=self.keeps_changes)
        if compiled is None:
            return False
        self._compiled, self.flow = compiled, compiled.flow
        if compiled.unit is not None:
            compiled.unit.insert([0])
        for name, rows in self._present.items():
            if len(rows):
                compiled.inputs[name]._stage_encoded(rows, np.ones(len(rows), np.int64))
        old.flow.close()
        return True

    # -- results out ---------------------------------------------------------------------------
    def _output(self, name):
        self._relation(name)
        out = self._compiled.outputs.get(name)
        if out is None:
            raise ValueError(f"relation {name!r} is not observed; pass it in outputs=[...]")
        return out

    def relation(self, name: str) -> set:
        """The relation's facts after the last commit, as a set of tuples."""
        snapshot = self._output(name).snapshot()
        if self.relations[name].arity == 0:
            return {()} if snapshot else set()
        return set(self._record_values(name, list(snapshot)))

    def size(self, name: str) -> int:
        """Number of facts in the relation after the last commit (no decoding)."""
        rows = self._encoded(name)
        return len(rows)

    def _encoded(self, name):
        out = self._output(name)
        runtime = FlowAccess(self.flow).runtime
        if runtime is None:
            return np.zeros((0, out.node.schema.width), np.int64)
        rows, diffs = runtime.output_contents(out.node.id)
        rows = rows[diffs > 0]
        return rows

    def rows(self, name: str) -> list:
        """The relation's facts as a list of tuples in a stable order (sorted encoded rows)."""
        out = self._output(name)
        rows = self._encoded(name)
        if self.relations[name].arity == 0:
            return [()] if len(rows) else []
        from diffflow.common.schema import decode_rows
        return self._record_values(name, decode_rows(rows, out.node.schema, self.flow.symbols))

    def changes(self, name: str) -> list:
        """Net ``[(fact, +1 or -1)]`` since the previous call (or the start), sorted.

        >>> p = Program(".decl e(x: number)\\n.decl r(x: number)\\nr(x + 1) :- e(x).")
        >>> _ = p.insert("e", [(1,), (2,)]); p.commit(); p.changes("r")
        [((2,), 1), ((3,), 1)]
        >>> _ = p.remove("e", [(1,)]); p.commit(); p.changes("r")
        [((2,), -1)]
        """
        return self._net(name, self._feed(name).changes())

    def changes_by_epoch(self, name: str) -> dict:
        """What :meth:`changes` would give, per epoch: ``{epoch: [(fact, +1 or -1)]}`` (a
        resumed durable program re-emits the epochs since its checkpoint)."""
        by_epoch: dict = {}
        for change in self._feed(name).changes():
            by_epoch.setdefault(change[1], []).append(change)
        return {epoch: self._net(name, found) for epoch, found in sorted(by_epoch.items())}

    def _feed(self, name: str):
        out = self._output(name)
        if not self.keeps_changes:
            raise ValueError(f"changes of {name}: this program keeps no change feeds (it was "
                             f"made with Program(..., changes=False)); read rows() or "
                             f"relation(), or make it with changes=True")
        return out

    def _net(self, name: str, changes: list) -> list:
        net: dict = {}
        for row, _epoch, diff in changes:
            net[row] = net.get(row, 0) + diff
        nullary = self.relations[name].arity == 0
        items = [(() if nullary else row, d) for row, d in net.items() if d != 0]
        if items and not nullary and structured_positions(self.relations[name],
                                                           self.analysed.structures):
            rows = self._record_values(name, [row for row, _ in items])
            items = list(zip(rows, [d for _, d in items]))
        from diffflow.datalog.values.structures import row_order
        return sorted(items, key=lambda item: (row_order(item[0]), item[1]))

    def plan(self) -> str:
        """The compiled plan: strata, join orders, shared arrangements.

        >>> print(Program(".decl e(x: number, y: number)\\n.decl p(x: number)\\n"
        ...               "p(y) :- e(x, y), x > 2.").plan())
        stratum e
          e: input facts only
        stratum p
          p(y) :- e(x, y), x > 2.
              scan e(x, y) → filter x > 2
        """
        from diffflow.dataflow.rounds import describe_loop_paths

        loops = describe_loop_paths(self.flow.graph, self.flow.symbols)
        lines = list(self._compiled.plan)
        if loops:  # which path each recursive stratum's rounds take
            lines += ["loops"] + [f"  {line}" for line in loops]
        return "\n".join(lines)
