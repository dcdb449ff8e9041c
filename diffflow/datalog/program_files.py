"""Soufflé-style fact files of a :class:`~diffflow.datalog.program.Program`: where each
``.input`` directive reads, and reading them all before inserting any (a part of
``Program``, kept apart for size).

>>> import diffflow as dd
>>> dd.Program(".decl e(x: number)\\n.input e").input_files("in")["e"][0][0]
'in/e.facts'
"""
from __future__ import annotations

import numpy as np


class ProgramFiles:
    """The fact files of a :class:`~diffflow.datalog.program.Program`."""

    # -- Soufflé-style files ---------------------------------------------------------------------
    def input_files(self, facts_dir) -> dict:
        """``{relation: [(path, delimiter, headers, rfc4180, io), ...]}``: one entry per
        ``.input`` directive (a relation read from several files has the union of their
        facts, as in Soufflé); ``io`` is ``"file"`` or ``"jsonfile"``.

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number)\\n.input e\\n.input e(IO=jsonfile)")
        >>> files = p.input_files("in")
        >>> [(path, io) for path, *_, io in files["e"]]
        [('in/e.facts', 'file'), ('in/e.json', 'jsonfile')]
        """
        from diffflow.datalog.values.facts import fact_file_path, io_options

        files = {}
        for relation in self.relations.values():
            for d in relation.inputs:
                delimiter, headers, rfc4180, _compress = io_options(d.params)
                files.setdefault(relation.name, []).append(
                    (fact_file_path(facts_dir, relation, d), delimiter, headers, rfc4180,
                     d.params.get("IO", "file")))
        return files

    def load_facts(self, facts_dir, progress=None, missing_ok: bool = False) -> dict:
        """Insert every ``.input`` relation's file, as Soufflé's ``-F facts_dir`` reads them.

        A file that cannot be opened is an error (Soufflé: "Cannot open fact file"), unless
        ``missing_ok`` (Soufflé's ``-w``), which reads it as an empty relation.  Every file
        is read and checked before any fact is inserted, so bad input changes nothing.
        Returns ``{relation: facts read}``; ``progress(message)`` is told about large files.

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number)\\n.input e")
        >>> p.load_facts("no/such/folder", missing_ok=True)
        {'e': 0}
        """
        return self.insert_read(self.read_facts(facts_dir, progress, missing_ok))

    def read_facts(self, facts_dir, progress=None, missing_ok: bool = False) -> dict:
        """``{relation: rows}`` of every ``.input`` relation's file, read and checked but not
        inserted (:meth:`insert_read` does that; :meth:`load_facts` is both).

        >>> import diffflow as dd
        >>> dd.Program(".decl e(x: number)\\n.input e").read_facts("no/such/folder", missing_ok=True)
        {'e': []}
        """
        from diffflow.datalog.values.small_facts import read_input_files

        return read_input_files(self.input_files(facts_dir), self.relations,
                                self.analysed.structures, self.filename, progress, missing_ok)

    def insert_read(self, loaded: dict) -> dict:
        """Insert what :meth:`read_facts` read (of this program's text, possibly another
        build of it); returns ``{relation: facts read}``."""
        from diffflow.datalog.values.small_facts import Parts

        encoded = {}
        for name, rows in loaded.items():  # (all encoded, so bad input changes nothing)
            if isinstance(rows, Parts):  # several files: their union
                parts = [self.encode(name, part) for part in rows]
                encoded[name] = np.concatenate(parts) if parts else self.encode(name, [])
            else:
                encoded[name] = self.encode(name, rows)
        for name, rows in encoded.items():
            self._change(name, rows, +1)
        return {name: sum(map(len, rows)) if isinstance(rows, Parts) else len(rows)
                for name, rows in loaded.items()}

    def sorted_rows(self, name: str, codes=None) -> list:
        """The relation's facts as tuples in value order, as output files list them:
        numbers by value, symbols as text, records and ADTs as
        :func:`~diffflow.datalog.values.structures.row_order` orders them.  Facts without
        records or ADTs are ordered by a numpy sort of their columns (symbols ranked by
        their distinct texts), so a large relation costs no Python per row to order;
        ``codes``: what :meth:`sorted_codes` gave already.

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number, s: symbol)")
        >>> _ = p.insert("e", [(10, "b"), (-2, "z"), (10, "a")]); p.commit()
        >>> p.sorted_rows("e")
        [(-2, 'z'), (10, 'a'), (10, 'b')]
        """
        from diffflow.common.schema import decode_rows
        from diffflow.datalog.values.structures import row_order

        codes = self.sorted_codes(name) if codes is None else codes
        if codes is None:
            return sorted(self.relation(name), key=row_order)
        return decode_rows(codes, self._output(name).node.schema, self.flow.symbols)

    def sorted_codes(self, name: str):
        """The relation's encoded facts (an int64 array) in the order of
        :meth:`sorted_rows`, or ``None`` for a relation with record or ADT attributes or
        none at all (their order needs the values).

        >>> import diffflow as dd
        >>> p = dd.Program(".decl e(x: number)"); _ = p.insert("e", [(3,), (-1,)]); p.commit()
        >>> p.sorted_codes("e").tolist()
        [[-1], [3]]
        """
        from diffflow.common.schema import text_ranks
        from diffflow.datalog.lower.rows import structured_positions

        relation = self.relations[name]
        if relation.arity == 0 or structured_positions(relation, self.analysed.structures):
            return None
        rows = self._encoded(name)
        keys = [text_ranks(rows[:, j], self.flow.symbols) if kind == "str" else rows[:, j]
                for j, kind in enumerate(self._output(name).node.schema.types)]
        return rows[np.lexsort(keys[::-1])]  # (int and float codes sort by value)
