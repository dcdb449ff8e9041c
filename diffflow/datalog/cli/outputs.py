"""What ``diffflow run`` writes: each output relation's state, and with ``--updates`` the
changes of every step, to ``-D DIR`` or to stdout (``-D -``, or an ``.output`` with
``IO=stdout``); an ``.output`` with ``IO=json`` (stdout) or ``IO=jsonfile``
(``DIR/<rel>.json``) has its state written as Soufflé's JSON, its changes as the others.

* the state: ``DIR/<rel>.csv`` (or the ``.output``'s ``filename=``), rows in Soufflé's
  format, with the attribute names first when the ``.output`` has ``headers=true``;
  written after the initial run and, with ``--updates``, again after the last step;
* the changes of step ``N``: ``DIR/<rel>.step-N.csv``, the rows that changed with a last
  column ``+1`` (now in the relation) or ``-1`` (no longer in it), sorted, with a header
  (the attribute names, then ``diff``) exactly when the state has one (``headers=true``,
  or on stdout with ``-D -``).

Every file is written to a temporary file beside it and renamed over it: a run that fails
or is interrupted leaves every file whole (the previous one, or the new one).  On stdout
each block is headed by a line of dashes, a title, the header when there is one, and
``===`` lines around the rows, as Soufflé prints outputs: the title is the relation's name
for its state after the initial run, ``<rel> step N changes`` for a step's changes and
``<rel> after step N`` for the final state.

>>> print_block("path step 1 changes", "x,y,diff", ["1,4,+1"])   # (delimiter=",")
---------------
path step 1 changes
x,y,diff
===============
1,4,+1
===============
"""
from __future__ import annotations

import contextlib
import gzip
import io
import os
import sys

from diffflow.common import failpoints

CHANGE_COLUMN = "diff"  # the header of the +1 / -1 column of a step's changes


def write_states(program, out_dir: str, after_step: int | None = None) -> list:
    """Write every output relation's state: after the initial run (``after_step=None``)
    or, with ``--updates``, after the last step (its title on stdout says so).  Returns
    ``[(file name, rows)]`` of what went to files (not stdout), for :func:`written_summary`."""
    from diffflow.datalog.values.facts import format_int_rows, io_options

    written = []
    for relation in program.relations.values():
        for d in relation.outputs:
            if d.params.get("IO") in ("json", "jsonfile"):
                rows = program.sorted_rows(relation.name)
                written += _write_json(program, relation, d, rows, out_dir)
                continue
            delimiter, headers, rfc4180, compress = io_options(d.params)
            codes = program.sorted_codes(relation.name)
            if _numba_writes(program, relation, codes):
                rows, lines = codes, format_int_rows(codes, delimiter)
            else:
                rows = program.sorted_rows(relation.name, codes)
                lines = _lines(program, relation, rows, delimiter, rfc4180=rfc4180)
            # Soufflé's -D - prints the attribute names too
            header = delimiter.join(relation.attributes) if headers or out_dir == "-" else None
            if _to_stdout(d, out_dir):
                title = relation.name if after_step is None else \
                    f"{relation.name} after step {after_step}"
                print_block(title, header, lines)
            else:
                filename = d.params.get("filename", f"{relation.name}.csv")
                write_file(os.path.join(out_dir, filename), header, lines, compress)
                written.append((filename, len(rows)))
    return written


#: the facts from which a relation of numbers is written by the numba writer: loading
#: numba costs a small program more than Python's formatting of fewer facts
NUMBA_WRITER_FROM = 100_000


def _numba_writes(program, relation, codes) -> bool:
    """Whether the numba writer writes ``codes`` (:meth:`Program.sorted_codes`): many
    facts, every attribute a number or unsigned (their codes are their values)."""
    return codes is not None and len(codes) >= NUMBA_WRITER_FROM and \
        all(kind == "int" for kind in program._output(relation.name).node.schema.types)


def _write_json(program, relation, directive, rows, out_dir: str) -> list:
    """An ``IO=json`` output on stdout, or an ``IO=jsonfile`` one in ``DIR/<rel>.json`` (or
    its ``filename=``), as Soufflé writes them (:mod:`~diffflow.datalog.values.json_io`)."""
    from diffflow.datalog.values.json_io import check_json_output, json_text

    structures = program.analysed.structures
    check_json_output(relation, structures, directive, program.source, program.filename)
    text = json_text(rows, relation, structures, directive.params.get("format") == "object")
    if directive.params.get("IO") == "json" or out_dir == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
        return []
    filename = directive.params.get("filename", f"{relation.name}.json")
    lines = text[:-1].split("\n")  # (write_file ends every line, the last one too)
    write_file(os.path.join(out_dir, filename), None, lines)
    return [(filename, len(rows))]


def written_summary(written: list, out_dir: str, most: int = 6) -> str:
    """One line saying which output files were written, for a person at a terminal.

    >>> written_summary([("path.csv", 3), ("edge.csv", 1)], "out")
    'wrote 2 outputs to out/: path.csv (3 rows), edge.csv (1 row)'
    """
    named = [f"{name} ({rows:,} row{'' if rows == 1 else 's'})" for name, rows in written[:most]]
    more = f", and {len(written) - most} more" if len(written) > most else ""
    return (f"wrote {len(written)} output{'' if len(written) == 1 else 's'} to "
            f"{out_dir.rstrip('/')}/: {', '.join(named)}{more}")


def write_changes(program, out_dir: str, number: int, changes_of=None) -> None:
    """Write the changes of every output relation since the previous call (step ``number``);
    ``changes_of(name)``: the changes to write instead (default ``program.changes``)."""
    from diffflow.datalog.values.facts import io_options

    for relation in program.relations.values():
        if not relation.outputs:
            continue
        changes = (changes_of or program.changes)(relation.name)
        directive = relation.outputs[0]
        delimiter, headers, rfc4180, _compress = io_options(directive.params)
        signs = ["+1" if d > 0 else "-1" for _, d in changes]
        if relation.arity == 0:
            lines = [f"(){delimiter}{sign}" for sign in signs]
        else:
            lines = _lines(program, relation, [row for row, _ in changes], delimiter,
                           extra=signs, rfc4180=rfc4180)
        # (a nullary relation's rows are "()": its column has no name)
        header = delimiter.join((relation.attributes or [""]) + [CHANGE_COLUMN])
        if not (headers or out_dir == "-"):
            header = None
        if any(_to_stdout(d, out_dir) for d in relation.outputs):
            print_block(f"{relation.name} step {number} changes", header, lines)
        if not all(_to_stdout(d, out_dir) for d in relation.outputs):
            write_file(os.path.join(out_dir, f"{relation.name}.step-{number}.csv"), header,
                       lines)


def _remove_stale_temporaries(folder: str, name: str) -> None:
    """Temporary files of ``name`` a killed run left (``kill -9`` skips any cleanup)."""
    prefix = f".{name}."
    for entry in os.listdir(folder):
        if entry.startswith(prefix) and entry.endswith(".tmp"):
            pid = entry[len(prefix):-len(".tmp")]
            if pid.isdigit() and int(pid) != os.getpid() and not _alive(int(pid)):
                os.remove(os.path.join(folder, entry))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def write_file(path: str, header, lines, compress: bool = False) -> None:
    """Write ``header`` (unless None) and ``lines`` to ``path`` through a temporary file
    renamed over it, so ``path`` is never half-written.

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "sub", "r.csv")
    >>> write_file(path, "x", ["1", "2"]); open(path).read(), os.listdir(os.path.dirname(path))
    ('x\\n1\\n2\\n', ['r.csv'])
    """
    folder, name = os.path.split(path)
    os.makedirs(folder or ".", exist_ok=True)  # filename="sub/out.csv"
    temporary = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
    _remove_stale_temporaries(folder or ".", name)
    try:
        with _text_file(temporary, name, compress) as f:
            if header is not None:
                f.write(header + "\n")
            if lines:
                f.write("\n".join(lines) + "\n")
        failpoints.reached("output")
        os.replace(temporary, path)
    except BaseException:  # (Ctrl-C too) no temporary file is left behind
        if os.path.exists(temporary):
            os.remove(temporary)
        raise


@contextlib.contextmanager
def _text_file(temporary: str, name: str, compress: bool):
    """A text file written at ``temporary``; with ``compress`` gzip (as Soufflé's
    ``compress=true``), naming ``name`` (not the temporary) and no time, so that the same
    facts give the same bytes."""
    if not compress:
        with open(temporary, "w", encoding="utf-8", newline="\n") as f:
            yield f
        return
    with open(temporary, "wb") as raw, \
            gzip.GzipFile(filename=name.removesuffix(".gz"), mode="wb", fileobj=raw,
                          mtime=0) as packed, \
            io.TextIOWrapper(packed, encoding="utf-8", newline="\n") as f:
        yield f


def print_block(title: str, header, lines) -> None:
    """Print one relation's rows on stdout as Soufflé prints an output (see the module)."""
    out = sys.stdout
    out.write("---------------\n" + title + "\n")
    if header is not None:
        out.write(header + "\n")
    out.write("===============\n")
    if lines:
        out.write("\n".join(lines) + "\n")
    out.write("===============\n")
    out.flush()


def _to_stdout(directive, out_dir: str) -> bool:
    return out_dir == "-" or directive.params.get("IO") in ("stdout", "json")


def _lines(program, relation, rows, delimiter, extra=None, rfc4180=False) -> list:
    from diffflow.datalog.values.facts import format_rows

    lines = format_rows(rows, relation.types, delimiter, rfc4180, program.analysed.structures)
    if extra is not None:
        lines = [f"{line}{delimiter}{tag}" for line, tag in zip(lines, extra)]
    return lines
