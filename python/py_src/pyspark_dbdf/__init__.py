"""Registers the ``dbdf`` data source with Spark by itself: Spark looks up Python data sources
in the modules named ``pyspark_*`` that define ``DefaultSource`` (pyspark 4).

Without what the source needs (the ``spark`` extra), there is no ``DefaultSource``: Spark's
lookup, which imports every such module, then passes this one by instead of failing.
"""

try:
    from dbdf.spark import DbdfDataSource as DefaultSource
except ImportError:  # pragma: no cover - the spark extra is missing
    pass
