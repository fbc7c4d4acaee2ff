"""The on-disk log, in Kafka's own formats: synchronous file I/O, no networking.

Of ours it imports only ``protocol.records`` and ``protocol.compression``
(tests/unit/test_layering.py); the broker drives it and ``spark_jobs`` reads its files.

Map (Kafka's class in brackets):

    filenames.py        20-digit base-offset names and suffixes [LogFileUtils]
    mmap_index.py       fixed-width sorted mmap'd index files [AbstractIndex]
    fdless_mmap.py      mappings that keep no file descriptor (one fd per partition)
    offset_index.py     .index entries (relative offset, position) [OffsetIndex]
    time_index.py       .timeindex entries (timestamp, relative offset) [TimeIndex]
    txn_index.py        .txnindex aborted-transaction entries [TransactionIndex]; log.py
                        appends and collects them through each segment
    segment.py          one segment: .log + .index + .timeindex + .txnindex [LogSegment]
    batch_writes.py     the bytes an append writes (headers patched, pwritev) [FileRecords]
    log.py              one partition's segments: append, read, roll, truncate,
                        retention [UnifiedLog]
    log_types.py        what a log's append and read return, and its errors
    io_guard.py         the write-path guard: an OSError takes the log dir offline
                        [maybeHandleIOException, KafkaStorageException]
    recovery.py         loading a partition directory, recovery after a crash [LogLoader]
    leader_epoch.py     leader-epoch cache and checkpoint [LeaderEpochFileCache]
    checkpoints.py      recovery-point / high-watermark / log-start checkpoint files
    log_manager.py      every partition under log.dirs, offline log dirs [LogManager]
    cleaner.py          compaction scheduling and runs [LogCleaner]
    compaction.py       the offset map and the batch filter of a compaction
    config.py           the settings storage reads (LogConfig), Kafka's defaults
    producer_snapshot.py  ``<offset>.snapshot`` producer-state files: write, read, prune

Where things go: a new storage feature (an index, a retention rule) is a module here
beside the one it extends, driven by ``log.py``; reads stay pread-based and data is
never decoded record by record on the fetch path.
"""
