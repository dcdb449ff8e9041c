"""Relations as JSON, as Soufflé's ``IO=json`` (stdout) and ``IO=jsonfile`` read and write them.

A relation is a JSON array with one element per row.  With ``format=list`` (the default)
a row is an array of its values; with ``format=object`` an object keyed by the attribute
names.  A record is an array of its fields (an object keyed by the field names with
``format=object``) and ``nil`` is ``null``; symbols are JSON strings, numbers are numbers.

Output follows Soufflé's ``WriteStreamJSON`` character for character: ``[`` before the
first row, ``,`` and a line break between rows, ``]`` and a line break after the last,
``", "`` and ``": "`` between values; an ``unsigned`` is printed as the 32-bit signed number
with the same bits (Soufflé casts it to ``int``), a float in 6 significant digits (C++'s
default stream precision).  ADT values have no JSON form in Soufflé (it stops with
"unsupported type attribute"); here they are a :class:`DatalogError`.

>>> from diffflow.datalog.analysis.analysed import Relation
>>> from diffflow.datalog.values.structures import Structure
>>> s = {"L": Structure("L", fields=[("head", "number"), ("tail", "L")])}
>>> r = Relation("A", ["x", "n"], ["L", "unsigned"], None)
>>> print(json_text([(None, 1), ((2, (3, None)), 4294967295)], r, s))
[[null, 1],
[[2, [3, null]], -1]]
<BLANKLINE>
>>> print(json_text([((2, None), 7)], r, s, objects=True), end="")
[{"x": {"head": 2, "tail": null}, "n": 7}]
"""
from __future__ import annotations

import json

from diffflow.datalog.syntax.errors import DatalogError

FORMATS = ("list", "object")


def json_text(rows, relation, structures: dict, objects: bool = False) -> str:
    """The text Soufflé writes for ``rows`` (decoded, in the order to write them) of
    ``relation``: a JSON array, one row a line (see the module)."""
    if relation.arity == 0:
        return "[null\n]\n" if rows else "[]\n"  # (Soufflé's writeNullary inside the [ ])
    names = relation.attributes
    lines = []
    for row in rows:
        if objects:
            cells = [f"{_string(n)}: {_value(v, k, structures, True)}"
                     for n, v, k in zip(names, row, relation.types)]
            lines.append("{" + ", ".join(cells) + "}")
        else:
            lines.append("[" + ", ".join(_value(v, k, structures, False)
                                         for v, k in zip(row, relation.types)) + "]")
    return "[" + ",\n".join(lines) + "]\n"


def _string(text: str) -> str:
    """A JSON string as json11 (Soufflé's JSON library) writes it: UTF-8 kept, control
    characters escaped, and U+2028 / U+2029 too."""
    return json.dumps(text, ensure_ascii=False).replace("\u2028", "\\u2028") \
        .replace("\u2029", "\\u2029")


def _value(value, kind: str, structures: dict, objects: bool) -> str:
    """One value's JSON text (records without recursion: lists of any length)."""
    out: list = []
    stack: list = [(value, kind)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):  # (punctuation queued between the parts)
            out.append(item)
            continue
        v, k = item
        structure = structures.get(k) if structures else None
        if structure is None:
            out.append(_scalar(v, k))
            continue
        if not structure.is_record:
            raise ValueError(f"{k} is an ADT, and Soufflé's JSON output has no form for ADT "
                             f"values")
        if v is None:
            out.append("null")
            continue
        queued: list = ["{" if objects else "["]
        for i, ((field, field_kind), child) in enumerate(zip(structure.fields, v)):
            queued += [", "] * (i > 0) + [f"{_string(field)}: "] * objects + [(child, field_kind)]
        queued.append("}" if objects else "]")
        stack.extend(reversed(queued))
    return "".join(out)


def _scalar(value, kind: str) -> str:
    if kind == "symbol":
        return _string(value)
    if kind == "unsigned":  # Soufflé prints (int) of the unsigned: its 32-bit signed twin
        return str(value - (1 << 32) if value >= 1 << 31 else value)
    if kind == "float":
        return f"{value:g}"
    return str(value)


def check_json_output(relation, structures: dict, directive, source: str, filename: str):
    """A located error when ``relation`` has an ADT (as an attribute or inside a record):
    Soufflé's JSON output cannot write it either."""
    seen, kinds = set(), list(relation.types)
    while kinds:
        kind = kinds.pop()
        structure = structures.get(kind) if structures else None
        if structure is None or kind in seen:
            continue
        seen.add(kind)
        if not structure.is_record:
            raise DatalogError(f"{relation.name} holds values of the ADT {kind}, which "
                               f"IO={directive.params.get('IO')} cannot write (Soufflé's JSON "
                               f"output has no form for ADT values either)", source, filename,
                               directive.line, directive.column,
                               hint="write this relation with IO=file")
        kinds.extend(k for _, k in structure.fields)


def read_json_facts(path, relation, structures: dict) -> list:
    """The rows of a JSON fact file (Soufflé's ``IO=jsonfile`` input): an array of rows,
    each an array (values in attribute order) or an object keyed by attribute names;
    records likewise (arrays, or objects keyed by field names), ``null`` for ``nil``.
    Values are checked when the rows are inserted; a malformed file is a
    :class:`DatalogError` naming it.

    >>> import os, tempfile
    >>> from diffflow.datalog.analysis.analysed import Relation
    >>> from diffflow.datalog.values.structures import Structure
    >>> s = {"L": Structure("L", fields=[("head", "number"), ("tail", "L")])}
    >>> path = os.path.join(tempfile.mkdtemp(), "A.json")
    >>> _ = open(path, "w").write('[{"n": 1, "x": {"head": 2, "tail": null}}, [3, [4, null]]]')
    >>> read_json_facts(path, Relation("A", ["n", "x"], ["number", "L"], None), s)
    [(1, (2, None)), (3, (4, None))]
    """
    from diffflow.datalog.values.facts import read_bytes

    data = read_bytes(path)
    try:
        document = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DatalogError(f"cannot read the JSON fact file: {exc}", filename=str(path),
                           hint="Soufflé's JSON facts are an array of rows, e.g. "
                                "[[1, \"a\"], [2, \"b\"]]") from None
    if not isinstance(document, list):
        raise DatalogError("a JSON fact file is an array of rows, but this is a "
                           f"{type(document).__name__}", filename=str(path),
                           hint='e.g. [[1, "a"], [2, "b"]] or [{"x": 1, "s": "a"}]')
    rows = []
    for number, element in enumerate(document, start=1):
        try:
            rows.append(tuple(_from_json(element, relation.attributes, relation.types,
                                         structures, relation.name)))
        except RecursionError:
            raise DatalogError(f"row {number} of the JSON fact file nests records too deeply "
                               f"to read", filename=str(path)) from None
        except ValueError as exc:
            raise DatalogError(f"row {number} of the JSON fact file: {exc}",
                               filename=str(path), hint=f"rows of {relation.name} are "
                               f"[{', '.join(relation.types)}] or objects keyed by "
                               f"{', '.join(relation.attributes)}") from None
    return rows


def _from_json(element, names, kinds, structures, what) -> list:
    """The values of one row or record given as a JSON array or object."""
    if isinstance(element, dict):
        unknown = sorted(set(element) - set(names))
        if unknown:
            raise ValueError(f"{what} has no attribute {unknown[0]!r}")
        if set(names) - set(element):
            raise ValueError(f"{min(set(names) - set(element))!r} of {what} is missing")
        element = [element[n] for n in names]
    if not isinstance(element, list) or len(element) != len(kinds):
        raise ValueError(f"expected {len(kinds)} value(s) for {what}, got "
                         f"{json.dumps(element)[:60]}")
    values = []
    for item, kind in zip(element, kinds):
        structure = structures.get(kind) if structures else None
        if structure is None:
            values.append(item)
        elif not structure.is_record:
            raise ValueError(f"{kind} is an ADT: Soufflé's JSON facts have no form for it")
        elif item is None:
            values.append(None)
        else:
            fields = [f for f, _ in structure.fields]
            values.append(tuple(_from_json(item, fields, [k for _, k in structure.fields],
                                           structures, f"record {kind}")))
    return values
