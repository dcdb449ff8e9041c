"""Symbol ids hashed without pandas equal pandas' own, bit for bit (checkpoints store ids and
workers exchange them, so a process that hashed with numpy must agree with one that used
pandas).  That a first query with strings imports no pandas: tests/test_import.py."""
from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from diffflow.common import schema, string_hash


def pandas_ids(values) -> list:
    return pd.util.hash_array(np.array(values, dtype=object), categorize=False).tolist()


# text UTF-8 can encode (lone surrogates cannot: pandas refuses them, and so do we, below)
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(st.lists(TEXT, max_size=60))
def test_every_batch_size_hashes_as_pandas_does(values):
    assert string_hash.hash_small_batch(values).tolist() == pandas_ids(values)


@pytest.mark.parametrize("length", [0, 1, 7, 8, 9, 15, 16, 17, 255, 256, 257, 512])
def test_each_length_around_siphash_words_and_its_length_byte(length):
    # (the last word carries the length mod 256; rows of many lengths share one layout;
    # 512 "é" are MAX_BYTES of UTF-8)
    values = ["\x00" * length, "é" * length, "x" * length] + [f"{i}" * (i % 40) for i in range(60)]
    assert string_hash.hash_small_batch(values).tolist() == pandas_ids(values)
    assert string_hash.hash_small_batch(values[:2]).tolist() == pandas_ids(values[:2])


def test_batches_numpy_does_not_serve_go_to_pandas_with_its_errors():
    assert string_hash.hash_small_batch([b"bytes"]) is None
    assert string_hash.hash_small_batch(["a", None]) is None
    with pytest.raises(UnicodeEncodeError):  # (as pandas refuses it)
        string_hash.hash_small_batch(["\ud800"])
    assert string_hash.hash_small_batch(["a"] * (string_hash.NUMPY_MAX_STRINGS + 1)) is None
    assert string_hash.hash_small_batch(["a" * string_hash.NUMPY_MAX_CELLS]) is None
    # (numpy steps once per 8 bytes of the longest string: a long one goes to pandas)
    assert string_hash.hash_small_batch(["a" * (string_hash.MAX_BYTES + 1)]) is None
    assert string_hash.hash_small_batch(["a" * string_hash.MAX_BYTES]) is not None
    with pytest.raises(UnicodeEncodeError):  # (as before: pandas names the bad character)
        schema.hash_strings(np.array(["ok", "\ud800"], dtype=object))


def test_the_symbol_table_gives_pandas_ids_on_both_paths(monkeypatch):
    values = [f"w{i}" for i in range(100)] + ["", "é漢🙂"]
    monkeypatch.setattr(schema, "_hashed_without_pandas", 0.0)
    monkeypatch.delitem(sys.modules, "pandas")          # the numpy path
    small = schema.SymbolTable().encode(values)
    monkeypatch.setitem(sys.modules, "pandas", pd)
    monkeypatch.setattr(schema, "_hashed_without_pandas", schema.PANDAS_IMPORT_SECONDS)
    large = schema.SymbolTable().encode(values)        # the pandas path
    expected = np.array(pandas_ids(values), dtype=np.uint64).view(np.int64).tolist()
    assert small.tolist() == large.tolist() == expected
