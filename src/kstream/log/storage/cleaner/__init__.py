"""The log cleaner of compacted topics (cleanup.policy=compact).

It keeps the latest record of each key in a replica's sealed segments, offsets
preserved: ``frame_rewrite`` is the per-frame rule, ``replica_cleaner`` one
replica's clean. The crash-safe swap and its recovery (run when a writer opens
a replica) are :mod:`kstream.log.storage.segment_swap`; its end offset, the
``cleaner-offset-checkpoint`` that truncations lower, is
:mod:`kstream.log.storage.cleaner_checkpoint`. Who decides when, and
with which plan, is :mod:`kstream.log.cluster.compaction` (it knows the
replicas and the LSO).
"""
