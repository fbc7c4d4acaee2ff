"""PySpark on pybroker: the ``pybroker`` data source (Spark's Kafka source and
sink over the Kafka protocol; ``spark_jobs.source``) and the bulk replay of
segment files (``spark_jobs.replay``).

    import spark_jobs
    spark_jobs.register(spark)            # then format("pybroker")
"""

from __future__ import annotations

from typing import Any


def register(spark: Any) -> None:
    """Register the ``pybroker`` data source with ``spark`` (a SparkSession)."""
    from spark_jobs.source import PyBrokerDataSource
    spark.dataSource.register(PyBrokerDataSource)
