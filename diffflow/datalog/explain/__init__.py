"""Stage 6 of the Datalog front end: why a fact is (or is not) derived.  Proofs of minimal
height (:mod:`.derived`) from witnesses read off indexes (:mod:`.witness`) or asked of the
engine; why not (:mod:`.absent`); proofs as Soufflé prints them (:mod:`.proof`); replay and
correct (:mod:`.correct`, with small replays in Python, :mod:`.interpret`, and the shared
clause evaluator, :mod:`.evaluate`); live explanations (:mod:`.watch`).  The vocabulary is
:mod:`diffflow.explain.vocabulary`'s, shared with collection explanations.
"""
