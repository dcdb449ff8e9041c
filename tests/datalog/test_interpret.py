"""The Python replay evaluator (diffflow.datalog.explain.interpret) computes what the tests' reference
evaluator computes, on every program of the incremental and explanation suites and random
inputs; constructs it cannot evaluate make it decline (``None``), never answer wrongly."""
import random

import pytest

import diffflow as dd
from diffflow.datalog.explain.interpret import interpret
from tests.datalog.test_explain import CASES
from tests.datalog.test_incremental import FUNCTORS, PROGRAMS, _random_row
from tests.support.datalog_reference import evaluate


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted({**PROGRAMS, **CASES}))   # components among them
def test_the_replay_evaluator_agrees_with_the_reference(name):
    source, inputs = {**PROGRAMS, **CASES}[name]
    program = dd.Program(source, functors=FUNCTORS.get(name))
    rng = random.Random(name)
    answered = 0
    for _ in range(8):
        facts = {rel: {_random_row(rng, columns) for _ in range(rng.randint(0, 7))}
                 for rel, columns in inputs.items()}
        for rel, relation in program.relations.items():   # the text's facts are input too
            text = {tuple(a.value for a in f.head.args) for f in relation.facts}
            if text:
                facts[rel] = facts.get(rel, set()) | text
        got = interpret(program, facts)
        if got is None:
            continue
        want = evaluate(source, facts, functors=FUNCTORS.get(name))
        assert {n: got[n] for n in want} == want
        answered += 1
    assert answered == 8, f"{name}: declined {8 - answered} times"
