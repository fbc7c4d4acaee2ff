"""The coordinator runtime: what the group and transaction coordinators share.

Map:

    runtime.py     CoordinatorRuntime: one per coordinator (same class for groups and
                   transactions): its log seam, clock, partition ownership, key hash,
                   tasks, and starting a partition's load on leadership
    log_seam.py    OffsetsLog: the seam to a coordinator partition's log (append one
                   batch, read the log back in chunks, our leader epoch), the entries
                   a load reads (records, transactional records, markers), the batch
                   an append writes
    partitions.py  CoordinatorPartitions: which partitions this broker serves or is
                   loading, and their coordinator epochs (fencing by leader epoch);
                   the key -> partition hash (Kafka's partitionFor)
    purgatory.py   DelayedOperation, Purgatory and the timer seam (delayed joins and
                   heartbeats here; the broker's DelayedProduce / DelayedFetch too),
                   and the RequestClock a delayed request's wait is added to
"""
