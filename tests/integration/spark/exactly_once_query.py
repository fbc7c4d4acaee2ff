"""A streaming query for test_exactly_once_sink.py, run as its own process so the
test can kill -9 it (driver and JVM: its process group) mid-batch:

    python exactly_once_query.py BOOTSTRAP INPUT OUTPUT CHECKPOINT [available-now] [hold=FILE]

It copies INPUT (the ``pybroker`` source, 300 records per micro-batch) to OUTPUT
through the ``pybroker`` sink with exactlyOnce=true, one row per input record
(value = the input's value), sent in 256 KiB batches during each task's transaction.
With ``available-now`` it stops when the input is drained; otherwise it runs
until killed.

With ``hold=FILE``, a row whose input index (the N of ``v-N...``) is HOLD_FROM or
more waits, while FILE exists, in a Python UDF between the source and the sink:
each task of the first micro-batch (input indices 0-299, 150 per partition) hands
the sink its first 125 rows and then stops inside its open transaction, so the test
kills the query with records of an open transaction on the log, not at whatever point
a poll happened to see one. Spark passes rows on in batches (the UDF's input, the
sink's Arrow batches): both are cut to BATCH_ROWS so rows reach the sink before the
held one.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
HOLD_FROM = 250            # input index; < 300, the first micro-batch's end
BATCH_ROWS = "10"          # < 125 rows: a task's rows before the hold reach the sink


def held_until_gone(hold: str) -> Any:
    """value -> value, waiting while ``hold`` exists for rows from HOLD_FROM on."""
    def gate(value: bytes) -> bytes:
        if int(value[2:value.index(b".")]) >= HOLD_FROM:
            while os.path.exists(hold):
                time.sleep(0.05)
        return value
    return gate


def main() -> None:
    bootstrap, source, output, checkpoint = sys.argv[1:5]
    extra = sys.argv[5:]
    available_now = "available-now" in extra
    hold = next((a[len("hold="):] for a in extra if a.startswith("hold=")), None)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))])
    os.environ["PYSPARK_PYTHON"] = sys.executable
    sys.path.insert(0, str(REPO))
    from pyspark.sql import SparkSession

    import spark_jobs
    jvm_tmp = Path(checkpoint).parent / "jvm-tmp"   # the JVM's temp dirs: this one is killed,
    jvm_tmp.mkdir(parents=True, exist_ok=True)     # so they would stay behind in /tmp
    spark = (SparkSession.builder.master("local[2]").appName("pybroker-eos")
             .config("spark.driver.extraJavaOptions", f"-Djava.io.tmpdir={jvm_tmp}")
             .config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "2")
             .config("spark.local.dir", str(Path(checkpoint).parent / "local"))
             .config("spark.sql.execution.python.udf.maxRecordsPerBatch", BATCH_ROWS)
             .config("spark.sql.execution.arrow.maxRecordsPerBatch", BATCH_ROWS)
             .config("spark.sql.execution.pythonUDF.arrow.enabled", "false")
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    spark_jobs.register(spark)
    frame = (spark.readStream.format("pybroker").option("kafka.bootstrap.servers", bootstrap)
             .option("subscribe", source).option("startingOffsets", "earliest")
             .option("maxOffsetsPerTrigger", "300").load().select("value"))
    if hold is not None:
        from pyspark.sql.functions import col, udf
        from pyspark.sql.types import BinaryType
        frame = frame.select(udf(held_until_gone(hold), BinaryType())(col("value")).alias("value"))
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
