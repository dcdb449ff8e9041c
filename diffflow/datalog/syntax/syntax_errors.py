"""How lark's parse failures become :class:`DatalogError` messages for people: where the
mistake is (which is not always where the parser stopped: a missing '.' is reported at the
end of the statement that lacks it), what was expected, and a hint.

>>> from diffflow.datalog.syntax.parser import parse
>>> parse(".decl e(x: number)\\ne(1)\\ne(2).")
Traceback (most recent call last):
...
diffflow.common.errors.DatalogError: <program>:2:5: error: expected '.' after this fact
...
"""
from __future__ import annotations

import re

from diffflow.datalog.syntax.errors import DatalogError, did_you_mean
from diffflow.datalog.syntax.intrinsics import INFIX, PREFIX, SIGNATURES


def raise_syntax_error(e, source: str, filename: str):
    """Raise the :class:`DatalogError` for lark's ``e`` (an ``UnexpectedInput``) in ``source``."""
    from lark.exceptions import UnexpectedCharacters, UnexpectedEOF

    if isinstance(e, UnexpectedEOF):
        line, col = _end_of_text(source)
        raise DatalogError("unexpected end of the program (is a '.' missing at the end of a "
                           "rule?)", source, filename, line, col) from None
    if isinstance(e, UnexpectedCharacters):
        _raise_bad_character(e, source, filename)
    if e.token.type == "$END" and source.rstrip().endswith(".pragma"):
        line, col = _end_of_text(source)
        raise DatalogError("'.pragma' without a key", source, filename, line, col - 7,
                           hint=_PRAGMA_HINT) from None
    _raise_unexpected(e, source, filename)


def _raise_unexpected(e, source, filename):
    """A parse error for an unexpected token, with what was expected and a hint."""
    token = e.token
    if token.type == "$END":
        line, col = _end_of_text(source)
        raise DatalogError("unexpected end of the program (is a '.' missing at the end of "
                           "a rule?)", source, filename, line, col) from None
    feature = _unsupported_feature(source, token.start_pos, token.value)
    if feature is not None:
        raise DatalogError(f"{feature}: not supported yet", source, filename, token.line,
                           token.column, hint=_UNSUPPORTED_HINT) from None
    accepts = getattr(e, "accepts", None) or e.expected
    _raise_missing_dot(token, accepts, source, filename)
    _raise_call_without_at(token, accepts, source, filename)
    expected = _describe_expected(accepts)
    raise DatalogError(f"unexpected {token.value!r}; expected {expected}", source, filename,
                       token.line, token.column,
                       hint=_syntax_hint(token, accepts, source)) from None


_UNSUPPORTED_HINT = "the README's Datalog section lists what diffflow supports"
_DIRECTIVES: dict = {}  # Soufflé directives diffflow does not read: {directive: feature}
_LATTICE_ATTRIBUTE = re.compile(r"<\s*>")


def _raise_missing_dot(token, accepts, source, filename):
    """A '.' the statement before ``token`` lacks, reported at the end of that statement
    when ``token`` starts a later line (a rule or fact ended without its '.')."""
    if "DOT" not in accepts:
        return
    lines = source[:token.start_pos or 0].split("\n")
    while lines and not _without_comment(lines[-1]).strip():
        lines.pop()  # blank lines and comment lines between the statement and the token
    if not lines or len(lines) >= token.line:
        return  # the unexpected token is on the same line: the general message fits
    line, column = len(lines), len(_without_comment(lines[-1]).rstrip()) + 1
    # after a head, ':-' could come too: then the statement so far is a fact
    what = "fact" if "IF" in accepts else "rule"
    raise DatalogError(f"expected '.' after this {what}", source,
                       filename, line, column,
                       hint=f"end every {what} with '.' (what follows starts a new statement)") from None


def _raise_call_without_at(token, accepts, source, filename):
    """A '(' after a name where a term ends (``y = f(x)``): a call of a functor that is not
    built in, which is either a user-defined functor written without its '@' or unknown."""
    if token.type != "LPAR" or "PLUS" not in accepts:  # ('+' may follow: a term just ended)
        return
    name = re.search(r"[A-Za-z_?][A-Za-z0-9_?]*\s*$", source[:token.start_pos])
    if name is None:
        return
    start, name = name.start(), name.group().rstrip()
    line = source.count("\n", 0, start) + 1
    column = start - (source.rfind("\n", 0, start) + 1) + 1
    declared = re.findall(r"\.functor\s+([A-Za-z_?][A-Za-z0-9_?]*)", source)
    if name in declared:
        raise DatalogError(f"`{name}` is a user-defined functor: call it as `@{name}(...)`",
                           source, filename, line, column) from None
    known = sorted(set(SIGNATURES) - INFIX - PREFIX)
    at_declared = ["@" + d for d in declared]
    raise DatalogError(
        f"unknown functor `{name}`{did_you_mean(name, known + at_declared)}", source, filename,
        line, column,
        hint=f"the built-in functors are {', '.join(known)}; a user-defined functor is "
             f"declared with `.functor {name}(x: number): number` and called as "
             f"`@{name}(...)`") from None


def _without_comment(line: str) -> str:
    """``line`` without a trailing ``//`` comment (one outside double quotes).

    >>> _without_comment('p("a//b"). // note')
    'p("a//b"). '
    """
    at = line.find("//")
    while at >= 0 and line.count('"', 0, at) % 2:
        at = line.find("//", at + 2)
    return line if at < 0 else line[:at]


def _unsupported_feature(source: str, pos: int, text: str) -> str | None:
    """The Soufflé feature diffflow does not support yet that a syntax error at ``pos``
    (the offending ``text``) is the start of, if any.

    >>> _unsupported_feature(".decl r(x: L<>)", 12, "<")
    'lattice attributes (x: L<>)'
    """
    rest = source[pos:]
    if _LATTICE_ATTRIBUTE.match(rest):
        return "lattice attributes (x: L<>)"
    for directive, name in _DIRECTIVES.items():
        if rest.startswith(directive) and not rest[len(directive):len(directive) + 1].isalnum():
            return name
    return None


def _raise_bad_character(e, source, filename):
    """A parse error for a character no token starts with."""
    char = source[e.pos_in_stream] if e.pos_in_stream < len(source) else ""
    feature = _unsupported_feature(source, e.pos_in_stream, char)
    if feature is not None:
        raise DatalogError(f"{feature}: not supported yet", source, filename, e.line, e.column,
                           hint=_UNSUPPORTED_HINT) from None
    hint = None
    if char == "#":
        hint = ("a C preprocessor directive: dd.Program runs the preprocessor; call "
                "diffflow.datalog.syntax.preprocess.preprocess() on text given to parse()")
    elif char == "'":
        hint = "strings use double quotes: \"text\""
    elif char == '"':
        hint = "unterminated string: a string ends with '\"' on the same line"
    elif source.startswith("/*", e.pos_in_stream):
        hint = "unterminated comment: close it with */"
    raise DatalogError(f"unexpected character {char!r}", source, filename, e.line, e.column,
                       hint=hint) from None


_TOKEN_NAMES = {"IDENT": "a name", "INT": "a number", "FLOAT": "a float", "STRING": "a string",
                "DOT": "'.'", "COMMA": "','", "LPAR": "'('", "RPAR": "')'", "COLON": "':'",
                "IF": "':-'", "SEMICOLON": "';'", "COMPARE": "a comparison", "LBRACE": "'{'",
                "RBRACE": "'}'", "BANG": "'!'", "WILDCARD": "'_'", "MINUS": "'-'",
                "PLUS": "'+'", "TIMES": "'*'", "DIVIDE": "'/'", "MODULO": "'%'",
                "CARET": "'^'", "DIRECTIVE": "a directive", "COUNT": "'count'",
                "SUM": "'sum'", "MEAN": "'mean'", "MIN": "'min'", "MAX": "'max'", "EQUAL": "'='",
                "SUBTYPE": "'<:'", "VBAR": "'|'", "LSQB": "'['", "RSQB": "']'",
                "NIL": "'nil'", "BRANCH": "a branch ($Name)", "TRUE": "'true'", "FALSE": "'false'",
                "DECL": "'.decl'", "TYPE": "'.type'", "QUALIFIER": "a qualifier",
                "PRAGMA": "'.pragma'", "PLAN": "'.plan'", "$END": "the end"}
# punctuation first: it is what a user most likely forgot
_ORDER = {"'.'": 0, "','": 1, "';'": 2, "')'": 3, "':-'": 4}


def _end_of_text(source: str) -> tuple:
    """Line and column just after the last non-blank character."""
    text = source.rstrip()
    line = text.count("\n") + 1
    return line, len(text.rsplit("\n", 1)[-1]) + 1


def _describe_expected(expected) -> str:
    if "IDENT" in expected:  # (a relation named like a functor, abs(...), is a name too)
        expected = [t for t in expected if t != "FUNCTOR"]
    names = sorted({_TOKEN_NAMES.get(t, t.lower()) for t in expected},
                   key=lambda n: (_ORDER.get(n, 9), n))
    if len(names) > 6:
        names = names[:6] + ["..."]
    return " or ".join(names) if len(names) <= 2 else ", ".join(names)


_PRAGMA_HINT = 'a pragma is .pragma "key" "value" or .pragma "key", in double quotes'


def _syntax_hint(token, expected, source) -> str | None:
    if source.startswith("/*", token.start_pos or 0):
        return "unterminated comment: close it with */"
    before = source[:token.start_pos or 0].rstrip()
    if before.endswith(".pragma") or (token.type == "STRING" and
                                      before.rsplit(".pragma", 1)[-1].count('"') == 4):
        return _PRAGMA_HINT
    if token.value == ":-" and "IF" not in expected:
        return "remove the ',' before ':-'" if "IDENT" in expected else None
    return None
