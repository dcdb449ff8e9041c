"""Located warnings where a program meets a difference from Soufflé that diffflow keeps (the
README lists them): the program runs, but an answer may differ from Soufflé's.

>>> import warnings
>>> import diffflow as dd
>>> with warnings.catch_warnings(record=True) as caught:
...     warnings.simplefilter("always")
...     p = dd.Program(".decl s(x: symbol)\\n.decl r(x: symbol)\\nr(x) :- s(x), s(y), ord(x) < ord(y).")
>>> "orders values differently from Soufflé" in str(caught[0].message)
True
"""
from __future__ import annotations

from diffflow.datalog.syntax import ast
from diffflow.datalog.syntax.errors import DatalogWarning
from diffflow.datalog.values.functors import regex


class DifferenceWarnings:
    """Checks a term typing (:class:`~.types.TermTyping`) runs on comparisons; each appends
    at most one warning per place to ``self.warnings`` (when the typing collects them)."""

    def _check_ord_order(self, c: ast.Comparison, record: dict) -> None:
        """A located warning for ``ord`` of a symbol, record or ADT value in an order
        comparison: its number is from the value's hash, not Soufflé's table index."""
        warnings = getattr(self, "warnings", None)
        if warnings is None:
            return
        for node in ast.walk_terms(c.left, c.right):
            if isinstance(node, ast.Functor) and node.name == "ord" and node.user is None and \
                    record.get(id(node.args[0])) not in ("number", "unsigned", "float") and \
                    not any((w.line, w.column) == (node.line, node.column) for w in warnings):
                warnings.append(DatalogWarning(
                    "ord of a symbol, record or ADT value orders values differently from "
                    "Soufflé: diffflow's number comes from the value's hash, Soufflé's is its "
                    "table index (the order it first met the values)", self.source,
                    self.program.filename, node.line, node.column,
                    hint="the numbers tell values apart in both; which is smaller differs "
                         "(a kept difference)"))
                return  # (one warning a comparison)

    def _check_regex(self, pattern: ast.String) -> None:
        """A located warning for a constant ``match`` pattern that is no valid regex."""
        warnings = getattr(self, "warnings", None)
        if warnings is None or regex(pattern.value) is not None or \
                any((w.line, w.column) == (pattern.line, pattern.column) for w in warnings):
            return
        warnings.append(DatalogWarning(
            f"wrong pattern {pattern.value!r}: no regex in Soufflé's grammar (C++ std::regex, "
            f"ECMAScript), so neither match nor !match of it holds", self.source,
            self.program.filename, pattern.line, pattern.column,
            hint="a { starts a count such as {2} or {1,3}; write \\{ for the character"))
