"""A Datalog program timed from scratch and per update: the shared loop of the benchmarks
that remove one random fact and put it back."""
from __future__ import annotations

import random
import statistics
import time

import diffflow as dd


def scratch_and_updates(source: str, relation: str, facts: list, output: str, updates: int,
                        seed: int) -> tuple:
    """``(rows of output, seconds from scratch, median seconds per update)``: ``facts`` of
    ``relation`` committed at once, then ``updates`` times a random fact removed and
    committed, put back and committed (an update is the mean of the two commits)."""
    rng = random.Random(seed)
    program = dd.Program(source)
    program.insert(relation, facts)
    start = time.perf_counter()
    program.commit()
    scratch = time.perf_counter() - start
    size = program.size(output)
    times = []
    for _ in range(updates):
        fact = facts[rng.randrange(len(facts))]
        start = time.perf_counter()
        program.remove(relation, [fact])
        program.commit()
        program.insert(relation, [fact])
        program.commit()
        times.append((time.perf_counter() - start) / 2)
    program.close()
    return size, scratch, statistics.median(times)
