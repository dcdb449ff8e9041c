"""Records and ADT values as text, as Soufflé reads and writes them in fact files and
output: ``[1, [2, meow]]``, ``nil``, ``$A(1)``, ``$B`` (symbols bare or in double quotes).

>>> from diffflow.datalog.syntax.parser import parse
>>> from diffflow.datalog.analysis.structures import resolve_structures
>>> from diffflow.datalog.values.structures import AdtValue
>>> program = parse(".type L = [h: number, t: L]\\n.type T = A {x: L} | B {}")
>>> s = resolve_structures(program.types, {"L": "L", "T": "T"}, None)
>>> format_value((1, (2, None)), "L", s), format_value(AdtValue("A", ((3, None),)), "T", s)
('[1, [2, nil]]', '$A([3, nil])')
>>> parse_value("$A([1, nil])", "T", s)
AdtValue(branch='A', args=((1, None),))
"""
from __future__ import annotations

import re
import sys

from diffflow.datalog.values.structures import _LIMITS, AdtValue, _children


def format_scalar(value, kind: str) -> str:
    """A value as an output line shows it; a float in the fewest digits that read back exactly.

    Soufflé prints floats with enough digits to read them back (C++'s ``max_digits10``); for
    diffflow's 64-bit floats that is Python's shortest round-trip form, without a ``.0``.

    >>> format_scalar(2.5, "float"), format_scalar(3.0, "float"), format_scalar(7, "number")
    ('2.5', '3', '7')
    >>> format_scalar(123456.7, "float"), format_scalar(0.1, "float"), format_scalar(1e20, "float")
    ('123456.7', '0.1', '1e+20')
    """
    if kind == "float":
        text = repr(float(value))
        return text[:-2] if text.endswith(".0") else text
    return str(value)


def format_value(value, kind: str, structures: dict, quote_symbols: bool = False) -> str:
    """Soufflé's text of a record or ADT value: ``[1, [2, nil]]``, ``$A(x)``, ``$B`` (built
    without recursion: lists of any length); with ``quote_symbols`` its symbols are in
    double quotes, a quote inside as ``\\"`` (as Soufflé writes them with ``rfc4180=true``)."""
    out: list = []
    stack: list = [(value, kind)]
    while stack:
        item = stack.pop()
        if isinstance(item, str):  # (punctuation queued between the parts)
            out.append(item)
            continue
        v, k = item
        if k not in structures:
            quoted = quote_symbols and k == "symbol"
            out.append('"' + v.replace('"', '\\"') + '"' if quoted else format_scalar(v, k))
            continue
        structure = structures[k]
        if structure.is_record and v is None:
            out.append("nil")
            continue
        children = _children(v, k, structures)
        if not structure.is_record and not children:
            out.append("$" + v.branch)
            continue
        opening, closing = ("[", "]") if structure.is_record else (f"${v.branch}(", ")")
        queued: list = [opening]
        for i, child in enumerate(children):
            queued += [", "] * (i > 0) + [child]
        queued.append(closing)
        stack.extend(reversed(queued))
    return "".join(out)


class ValueSyntaxError(ValueError):
    """A record or ADT value's text is malformed; ``column`` is 0-based within it."""

    def __init__(self, message, column):
        super().__init__(message)
        self.column = column


def parse_value(text: str, kind: str, structures: dict):
    """The Python value of a record or ADT written as Soufflé writes it; symbols inside
    may be bare (up to ``,`` ``]`` ``)``) or in double quotes."""
    reader = _Reader(text, structures)
    limit = sys.getrecursionlimit()  # (nesting is recursion here: room for long lists,
    sys.setrecursionlimit(max(limit, 20 * len(text) + 1000))  # Python-only frames)
    try:
        value = reader.value(kind)
    finally:
        sys.setrecursionlimit(limit)
    reader.skip()
    if reader.pos != len(text):
        raise ValueSyntaxError(f"unexpected {text[reader.pos:]!r} after the value", reader.pos)
    return value


class _Reader:
    def __init__(self, text, structures):
        self.text, self.pos, self.structures = text, 0, structures

    def skip(self):
        while self.pos < len(self.text) and self.text[self.pos] in " \t":
            self.pos += 1

    def expect(self, char):
        self.skip()
        if not self.text.startswith(char, self.pos):
            found = self.text[self.pos:self.pos + 10] or "the end"
            raise ValueSyntaxError(f"expected {char!r}, found {found!r}", self.pos)
        self.pos += 1

    def value(self, kind):
        self.skip()
        if kind not in self.structures:
            return self.scalar(kind)
        structure = self.structures[kind]
        if structure.is_record:
            if self.text.startswith("nil", self.pos):
                self.pos += 3
                return None
            self.expect("[")
            out = []
            for i, (_, t) in enumerate(structure.fields):
                if i:
                    self.expect(",")
                out.append(self.value(t))
            self.expect("]")
            return tuple(out)
        self.expect("$")
        start = self.pos
        while self.pos < len(self.text) and (self.text[self.pos].isalnum() or
                                             self.text[self.pos] in "_?."):
            self.pos += 1
        branch = self.text[start:self.pos]
        if branch not in structure.branches:
            raise ValueSyntaxError(f"${branch} is not a branch of {kind} (its branches: "
                                   f"{', '.join('$' + b for b in structure.branches)})", start)
        fields = structure.branches[branch]
        self.skip()
        args = []
        if self.text.startswith("(", self.pos):
            self.pos += 1
            for i, (_, t) in enumerate(fields):
                if i:
                    self.expect(",")
                args.append(self.value(t))
            self.expect(")")
        elif fields:
            raise ValueSyntaxError(f"${branch} needs its {len(fields)} field(s) in ( )",
                                   self.pos)
        return AdtValue(branch, tuple(args))

    def scalar(self, kind):
        text, start = self.text, self.pos
        if kind == "symbol" and text.startswith('"', start):
            end = start + 1
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            self.pos = end + 1
            return text[start + 1:end].replace('\\"', '"')
        end = start
        depth = 0
        while end < len(text) and not (depth == 0 and text[end] in ",])"):
            depth += {"[": 1, "(": 1, "]": -1, ")": -1}.get(text[end], 0)
            end += 1
        self.pos = end
        word = text[start:end].strip()
        if kind == "symbol":
            return word
        # (as a plain column's value: base-10 numbers, unsigned also 0x/0b, 32 bits)
        if kind == "float":
            if re.fullmatch(r"[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|"
                            r"infinity|nan)", word, re.IGNORECASE):
                return float(word)
            raise ValueSyntaxError(f"{word!r} is not a float", start)
        pattern = r"[+-]?[0-9]+" if kind == "number" else r"\+?[0-9]+|0x[0-9a-fA-F]+|0b[01]+"
        if not re.fullmatch(pattern, word):
            raise ValueSyntaxError(f"{word!r} is not {'an' if kind == 'unsigned' else 'a'} "
                                   f"{kind}", start)
        value = int(word, 0) if word[:2] in ("0x", "0b") else int(word)
        low, high = _LIMITS[kind]
        if not low <= value <= high:
            raise ValueSyntaxError(f"{word} does not fit a 32-bit {kind}", start)
        return value
