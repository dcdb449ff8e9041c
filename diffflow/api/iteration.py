"""Loops: scopes with a round coordinate, loop variables, and leaving them.

A :class:`Loop` is a nested scope.  Each :class:`Variable` in it is a
collection defined round by round: at round 0 it holds its initial value (or
nothing), and at round ``r + 1`` the value its definition (``set``) had at
round ``r``.  Its definition may use every variable of the loop, which is how
mutually recursive relations are written.  Internally

    variable = enter(initial) + feedback(definition - enter(initial))

where ``feedback`` moves updates one round later.  Because updates are
differences, only what changed from one round to the next travels around the
loop (semi-naive evaluation comes for free), and only what an input change
affects is recomputed in later epochs.  ``leave()`` sums the definition over
all rounds: its value at the fixpoint.

>>> import diffflow as dd
>>> flow = dd.Dataflow()
>>> edges = flow.input("edges", ["src", "dst"])
>>> start = flow.input("start", ["node"])
>>> with flow.loop("parity") as loop:
...     even = loop.variable(start)                 # reachable by an even number of steps
...     odd = loop.variable(columns=["node"])       # ... by an odd number of steps
...     step = lambda c: c.join(edges, left_on="node", right_on="src").select(node="dst")
...     even.set(start.concat(step(odd)).distinct())
...     odd.set(step(even).distinct())
>>> evens, odds = even.leave().output(), odd.leave().output()
>>> edges.insert([(1, 2), (2, 3), (3, 4)]); start.insert([1]); flow.advance()
>>> sorted(evens.snapshot()), sorted(odds.snapshot())
([(1,), (3,)], [(2,), (4,)])
"""
from __future__ import annotations

from diffflow.api.collection import Collection
from diffflow.common.errors import GraphError
from diffflow.common.schema import Schema


class Loop:
    """A loop scope holding mutually recursive variables.

    Build it with :meth:`diffflow.Dataflow.loop` (or :meth:`Loop.loop` for a
    loop nested in this one), declare variables, ``set`` each of them, then
    ``leave()`` them.  Used as a context manager it checks on exit that every
    variable was set.
    """

    def __init__(self, flow, parent_scope, name, max_rounds: int | None = 10_000):
        # None: no limit (Datalog programs, like Soufflé's, may need millions of rounds)
        if max_rounds is not None and (not isinstance(max_rounds, int) or max_rounds < 1):
            raise ValueError(f"max_rounds must be a positive int or None, got {max_rounds!r}")
        flow._check_building("a loop")
        self.flow = flow
        self.scope = flow.graph.new_scope(parent_scope, name or f"loop{len(flow._loops)}",
                                          max_rounds)
        self.variables: list[Variable] = []
        flow._loops.append(self)

    def variable(self, initial: Collection | None = None, columns=None) -> "Variable":
        """A loop variable starting from ``initial`` (or empty, with ``columns``).

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); loop = flow.loop()
        >>> loop.variable(columns=["a", "b"]).columns
        ['a', 'b']
        """
        if initial is None:
            if columns is None:
                raise GraphError("a loop variable needs an initial collection or columns=[...]")
            schema, entered = Schema.of(columns), None
        else:
            if not isinstance(initial, Collection):
                raise TypeError(f"variable(initial=...) takes a Collection, got {initial!r}")
            entered = initial._enter_into(self.scope)
            schema = initial.schema
        inputs = [entered.node.id] if entered is not None else []
        node = self.flow.graph.add("concat", inputs, schema, scope=self.scope,
                                   label=f"variable of {self.scope.describe()}")
        variable = Variable(self.flow, node, self, entered)
        self.variables.append(variable)
        return variable

    def loop(self, name: str | None = None, max_rounds: int | None = 10_000) -> "Loop":
        """A loop nested inside this one (times gain another round coordinate)."""
        return Loop(self.flow, self.scope, name, max_rounds)

    def __enter__(self) -> "Loop":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if kind is None:
            self._check_complete()

    def _check_complete(self) -> None:
        unset = [v for v in self.variables if v.definition is None]
        if unset:
            raise GraphError(f"{len(unset)} variable(s) of {self.scope.describe()} were never "
                             f"set(); define each variable with variable.set(collection)")


class Variable(Collection):
    """A loop variable: a collection inside its loop, defined by :meth:`set`."""

    def __init__(self, flow, node, loop: Loop, entered_initial):
        super().__init__(flow, node)
        self.loop = loop
        self._initial = entered_initial
        self.definition: Collection | None = None
        self._left: Collection | None = None

    def set(self, definition: Collection) -> None:
        """Define the variable's value at the next round (once).

        ``definition`` may use any variable of the loop and collections from
        enclosing scopes.
        """
        if self.definition is not None:
            raise GraphError("this loop variable was already set")
        if not isinstance(definition, Collection):
            raise TypeError(f"set() takes a Collection, got {definition!r}")
        if definition.schema.types != self.schema.types:
            raise GraphError(f"set(): the definition's columns {definition.schema!r} do not "
                             f"match the variable's {self.schema!r}")
        if self.loop.scope not in definition.scope.ancestors():
            raise GraphError(f"set(): the definition lives in {definition.scope.describe()}, "
                             f"not inside {self.loop.scope.describe()}")
        if definition.scope is not self.loop.scope:
            raise GraphError("set(): the definition belongs to a loop nested in this one; "
                             "leave() that loop first")
        change = definition if self._initial is None else \
            definition.concat(self._initial.negate())
        graph = self.flow.graph
        feedback = graph.add("feedback", [change.node.id], self.schema, scope=self.loop.scope,
                             label=f"feedback of {self.loop.scope.describe()}")
        graph.connect(self.node, feedback)
        self.definition = definition

    def leave(self) -> Collection:
        """The variable's value at the fixpoint, as a collection of the enclosing scope."""
        if self.definition is None:
            raise GraphError("leave() before set(): define the variable first")
        if self._left is None:
            self.flow._check_building("leave")
            node = self.flow.graph.add("leave", [self.definition.node.id], self.schema,
                                       scope=self.loop.scope.parent,
                                       label=f"leave {self.loop.scope.describe()}")
            self._left = Collection(self.flow, node)
        return self._left
