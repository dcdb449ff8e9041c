"""Stage 1 of the Datalog front end, text to syntax tree: the C preprocessor
(:mod:`.preprocess`), the grammar and parser (:mod:`.grammar`, :mod:`.parser`) building the
tree (:mod:`.ast`), the language's intrinsic types and functors (:mod:`.intrinsics`),
rendering terms back to text (:mod:`.render`) and the helpers of located errors
(:mod:`.errors`).  ``docs/ARCHITECTURE.md`` lists the stages; :mod:`diffflow.datalog.passes`
the passes in order.
"""
