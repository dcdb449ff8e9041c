"""Live rescaling (Megaphone's model, ``docs/RESCALE.md``): plans that move bins of keys
between partitions at epoch boundaries (:mod:`.plans`), the driver that applies their steps
(:mod:`.driver`) and paces the background work between them (:mod:`.pacing`), moving a
bin's trace rows between partition engines (:mod:`.migrate`) and indexing big batches by
step (:mod:`.step_index`).  :meth:`diffflow.Dataflow.rescale` is the way in.
"""
