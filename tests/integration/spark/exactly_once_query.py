"""A streaming query for test_exactly_once_sink.py, run as its own process so the
test can kill -9 it (driver and JVM: its process group) mid-batch:

    python exactly_once_query.py BOOTSTRAP INPUT OUTPUT CHECKPOINT [available-now]

It copies INPUT (the ``pybroker`` source, 300 records per micro-batch) to OUTPUT
through the ``pybroker`` sink with exactlyOnce=true, one row per input record
(value = the input's value), sent in 256 KiB batches during each task's transaction.
With ``available-now`` it stops when the input is drained; otherwise it runs
until killed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def main() -> None:
    bootstrap, source, output, checkpoint = sys.argv[1:5]
    available_now = sys.argv[5:] == ["available-now"]
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    sys.path.insert(0, str(REPO))
    from pyspark.sql import SparkSession

    import spark_jobs
    spark = (SparkSession.builder.master("local[2]").appName("pybroker-eos")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.local.dir", str(Path(checkpoint).parent / "local"))
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(spark)
    frame = (spark.readStream.format("pybroker").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "300").load().select("value"))
    writer = (frame.writeStream.format("pybroker").option("kafka.bootstrap.servers", bootstrap)
              .option("topic", output).option("exactlyOnce", "true")
              .option("kafka.transaction.timeout.ms", "10000")
              .option("kafka.batch.size", "262144")  # records go out during the transaction
              .option("checkpointLocation", checkpoint))
    writer = writer.trigger(availableNow=True) if available_now else \
        writer.trigger(processingTime="200 milliseconds")
    query = writer.start()
    print("started", flush=True)
    query.awaitTermination()
    spark.stop()


if __name__ == "__main__":
    main()
