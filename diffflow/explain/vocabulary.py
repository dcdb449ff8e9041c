"""What explanations of collection outputs and of Datalog facts share: one vocabulary.

Both answer "why is this row (fact) here" with the input rows (facts) it rests on, and
``docs/EXPLAIN.md`` describes both with the same words:

* an **explanation** of a *target* maps each input to the rows of it that reproduce the
  target (:mod:`diffflow.explain.search` for collections,
  :mod:`diffflow.datalog.explain.derived` for Datalog);
* a **replay** runs the computation from scratch on an explanation's inputs alone;
* **replay and correct** (:func:`replay_and_correct`) grows an explanation until its
  replay reproduces the target, where negation or a difference makes the proof's leaves
  too few (``docs/EXPLAIN.md`` §5);
* **live explanations** (:class:`LiveExplanations`) keep the explanations of chosen
  targets current as inputs change and report each input row entering or leaving one as a
  :class:`Change`.

>>> Change((4,), "edges", (1, 2), -1)
Change(target=(4,), input='edges', row=(1, 2), diff=-1)
>>> Change((1, 4), "edge", (1, 2), 1).relation   # the Datalog names of the same fields
'edge'
"""
from __future__ import annotations

from typing import NamedTuple

#: replays a correction may take before it gives up (and the caller falls back to the
#: whole input, which reproduces everything)
MAX_ROUNDS = 32


class Change(NamedTuple):
    """An input row entering (``diff`` +1) or leaving (-1) the explanation of ``target``;
    ``input`` ``None``: the target itself left (-1) or came back to (+1) the output.

    For a Datalog program ``input`` is a relation and ``row`` a fact: :attr:`relation` and
    :attr:`fact` name them so."""
    target: tuple
    input: str | None
    row: tuple | None
    diff: int

    @property
    def relation(self) -> str | None:
        """``input``, as a Datalog program names it."""
        return self.input

    @property
    def fact(self) -> tuple | None:
        """``row``, as a Datalog program names it."""
        return self.row


def replay_and_correct(replay, reproduces, grow, max_rounds: int = MAX_ROUNDS) -> tuple:
    """The correction loop: ``replay()`` the explanation; while ``reproduces(replayed)`` is
    false, ``grow(replayed)`` it by the inputs that explain what the replay got wrong.
    Returns ``(reproduced, replays)``; ``reproduced`` is ``False`` when a round could add
    nothing or ``max_rounds`` replays did not reproduce the target.

    >>> inputs = {1}
    >>> def grow(got):
    ...     inputs.add(max(inputs) + 1); return True
    >>> replay_and_correct(lambda: set(inputs), lambda got: 3 in got, grow)
    (True, 3)
    """
    for rounds in range(1, max_rounds + 1):
        replayed = replay()
        if reproduces(replayed):
            return True, rounds
        if not grow(replayed):
            return False, rounds
    return False, max_rounds


class LiveExplanations:
    """Explanations of chosen targets, kept current as inputs change (the shared part).

    ``current`` maps each target to its explanation (an object with an ``inputs`` dict:
    input name -> ``{row: multiplicity}`` or a set of rows), or ``None`` while the target
    is not there; :meth:`record` notes what changed between two explanations of a target
    and :meth:`changes` hands the :class:`Change` s out.
    """

    def __init__(self):
        self.current: dict = {}
        self._changes: list = []

    @staticmethod
    def key(target) -> tuple:
        """A target as a tuple (one bare value is a one-column row)."""
        return tuple(target) if isinstance(target, (tuple, list)) else (target,)

    def __getitem__(self, target):
        return self.current[self.key(target)]

    def __iter__(self):
        return iter(list(self.current))

    def record(self, target, before, after, initial: bool) -> None:
        """Note the input rows that entered and left ``target``'s explanation (``before``
        and ``after``: explanations or ``None``); ``initial``: the first explanation."""
        old = _as_counts(before.inputs) if before is not None else {}
        new = _as_counts(after.inputs) if after is not None else {}
        if (before is None) != (after is None) and not initial:
            self._changes.append(Change(target, None, None, 1 if after is not None else -1))
        for name in sorted(set(old) | set(new)):
            was, now = old.get(name, {}), new.get(name, {})
            for row in sorted(set(was) | set(now)):
                diff = now.get(row, 0) - was.get(row, 0)
                if diff:
                    self._changes.append(Change(target, name, row, diff))

    def changes(self) -> list:
        """:class:`Change` s since the previous call (the first call: since the explanations
        began, so it lists the first explanations' rows), by target, input and row."""
        out, self._changes = self._changes, []
        return out


def _as_counts(inputs: dict) -> dict:
    """Inputs as ``{name: {row: multiplicity}}`` (a set of facts counts each once)."""
    return {name: rows if isinstance(rows, dict) else dict.fromkeys(rows, 1)
            for name, rows in inputs.items()}
