"""Every error diffflow raises on purpose, under one base class :class:`DiffflowError`.

Catch ``DiffflowError`` to catch them all; each subclass also derives from
the builtin it refines (``ValueError`` for bad input, ``RuntimeError`` for
failures while computing), so older ``except ValueError`` code keeps working.

* :class:`GraphError` -- a dataflow built wrongly (unknown column, type clash);
* :class:`ExpressionError` -- an expression that does not fit its columns;
* :class:`DatalogError` / :class:`DatalogWarning` -- a problem in a Datalog
  program or fact file, located as ``file:line:col`` with the line and a caret;
* :class:`OperatorError` -- an operator failed on data (names it and its line);
* :class:`MemoryLimitError` -- an operator would have passed the memory limit (an
  ``OperatorError`` and a ``MemoryError``; :mod:`diffflow.common.memory_budget`);
* :class:`NonConvergenceError` -- a loop still changed after its round limit;
* :class:`WorkerLost` -- a partition worker process or Spark task died;
* :class:`WorkerTimeout` -- a partition worker, alive, did not answer a command in time;
* :class:`ExplainError` -- a row or fact that cannot be explained (not in its output, or
  explanations not switched on);
* :class:`StateFormatError` -- engine state that cannot be saved, or saved bytes that cannot
  be read back (corrupt, truncated, or written by another format version);
* :class:`CheckpointError` -- durable state that cannot be used: a torn or damaged
  checkpoint, another dataflow's state, another format version, or an epoch that could
  not be logged (docs/DURABILITY.md).

Errors survive pickling with their fields, so a partition worker's failure
is raised on the driver as the same type (:mod:`diffflow.runtime.transports`).

>>> import pickle
>>> err = pickle.loads(pickle.dumps(NonConvergenceError("loop 'x' ...", None, {3, 1})))
>>> type(err).__name__, err.epochs, isinstance(err, DiffflowError)
('NonConvergenceError', [1, 3], True)
"""
from __future__ import annotations


class DiffflowError(Exception):
    """Base class of the errors diffflow raises on purpose."""


class GraphError(DiffflowError, ValueError):
    """A dataflow was built wrongly (unknown column, type clash, name clash...)."""


class ExpressionError(GraphError):
    """An expression does not fit the columns or types it is applied to (a kind of GraphError)."""


class OperatorError(DiffflowError, RuntimeError):
    """An operator failed while processing data; names the operator and the user's line."""


class MemoryLimitError(OperatorError, MemoryError):
    """An allocation would have passed the memory limit (``Dataflow(memory_limit=...)``,
    :mod:`diffflow.common.memory_budget`); raised before allocating.  ``needed`` is the
    bytes asked for, ``held`` those already held, ``limit`` the limit, ``what`` the array,
    ``operator`` the operator that asked (empty until the partition engine names it).

    >>> import pickle
    >>> err = pickle.loads(pickle.dumps(MemoryLimitError("join output needs 3.0 GiB, ...",
    ...                                                  3 << 30, 1 << 20, 1 << 30, "join output")))
    >>> err.needed, err.what, isinstance(err, MemoryError), isinstance(err, OperatorError)
    (3221225472, 'join output', True, True)
    """

    def __init__(self, message: str, needed: int = 0, held: int = 0, limit: int = 0,
                 what: str = "", operator: str = ""):
        super().__init__(message)
        self.needed, self.held, self.limit, self.what = needed, held, limit, what
        self.operator = operator

    def __reduce__(self):
        return type(self), (self.args[0], self.needed, self.held, self.limit, self.what,
                            self.operator)


class ExplainError(DiffflowError, ValueError):
    """Something that cannot be explained: a row or fact not in its output, an unknown
    relation, or a dataflow or program built without explanations."""


class StateFormatError(DiffflowError, ValueError):
    """Engine state that cannot be saved (a function, a user object) or saved bytes that
    cannot be read back: truncated, corrupted, crafted, or from another format version
    (:mod:`diffflow.runtime.durable.state_format`)."""


class CheckpointError(DiffflowError, ValueError):
    """A checkpoint or write-ahead log cannot be used: torn, damaged, of another dataflow, or
    of another format version (:mod:`diffflow.runtime.durable.checkpoints`)."""


class WorkerLost(DiffflowError, RuntimeError):
    """A partition worker stopped answering (its process or Spark task died)."""


class WorkerTimeout(DiffflowError, RuntimeError):
    """A partition worker did not answer a command within the coordinator's bound, though
    its connection stayed open (:mod:`diffflow.runtime.reply_wait`).  Not a
    :class:`WorkerLost`: a recovery would replay into the same wait.

    ``partition`` is the silent worker's partition, ``command`` what it was asked.
    """

    def __init__(self, message: str, partition: int | None = None, command: str | None = None):
        super().__init__(message)
        self.partition, self.command = partition, command

    def __reduce__(self):
        return type(self), (self.args[0], self.partition, self.command)


class NonConvergenceError(DiffflowError, RuntimeError):
    """A loop still changed after its round limit (the run finished with the loop cut there).

    ``scope`` is the loop's scope (label, location, ``max_rounds``), ``epochs`` the epochs cut.
    """

    def __init__(self, message: str, scope=None, epochs=()):
        super().__init__(message)
        self.scope, self.epochs = scope, sorted(epochs)

    def __reduce__(self):
        return type(self), (self.args[0], self.scope, self.epochs)


def loop_overflow_error(overflow: dict, scopes) -> NonConvergenceError:
    """The error for loops cut at their round limit: ``overflow`` maps scope ids to epochs.

    Names the first overflowing loop in construction order and then every
    other one, each with the ``file:line`` that built it.

    >>> from diffflow.dataflow.graph import Graph
    >>> g = Graph(); loop = g.new_scope(g.root, "grow", 5)
    >>> print(loop_overflow_error({loop.id: {0}}, g.scopes).args[0].split(";")[0])
    loop 'grow' (built at ...) was still changing after 5 rounds in epoch(s) [0]
    """
    cut = [scopes[sid] for sid in sorted(overflow)]
    first = cut[0]
    message = (f"{first.describe()} was still changing after {first.max_rounds} rounds in "
               f"epoch(s) {sorted(overflow[first.id])}; its results for them are cut at that "
               f"round. Make sure the loop reaches a fixpoint (e.g. distinct() keeps set-valued "
               f"recursion finite) or raise max_rounds. The dataflow stays usable.")
    for other in cut[1:]:
        message += (f" Also cut: {other.describe()} after {other.max_rounds} rounds in epoch(s) "
                    f"{sorted(overflow[other.id])}.")
    return NonConvergenceError(message, first, overflow[first.id])


def caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is ``exc`` or anywhere in its chain of causes.

    Ctrl-C while a numba kernel runs surfaces as a ``SystemError`` whose
    context is the interrupt; callers turn it back into an interrupt.

    >>> try:
    ...     try:
    ...         raise KeyboardInterrupt
    ...     except KeyboardInterrupt:
    ...         raise SystemError("returned a result with an exception set")
    ... except SystemError as exc:
    ...     caused_by_interrupt(exc)
    True
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _restore(cls, args, state):
    obj = cls.__new__(cls)
    Exception.__init__(obj, *args)
    obj.__dict__.update(state)
    return obj


def locate(source, filename: str, line: int | None, column: int | None = None):
    """``(filename, line, column, source line)`` in the text the user wrote.

    ``source`` may be a preprocessed text that maps its lines back to the
    files they came from (its ``origin(line, column)``).

    >>> locate("a.\\nb(1).", "p.dl", 2, 3)
    ('p.dl', 2, 3, 'b(1).')
    """
    origin = getattr(source, "origin", None)
    if origin is not None and line is not None:
        return origin(line, column)
    text = None
    if source is not None and line is not None:
        lines = source.splitlines()
        if 1 <= line <= len(lines):
            text = lines[line - 1]
    return filename, line, column, text


class _Located:
    """The shared ``file:line:col: <kind>: message`` formatting of errors and warnings."""
    kind = "error"

    def __init__(self, message: str, source: str | None = None, filename: str = "<program>",
                 line: int | None = None, column: int | None = None, hint: str | None = None):
        self.message, self.hint = message, hint
        self._where = (source, filename, line, column)  # as raised, for rebuilt()
        self.filename, self.line, self.column, self.source_line = \
            locate(source, filename, line, column)
        super().__init__(self._format())

    def __reduce__(self):  # the located fields as they are (a preprocessed source maps lines)
        state = dict(self.__dict__, _where=(None,) + self._where[1:])
        return _restore, (type(self), self.args, state)

    def rebuilt(self, message: str | None = None, hint: str | None = None):
        """The same report with another message or hint (same place).

        >>> e = DatalogError("bad", "p(1).", "p.dl", 1, 3)
        >>> e.rebuilt(hint="try q").hint, e.rebuilt("worse").message
        ('try q', 'worse')
        """
        source, filename, line, column = self._where
        return type(self)(self.message if message is None else message, source, filename,
                          line, column, self.hint if hint is None else hint)

    def _format(self) -> str:
        where = self.filename
        if self.line is not None:
            where += f":{self.line}"
            if self.column is not None:
                where += f":{self.column}"
        text = f"{where}: {self.kind}: {self.message}"
        if self.source_line is not None:
            shown = self.source_line.expandtabs(4)
            text += f"\n    {shown}"
            if self.column is not None:
                prefix = self.source_line[: self.column - 1].expandtabs(4)
                text += "\n    " + " " * len(prefix) + "^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class DatalogError(_Located, DiffflowError, ValueError):
    """A problem in a Datalog program or its facts, located in the source.

    >>> source = "path(x, y) :- edg(x, y)."
    >>> print(DatalogError("unknown relation 'edg'", source, "prog.dl", 1, 15,
    ...                    hint="declare it with .decl edg(...)"))
    prog.dl:1:15: error: unknown relation 'edg'
        path(x, y) :- edg(x, y).
                      ^
      hint: declare it with .decl edg(...)
    """


class DatalogWarning(_Located, UserWarning):
    """Something in a Datalog program that is accepted but probably not what was meant.

    >>> print(DatalogWarning("unknown pragma 'jbos'", '.pragma "jbos" "2"', "p.dl", 1, 9,
    ...                      hint="did you mean 'jobs'?"))
    p.dl:1:9: warning: unknown pragma 'jbos'
        .pragma "jbos" "2"
                ^
      hint: did you mean 'jobs'?
    """
    kind = "warning"
