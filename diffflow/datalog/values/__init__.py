"""Stage 2 of the Datalog front end: values -- functors evaluated on columns and on single
values (:mod:`.functors`), generators (:mod:`.generators`), records and algebraic data
types in columns, in Python and as text (:mod:`.structures`, :mod:`.record_text`), and
Soufflé's fact and output files (:mod:`.facts`).
"""
