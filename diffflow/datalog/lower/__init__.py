"""Stage 5 of the Datalog front end: an analysed program lowered to a dataflow built with
the collection API -- relations as collections (:mod:`.compiler`, :mod:`.columns`), clause
bodies as join plans (:mod:`.joins`) with aggregates (:mod:`.aggregates`), declarations'
relation values (:mod:`.relation_value`: eqrel, choice-domain, subsumption, limits), and the
provenance lowering that adds proof heights and witness queries (:mod:`.provenance`).
"""
