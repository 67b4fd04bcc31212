"""Registers the Python ``dbdf`` data source a second time, as ``dbdf_python``: where the
JVM source of the jar (``dbdf.spark.jar()``) holds the name ``dbdf``, its writes run
through this one, and reads of URLs or of the ``array`` and ``triples`` layouts name it.
"""

try:
    from dbdf.spark import DbdfPythonDataSource as DefaultSource
except ImportError:  # pragma: no cover - the spark extra is missing
    pass
