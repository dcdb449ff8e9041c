"""Soufflé fact and output files: delimiter-separated text, no quoting, read as Soufflé reads them.

Reading follows Soufflé's ``ReadStreamCSV``: one fact per line (an empty line
too: it has one empty field), fields split on the delimiter (TAB by default)
with no quoting or escaping, a trailing ``\\r`` dropped (CRLF files), the
first line skipped with ``headers=true``, gzip-compressed files read
transparently.  Every line must have at least as many fields as the relation
has attributes, otherwise the error names ``file:line``; fields after those are
ignored, as Soufflé ignores them.  Symbol fields are text
whatever they look like (``007``, ``1e3``, empty); ``number`` and
``unsigned`` fields are base-10 integers that fit 32 bits (leading blanks and
a sign allowed, as C's ``stoi``), ``float`` fields what C's ``stod`` reads.

The fast path is columnar: numpy finds the line and field boundaries and
checks every line's field count at once, pyarrow's CSV reader splits the
fields and pyarrow's compute kernels convert numbers.  Files pyarrow would
split differently (a multi-character delimiter, a ``\\r`` inside a line, lines with
extra fields) or that are not UTF-8 take :func:`split_reference`, the plain line-by-line
reader kept for them and for tests.

>>> import tempfile, os
>>> from diffflow.datalog.analysis.analysed import Relation
>>> r = Relation("e", ["x", "s"], ["number", "symbol"], None)
>>> path = os.path.join(tempfile.mkdtemp(), "e.facts")
>>> _ = open(path, "w").write("1\\ta b\\n2\\t007\\n")
>>> read_facts(path, r).to_pydict()
{'c0': [1, 2], 'c1': ['a b', '007']}
"""
from __future__ import annotations

import gzip
import io
import os
import time
import zlib

import numpy as np

from diffflow.datalog.syntax.errors import DatalogError, decode_utf8
from diffflow.datalog.syntax.intrinsics import NUMBER_RANGE, UNSIGNED_RANGE
from diffflow.datalog.values.record_text import (ValueSyntaxError, format_scalar, format_value,
                                                 parse_value)

_PROGRESS_BYTES = 8 << 20  # report files larger than this
_BLOCK = 64 << 20          # bytes scanned at once when checking lines (bounds temporaries)
_INTEGER = r"^[ \t\n\v\f\r]*[+-]?[0-9]+$"
_UNSIGNED = r"^([ \t\n\v\f\r]*\+?[0-9]+|0x[0-9a-fA-F]+|0b[01]+)$"  # Soufflé: 0x, 0b too
_FLOAT = (r"^[ \t\n\v\f\r]*[+-]?(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|inf|infinity|nan"
          r"|0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)([pP][+-]?[0-9]+)?)$")


def read_bytes(path) -> bytes:
    """The file's bytes, gunzipped when it is gzip-compressed (as Soufflé's readers do).

    >>> import tempfile, os, gzip
    >>> path = os.path.join(tempfile.mkdtemp(), "e.facts")
    >>> _ = open(path, "wb").write(gzip.compress(b"1\\t2\\n"))
    >>> read_bytes(path)
    b'1\\t2\\n'
    """
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as exc:
            raise DatalogError(f"the file starts like gzip but cannot be decompressed: {exc}",
                               filename=str(path),
                               hint="re-compress it with gzip, or store it as plain text") from None
    return data


def read_facts(path, relation, delimiter: str = "\t", headers: bool = False, progress=None,
               rfc4180: bool = False, structures=None):
    """Read a facts file into a pyarrow Table with columns ``c0, c1, ...`` (validated types).

    A relation with a record or ADT attribute (a type in ``structures``) gives a list of
    Python rows instead, records as tuples (:mod:`.structures`).

    ``rfc4180`` reads CSV as RFC 4180 has it (Soufflé's ``rfc4180=true``): a field may be
    quoted with ``"``, holding delimiters, line breaks and ``""`` for a quote.

    A nullary relation gives ``[()]`` when the file has a line (even an empty one), else ``[]``.
    Raises :class:`DatalogError` naming ``file:line`` for the first bad line; nothing is
    returned in part.
    """
    import pyarrow as pa

    started = time.perf_counter()
    data = read_bytes(path)
    if headers:  # Soufflé skips the first line, whatever it holds
        cut = data.find(b"\n")
        first_line, data = (2, data[cut + 1:]) if cut >= 0 else (2, b"")
    else:
        first_line = 1
    if relation.arity == 0:
        return [()] if data else []
    if rfc4180:  # a quoted field may span lines, so rows and lines part ways
        rows, starts = split_rfc4180(data, relation, delimiter, str(path), first_line)
        fields = _columns_from_rows(rows, relation.arity)
        line_of = starts.__getitem__
    elif structures and any(kind in structures for kind in relation.types):
        # a record's text may hold the delimiter: split outside brackets and quotes
        nested = {j for j, kind in enumerate(relation.types) if kind in structures}
        rows = _split_nested(data, relation, delimiter, str(path), first_line, nested)
        fields = _columns_from_rows(rows, relation.arity)
        line_of = first_line.__add__
    else:
        fields = _split(data, relation, delimiter, str(path), first_line)
        line_of = first_line.__add__  # every line is a fact
    maybe_hex = b"x" in data or b"X" in data
    if structures and any(kind in structures for kind in relation.types):
        return _structured_rows(fields, relation, structures, str(path), line_of, maybe_hex,
                                delimiter)
    result = pa.table({f"c{j}": _convert(column, kind, relation, j, str(path), line_of,
                                         maybe_hex, delimiter)
                       for j, (column, kind) in enumerate(zip(fields, relation.types))})
    elapsed = time.perf_counter() - started
    if progress is not None and (len(data) > _PROGRESS_BYTES or elapsed > 1.0):
        progress(f"read {len(result):,} facts for {relation.name} from {path} "
                 f"({len(data) / 1e6:.1f} MB, {elapsed:.1f} s)")
    return result


# -- lines and fields ---------------------------------------------------------------------------

def _split(data: bytes, relation, delimiter, path, first_line) -> list:
    """One pyarrow string array per attribute, after checking every line's field count."""
    if len(delimiter.encode()) == 1 and not _has_lone_carriage_return(data) and \
            not _check_field_counts(data, relation, delimiter, path, first_line):
        import pyarrow as pa

        try:
            return _split_arrow(data, relation.arity, delimiter)
        except pa.ArrowInvalid:  # not UTF-8: the reference reader names the line
            pass
    return _columns_from_rows(split_reference(data, relation, delimiter, path, first_line),
                              relation.arity)


def _has_lone_carriage_return(data: bytes) -> bool:
    """A ``\\r`` not followed by ``\\n``: pyarrow would end a line there, Soufflé does not."""
    if b"\r" not in data:
        return False
    buffer = np.frombuffer(data, np.uint8)
    after = np.flatnonzero(buffer == 13) + 1
    return bool((after == len(buffer)).any() or (buffer[after[after < len(buffer)]] != 10).any())


def _check_field_counts(data: bytes, relation, delimiter, path, first_line) -> bool:
    """Every line has at least ``arity`` fields, checked block by block with numpy; returns
    whether some line has more (Soufflé reads the first ``arity`` and ignores the others)."""
    buffer = np.frombuffer(data, np.uint8)
    separator = delimiter.encode()[0]
    line, start = first_line, 0
    first, more = None, []  # the first bad line; the numbers of the others
    wider = False
    while start < len(buffer):
        end = min(start + _BLOCK, len(buffer))
        if end < len(buffer):  # cut after the block's last newline (or take a whole long line)
            last = data.rfind(b"\n", start, end)
            end = last + 1 if last >= start else (data.find(b"\n", end) + 1 or len(buffer))
        block = buffer[start:end]
        newlines = np.flatnonzero(block == 10)
        if len(newlines) == 0 or newlines[-1] != len(block) - 1:
            newlines = np.append(newlines, len(block))  # a last line without a newline
        line_starts = np.concatenate(([0], newlines[:-1] + 1))
        separators = np.bincount(np.searchsorted(newlines, np.flatnonzero(block == separator)),
                                 minlength=len(newlines))
        bad = np.flatnonzero(separators + 1 < relation.arity)
        wider = wider or bool((separators + 1 > relation.arity).any())
        if len(bad) and first is None:
            i = int(bad[0])
            first = (int(separators[i]) + 1, line + i, bytes(block[line_starts[i]:newlines[i]]))
            bad = bad[1:]
        more.extend((bad + line).tolist())
        line += len(newlines)
        start = end
    if first is not None:
        _field_count_error(relation, first[0], path, first[1], delimiter, first[2], more)
    return wider


def _split_arrow(data: bytes, arity: int, delimiter: str) -> list:
    import pyarrow as pa
    import pyarrow.csv as csv

    names = [f"c{j}" for j in range(arity)]
    table = csv.read_csv(
        io.BytesIO(data),
        read_options=csv.ReadOptions(column_names=names),
        parse_options=csv.ParseOptions(delimiter=delimiter, quote_char=False,
                                       escape_char=False, double_quote=False,
                                       newlines_in_values=False, ignore_empty_lines=False),
        convert_options=csv.ConvertOptions(column_types={n: pa.string() for n in names},
                                           strings_can_be_null=False,
                                           quoted_strings_can_be_null=False, null_values=[]))
    return [table.column(n).combine_chunks() for n in names]


def split_reference(data: bytes, relation, delimiter: str = "\t", path: str = "<facts>",
                    first_line: int = 1) -> list:
    """Plain line-by-line reader (Soufflé's algorithm): a list of field tuples.

    The slow path for files the columnar path does not take, and the reference the tests
    compare it with.

    >>> from diffflow.datalog.analysis.analysed import Relation
    >>> split_reference(b"a\\t\\r\\nb\\tc", Relation("r", ["x", "y"], ["symbol"] * 2, None))
    [('a', ''), ('b', 'c')]
    >>> split_reference(b"a\\n\\n", Relation("r", ["x"], ["symbol"], None))  # an empty fact
    [('a',), ('',)]
    """
    rows, wrong = [], []  # wrong: (line, fields, text) of lines with a wrong field count
    lines = data.split(b"\n")
    if lines[-1] == b"":  # what follows the last newline is not a line
        lines.pop()
    for number, raw in enumerate(lines, start=first_line):
        if raw.endswith(b"\r"):
            raw = raw[:-1]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DatalogError(f"this line is not UTF-8 text ({exc.reason} at byte {exc.start})",
                               filename=path, line=number,
                               hint="save the file as UTF-8") from None
        fields = text.split(delimiter)
        if len(fields) < relation.arity:
            wrong.append((number, len(fields), raw))
        rows.append(tuple(fields[:relation.arity]))  # (fields after those: ignored, as Soufflé)
    _wrong_lines(relation, wrong, path, delimiter)
    return rows


def split_rfc4180(data: bytes, relation, delimiter: str = ",", path: str = "<facts>",
                  first_line: int = 1) -> tuple:
    """Fields of RFC 4180 CSV (quoted fields, ``""`` escapes), checked as :func:`split_reference`.

    Returns the rows and the line each starts on.

    >>> from diffflow.datalog.analysis.analysed import Relation
    >>> r = Relation("r", ["x", "y"], ["number", "symbol"], None)
    >>> split_rfc4180(b'1,"a\\nb"\\r\\n2,"x""y"\\n', r)
    ([('1', 'a\\nb'), ('2', 'x"y')], [1, 3])
    """
    import csv

    if len(delimiter) != 1 or delimiter == '"':
        raise DatalogError(f"rfc4180 needs a one-character delimiter other than '\"', not "
                           f"{delimiter!r}", filename=path)
    text = decode_utf8(data, path, "this line", first_line)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, quotechar='"',
                        doublequote=True, strict=True)
    rows, starts, wrong, line = [], [], [], first_line
    try:
        for fields in reader:
            if len(fields) < relation.arity:
                wrong.append((line, len(fields), delimiter.join(fields).encode()))
            rows.append(tuple(fields[:relation.arity]))
            starts.append(line)
            line = first_line + reader.line_num
    except csv.Error as exc:
        raise DatalogError(f"malformed CSV: {exc}", filename=path, line=line,
                           hint='a quoted field ends with " followed by the delimiter or the '
                                'end of the line; a quote inside it is written ""') from None
    _wrong_lines(relation, wrong, path, delimiter)
    return rows, starts


def _split_nested(data: bytes, relation, delimiter, path, first_line, nested: set) -> list:
    """Fields of a file with record or ADT attributes (at positions ``nested``): in those, a
    delimiter inside ``[...]``, ``(...)`` or a quoted symbol does not split (as Soufflé
    reads records); other fields run to the delimiter."""
    text = decode_utf8(data, path, "this line", first_line)
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    rows, wrong = [], []
    for number, line in enumerate(lines, start=first_line):
        line = line[:-1] if line.endswith("\r") else line
        fields, depth, quoted, start, i = [], 0, False, 0, 0
        while i < len(line):
            c, inside = line[i], len(fields) in nested  # (brackets count in records only)
            if inside and quoted:
                if c == "\\":
                    i += 1
                elif c == '"':
                    quoted = False
            elif inside and c == '"':
                quoted = True
            elif inside and c in "[(":
                depth += 1
            elif inside and c in "])":
                depth -= 1
            elif depth == 0 and line.startswith(delimiter, i):
                fields.append(line[start:i])
                start = i + len(delimiter)
                i = start
                continue
            i += 1
        fields.append(line[start:])
        if len(fields) < relation.arity:
            wrong.append((number, len(fields), line.encode()))
        rows.append(tuple(fields[:relation.arity]))
    _wrong_lines(relation, wrong, path, delimiter)
    return rows


def _columns_from_rows(rows, arity):
    import pyarrow as pa

    return [pa.array([row[j] for row in rows], pa.string()) for j in range(arity)]


def _wrong_lines(relation, wrong: list, path, delimiter) -> None:
    """The error for the lines ``(number, field count, bytes)`` whose field count is
    wrong, if any: the first shown, the others counted."""
    if wrong:
        number, count, raw = wrong[0]
        _field_count_error(relation, count, path, number, delimiter, raw,
                           [w[0] for w in wrong[1:]])


def _field_count_error(relation, fields, path, line, delimiter, raw: bytes, more=()):
    text = raw.decode("utf-8", "replace").rstrip("\r")
    shown = text if len(text) <= 80 else text[:77] + "..."
    declared = (f".decl {relation.name}("
                + ", ".join(f"{a}: {t}" for a, t in zip(relation.attributes, relation.types)) + ")")
    hint = (f"an empty line is a fact with one empty field, as in Soufflé: remove it ({declared})"
            if not text else f"separate the attributes with {delimiter!r}; {declared}")
    others = ""
    if more:
        listed = ", ".join(map(str, more[:5])) + (", ..." if len(more) > 5 else "")
        others = f" ({len(more):,} more line(s) too: {listed})"
    raise DatalogError(
        f"{relation.name} has {relation.arity} attribute(s) but this line has {fields} "
        f"field(s): {shown!r}{others}", filename=path, line=line, hint=hint)


# -- values -------------------------------------------------------------------------------------

def _structured_rows(fields, relation, structures, path, line_of, maybe_hex, delimiter) -> list:
    """Python rows of a relation with record or ADT attributes (read value by value)."""
    columns = []
    for j, (column, kind) in enumerate(zip(fields, relation.types)):
        if kind not in structures:
            values = _convert(column, kind, relation, j, path, line_of, maybe_hex, delimiter)
            columns.append(values.to_pylist() if hasattr(values, "to_pylist") else
                           values.tolist())
            continue
        parsed = []
        for i, text in enumerate(column.to_pylist()):
            try:
                parsed.append(parse_value(text, kind, structures))
            except ValueSyntaxError as exc:
                raise DatalogError(f"{relation.name}: attribute {relation.attributes[j]!r} "
                                   f"should be a {kind}: {exc} in {text!r}", filename=path,
                                   line=line_of(i),
                                   hint="records are written [1, a], nil, and ADT values "
                                        "$Branch(1, a) or $Branch") from None
        columns.append(parsed)
    return list(zip(*columns))


def _convert(column, kind, relation, j, path, line_of, maybe_hex, delimiter):
    """A pyarrow string column as the attribute's values; errors name the line of row ``i``,
    ``line_of(i)``; ``maybe_hex``: the file has an ``x``, so a value may be hexadecimal."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if kind == "symbol":
        return column
    attribute = relation.attributes[j]
    if kind != "float":  # the common case: plain decimal integers, which pyarrow casts strictly
        try:
            values = pc.cast(column, pa.int64()).to_numpy()
        except pa.ArrowInvalid:
            values = None  # a sign or blanks to strip, or an error to locate: below
        low, high = NUMBER_RANGE if kind == "number" else UNSIGNED_RANGE
        # pyarrow also reads hexadecimal, which C's base-10 stoi does not
        if values is not None and not ((values < low) | (values > high)).any() and \
                (not maybe_hex or
                 not pc.any(pc.match_substring(column, "x", ignore_case=True)).as_py()):
            return values
    pattern = {"float": _FLOAT, "number": _INTEGER, "unsigned": _UNSIGNED}[kind]
    ok = pc.match_substring_regex(column, pattern, ignore_case=kind == "float")
    ok = ok.to_numpy(zero_copy_only=False)
    if not ok.all():
        i = int(np.flatnonzero(~ok)[0])
        raise DatalogError(
            f"{relation.name}: attribute {attribute!r} should be "
            f"{'an' if kind == 'unsigned' else 'a'} {kind}, got "
            f"{column[i].as_py()!r}", filename=path, line=line_of(i),
            hint=f"is the file {delimiter!r}-separated with {relation.arity} column(s)?")
    text = pc.replace_substring_regex(pc.utf8_ltrim_whitespace(column), r"^\+", "")
    if kind == "float":
        return _to_float(text).to_numpy()
    low, high = NUMBER_RANGE if kind == "number" else UNSIGNED_RANGE
    try:
        values = pc.cast(text, pa.int64()).to_numpy()
        outside = (values < low) | (values > high)
    except pa.ArrowInvalid:  # beyond 64 bits, or an unsigned in binary: value by value
        numbers = [int(v, 0) if v[:2] in ("0x", "0b") else int(v) for v in text.to_pylist()]
        outside = np.array([not low <= v <= high for v in numbers], bool)
        values = np.array([v if low <= v <= high else 0 for v in numbers], np.int64)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise DatalogError(
            f"{relation.name}: attribute {attribute!r} = {column[i].as_py().strip()} does not "
            f"fit a 32-bit {kind}", filename=path, line=line_of(i),
            hint="declare the attribute unsigned or float for larger values"
            if kind == "number" else None)
    return values


def _to_float(text):
    import pyarrow as pa
    import pyarrow.compute as pc

    # pyarrow reads "inf"/"nan" but not C's hexadecimal floats; those few go through Python
    hexadecimal = pc.match_substring_regex(text, r"^[+-]?0[xX]").to_numpy(zero_copy_only=False)
    if not hexadecimal.any():
        return pc.cast(text, pa.float64())
    values = pc.cast(pc.if_else(pc.invert(pa.array(hexadecimal)), text, "0"), pa.float64())
    out = values.to_numpy().copy()
    for i in np.flatnonzero(hexadecimal):
        value = text[int(i)].as_py()
        try:
            out[i] = float.fromhex(value)
        except OverflowError:  # past the largest double: infinity, as C's strtod and "1e999"
            out[i] = -np.inf if value.lstrip().startswith("-") else np.inf
    return pa.array(out)


# -- writing ------------------------------------------------------------------------------------

def format_rows(rows, types, delimiter: str = "\t", rfc4180: bool = False,
                structures=None) -> list:
    """Output lines (without newlines) for decoded rows of a relation.

    With ``rfc4180`` symbols are quoted, a quote inside doubled (RFC 4180, as Soufflé's
    ``rfc4180=true`` quotes them).  Record and ADT values (of a type in ``structures``) are
    written as Soufflé writes them: ``[1, a]``, ``nil``, ``$A(1)``; with ``rfc4180`` each is
    one quoted field with its symbols quoted inside: ``"$A(""a"", 1)"``.

    >>> format_rows([(1, 'x"y')], ["number", "symbol"], ",", rfc4180=True)
    ['1,"x""y"']
    """
    if not types:
        return ["()"] if rows else []
    if structures and any(kind in structures for kind in types) and rfc4180:
        # a record or ADT is one quoted field, its symbols quoted inside (as Soufflé: the
        # text $A("x") is written "$A(""x"")")
        def field(value, kind):
            if kind in structures:
                return '"' + format_value(value, kind, structures, True).replace('"', '""') + '"'
            return '"' + value.replace('"', '""') + '"' if kind == "symbol" else \
                format_scalar(value, kind)
        return [delimiter.join(field(v, k) for v, k in zip(row, types)) for row in rows]
    if structures and any(kind in structures for kind in types):
        text = [(lambda v, k=k: format_value(v, k, structures)) if k in structures else
                (lambda v, k=k: format_scalar(v, k)) for k in types]
        return [delimiter.join(f(v) for f, v in zip(text, row)) for row in rows]
    if rfc4180:
        def cell(value, kind):
            if kind == "symbol":
                return '"' + value.replace('"', '""') + '"'
            return format_scalar(value, kind)
        return [delimiter.join(cell(v, k) for v, k in zip(row, types)) for row in rows]
    if "float" not in types:
        return [delimiter.join(map(str, row)) for row in rows]
    return [delimiter.join(format_scalar(v, k) for v, k in zip(row, types)) for row in rows]


def format_int_rows(rows: np.ndarray, delimiter: str = "\t") -> list:
    """Output lines of encoded rows whose attributes are all numbers or unsigned (their
    codes are their values): one numba pass writes the text, no Python per value.

    >>> format_int_rows(np.array([[1, -2], [30, 4]]), ",")
    ['1,-2', '30,4']
    """
    from diffflow.datalog.values._text_kernel import int_rows_text

    if len(rows) == 0:
        return []
    text = int_rows_text(np.ascontiguousarray(rows, np.int64),
                         np.frombuffer(delimiter.encode("utf-8"), np.uint8))
    return text.tobytes().decode("utf-8").split("\n")[:-1]


def io_options(params: dict) -> tuple:
    """``(delimiter, headers, rfc4180, compress)`` of an ``.input``/``.output`` directive's
    parameters, with Soufflé's defaults (TAB, or ``,`` with ``rfc4180=true``).

    >>> io_options({}), io_options({"rfc4180": "true", "headers": "true"})
    (('\\t', False, False, False), (',', True, True, False))
    """
    rfc4180 = params.get("rfc4180", "false") == "true"
    return (params.get("delimiter", "," if rfc4180 else "\t"),
            params.get("headers", "false") == "true", rfc4180,
            params.get("compress", "false") == "true")


def fact_file_path(facts_dir, relation, directive) -> str:
    """Where ``.input`` reads a relation: ``filename=`` (relative to ``-F``) or ``<name>.facts``
    (``<name>.json`` with ``IO=jsonfile``).

    >>> from diffflow.datalog.analysis.analysed import Relation
    >>> from diffflow.datalog.syntax.ast import Directive
    >>> fact_file_path("in", Relation("e", [], [], None), Directive(1, 1, "input", "e"))
    'in/e.facts'
    """
    default = ".json" if directive.params.get("IO") == "jsonfile" else ".facts"
    filename = directive.params.get("filename", f"{relation.name}{default}")
    return os.path.join(facts_dir, filename)
