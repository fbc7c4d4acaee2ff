"""PySpark on pybroker: the ``pybroker`` data source (Spark's Kafka source and
sink over the Kafka protocol; ``spark_jobs.source``) and the bulk replay of
segment files (``spark_jobs.replay``).

    import spark_jobs
    spark_jobs.register(spark)            # then format("pybroker")

Map (what lives where):

    source.py          the ``pybroker`` DataSource: schema, batch and streaming readers,
                       offset ranges per Spark partition, rows or Arrow out
    source_options.py  the source's options (subscribe/assign, starting/ending offsets,
                       offsets JSON) as Spark's Kafka source reads them
    source_write.py    the ``pybroker`` sink: DataFrames to topics, batch and streaming
    sink_exactly_once.py  the sink's exactlyOnce mode: a transaction per task and micro-batch,
                       the batch id recorded in it, committed by the driver once every
                       task succeeded (client.transactional)
    kafka_io.py        KafkaIO: blocking calls over a private event-loop thread for Spark's
                       synchronous API; fetch_range; shared_client (one per worker process)
    kafka_requests.py  the asyncio side: client.verbs with leader routing and deadline-bound
                       retries; ClientConfig (``kafka.*`` options) and the source's errors
    rows.py            the Kafka source's schema (and its Arrow form) and rows from batches
    replay.py          the bulk replay job: command line, SparkSession, the private
                       ``pybroker_segments`` source, Parquet export through Spark
    segments.py        replay tasks: --from/--to bounds, the plan from log dirs, reading a
                       segment file's batches (no Spark, no pyarrow)
    replay_arrow.py    a segment's batches to Arrow record batches, vectorised with numpy
    replay_inflate.py  gzip bodies inflated by libdeflate (ctypes), zlib otherwise
    replay_parquet.py  Parquet written by the segment tasks themselves (local/file: output)
    replay_topic.py    the replay into a topic: batches produced with client.producer

What it may import: of ours, ``client`` (the Kafka client: every request goes
through ``client.verbs`` / ``client.producer`` / ``KafkaAdmin``, none is built
here), ``storage``'s readers (checkpoints, file names) and ``protocol``
(records); never broker, controller or tools, and nothing imports spark_jobs.
pyspark is imported at module level only by the modules Spark itself loads
(source*, rows, replay); numpy and pyarrow at module level only by
``replay_arrow`` (and so ``replay``), elsewhere inside functions; ``segments``,
``replay_topic``, ``kafka_requests`` and ``kafka_io`` import without any of them. The modules' imports form no cycle, function-local ones
included (tests/unit/spark_jobs/test_imports.py).

Where things go: a new option of the ``pybroker`` source goes in
``source_options.py`` (a sink option in ``source_write.py``'s ``parse_write``),
a new ``kafka.*`` client setting in ``ClientConfig``, a new request in
``client/`` first and then a method of ``KafkaRequests`` with its blocking
twin on ``KafkaIO``. A new Spark job gets a module of its own with its
command line (as ``replay.py``), sharing ``rows`` for the Kafka row shape and
``segments`` when it reads segment files.
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``pybroker`` data source with ``spark`` (a SparkSession)."""
    from spark_jobs.source import PyBrokerDataSource
    spark.dataSource.register(PyBrokerDataSource)
