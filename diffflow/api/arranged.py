"""Arranged collections: shared indexes by key columns, and the joins and reductions on them.

:meth:`Collection.arrange <diffflow.Collection.arrange>` returns an
:class:`Arranged`; ``join``, ``semijoin``, ``antijoin``, ``distinct``,
``threshold`` and ``aggregate`` add their nodes here, reading arrangements,
so one index serves every operator keyed by the same columns.  (The index
itself, at run time, is :mod:`diffflow.arrangements`.)

>>> import diffflow as dd
>>> flow = dd.Dataflow()
>>> a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k", "y"])
>>> by_k = a.arrange(by=["k"])
>>> joined, n = by_k.join(b, on="k").output(), by_k.aggregate(n=dd.count()).output()
>>> a.insert([(1, 10), (1, 11)]); b.insert([(1, 20)]); flow.advance()
>>> sorted(joined.snapshot()), n.snapshot()
([(1, 10, 20), (1, 11, 20)], {(1, 2): 1})
"""
from __future__ import annotations

from diffflow.api.aggregates import aggregate_reducer
from diffflow.api.custom_reducers import custom_reducer
from diffflow.common.errors import GraphError
from diffflow.common.schema import Schema

# Annotations naming types of modules above this one (Collection, Output, Dataflow) are
# strings (``from __future__ import annotations``): they name the type without importing it.


def as_names(value, what: str) -> list:
    """Column names given as one name, a sequence of names or ``None`` (no names).

    >>> as_names("k", "by"), as_names(["a", "b"], "by"), as_names(None, "by")
    (['k'], ['a', 'b'], [])
    """
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    names = list(value)
    for n in names:
        if not isinstance(n, str):
            raise TypeError(f"{what} must be column names, got {n!r}")
    return names


class Arranged:
    """A shared index of a collection by key columns (from :meth:`Collection.arrange`).

    ``join``, ``semijoin``, ``antijoin`` and ``aggregate`` read it directly, so
    several operators share one copy of the indexed data.
    """

    def __init__(self, collection: Collection, node, keys):  # noqa: F821
        self.collection, self.node, self.keys = collection, node, list(keys)
        self.flow = collection.flow

    def __repr__(self) -> str:
        return f"<Arranged by {self.keys} of {self.collection!r}>"

    def join(self, other, on=None, left_on=None, right_on=None, rename=None) -> Collection:  # noqa: F821
        """Join with another collection or arrangement; this side's keys are the arrangement's.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["k", "x"]); b = flow.input("b", ["k", "y"])
        >>> a.arrange(by=["k"]).join(b, on="k").columns
        ['k', 'x', 'y']
        """
        left_keys, _ = join_keys(on, left_on, right_on)
        if left_keys != self.keys:
            raise GraphError(f"this arrangement is keyed by {self.keys}; join on those columns "
                             f"(got {left_keys}) or arrange by the columns you need")
        return self.collection.join(other, on, left_on, right_on, rename)

    def semijoin(self, other, on=None, left_on=None, right_on=None) -> Collection:  # noqa: F821
        """See :meth:`Collection.semijoin`."""
        return self.collection.semijoin(other, on, left_on, right_on)

    def antijoin(self, other, on=None, left_on=None, right_on=None) -> Collection:  # noqa: F821
        """See :meth:`Collection.antijoin`."""
        return self.collection.antijoin(other, on, left_on, right_on)

    def aggregate(self, **aggregates) -> Collection:  # noqa: F821
        """Aggregate per key of the arrangement.

        >>> import diffflow as dd
        >>> flow = dd.Dataflow(); a = flow.input("a", ["k", "x"])
        >>> a.arrange(by=["k"]).aggregate(n=dd.count()).columns
        ['k', 'n']
        """
        return self.collection._derived(aggregate_node(self, aggregates))

    def reduce(self, fn, columns=None, out=None, negative: str = "drop") -> Collection:  # noqa: F821
        """A custom reducer per key of the arrangement (see :meth:`Collection.reduce`).

        >>> import diffflow as dd
        >>> from diffflow.api.custom_reducers import per_group
        >>> flow = dd.Dataflow(); a = flow.input("a", ["k", "x"])
        >>> a.arrange(by=["k"]).reduce(per_group(lambda cols, m: m.sum()), out={"n": int}).columns
        ['k', 'n']
        """
        return self.collection._derived(
            custom_reduce_node(self.collection, self.keys, fn, columns, out, negative, self))

    def output(self, name: str | None = None) -> "Output":  # noqa: F821
        """See :meth:`Collection.output`."""
        return self.collection.output(name)


def join_keys(on, left_on, right_on) -> tuple:
    """``(left keys, right keys)`` of a join's ``on=`` or ``left_on=``/``right_on=``.

    >>> join_keys("k", None, None), join_keys(None, ["a"], ["b"])
    ((['k'], ['k']), (['a'], ['b']))
    """
    if on is not None:
        if left_on is not None or right_on is not None:
            raise GraphError("join: give either on= or left_on=/right_on=, not both")
        keys = as_names(on, "join on=")
        return keys, keys
    if left_on is None or right_on is None:
        raise GraphError("join needs on= (same names) or both left_on= and right_on=")
    left, right = as_names(left_on, "left_on"), as_names(right_on, "right_on")
    if len(left) != len(right):
        raise GraphError(f"join: left_on {left} and right_on {right} differ in length")
    return left, right


def join_node(left: Arranged, right: Arranged, rename: dict):
    """The node joining two arrangements on their keys (``rename``: new names of the right
    side's non-key columns)."""
    kk = len(left.keys)
    lschema, rschema = left.collection.schema, right.collection.schema
    right_rest = [n for n in rschema.names if n not in right.keys]
    unknown = [n for n in rename if n not in right_rest]
    if unknown:
        raise GraphError(f"join rename={rename}: {unknown[0]!r} is not a non-key column of the "
                         f"other side; those are {right_rest}")
    out_rest = [rename.get(n, n) for n in right_rest]
    clash = [n for n in out_rest if n in lschema.names]
    if len(set(out_rest)) != len(out_rest):
        raise GraphError(f"join rename={rename} gives two output columns the same name")
    if clash:
        raise GraphError(
            f"join output would have two columns named {clash[0]!r} (one from each side); "
            f"pass rename={{{clash[0]!r}: {clash[0] + '_right'!r}}} to name the other side's "
            f"column differently")
    # arranged rows: left = keys + left rest, right = keys + right rest
    left_arranged = list(left.node.schema.names)
    perm = [left_arranged.index(n) for n in lschema.names]
    perm += [len(left_arranged) + i for i in range(len(right_rest))]
    names = tuple(lschema.names) + tuple(out_rest)
    types = tuple(lschema.types) + tuple(rschema.type_of(n) for n in right_rest)
    flow = left.flow
    flow._check_building("join")
    node = flow.graph.add("join", [left.node.id, right.node.id], Schema(names, types),
                          params={"key_width": kk, "perm": perm}, scope=left.node.scope,
                          label=f"join on {left.keys}={right.keys}")
    return node


def reduce_node(arranged: Arranged, reducer, schema: Schema, label: str):
    """The node reducing ``arranged`` per key with ``reducer`` (a
    :class:`~diffflow.operators.reducers.Reducer`) into rows of ``schema``."""
    flow = arranged.flow
    flow._check_building(label)
    node = flow.graph.add("reduce", [arranged.node.id], schema,
                          params={"key_width": len(arranged.keys), "reducer": reducer},
                          scope=arranged.node.scope,
                          label=label)
    return node


def reduce_with(arranged: Arranged, reducer, schema: Schema, label: str) -> "Collection":  # noqa: F821
    """The collection of :func:`reduce_node` (a reducer the collection API has no name for:
    the Datalog lowering's own).

    >>> import diffflow as dd
    >>> from diffflow.operators.reducers import DistinctReducer
    >>> flow = dd.Dataflow(); a = flow.input("a", ["x"]); arr = a.arrange(["x"])
    >>> reduce_with(arr, DistinctReducer(), a.schema, "distinct").columns
    ['x']
    """
    return arranged.collection._derived(reduce_node(arranged, reducer, schema, label))


def aggregate_node(arranged: Arranged, aggregates: dict):
    """The node computing named ``aggregates`` per key of ``arranged``."""
    reducer, schema = aggregate_reducer(aggregates, arranged.keys, arranged.node.schema,
                                        arranged.collection.schema.names)
    return reduce_node(arranged, reducer, schema,
                       f"aggregate {list(aggregates)} by {arranged.keys}")


def custom_reduce_node(collection, keys, fn, columns, out, negative, arranged=None):
    """The node of a custom reduce of ``collection`` by ``keys`` (reading ``arranged`` when
    it fits).

    The reducer reads an arrangement by ``keys`` whose other columns are the
    value columns, in order: the collection's own when those are every
    non-key column, else a projection (which also lets a key column be a value).
    """
    collection.flow._check_building("reduce")
    reducer, schema, values = custom_reducer(fn, keys, columns, out, negative,
                                             collection.schema)
    if values != [n for n in collection.schema.names if n not in keys]:
        taken, named = set(keys) | set(values), {}
        for n in values:  # a key column used as a value too needs a second name
            name = n if n not in keys else next(
                c for c in (f"{n}_value{j or ''}" for j in range(len(taken) + 1))
                if c not in taken)
            taken.add(name)
            named[name] = n
        collection = collection.select(*keys, **named)
        arranged = None
    if arranged is None:
        arranged = collection.arrange(keys)
    return reduce_node(arranged, reducer, schema,
                       f"reduce {reducer.name}({', '.join(values)}) by {keys}")
