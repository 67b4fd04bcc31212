package org.serdedaphne.dbdf;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A scan of the object's rows in partitions the plan chose (its segments, its rows of tiles,
 * or bands of about 128 MiB), each read on an executor into column vectors.
 */
final class DbdfScan implements Scan, Batch {
  private final Source source;

  DbdfScan(Source source) {
    this.source = source;
  }

  @Override
  public StructType readSchema() {
    return source.schema();
  }

  @Override
  public String description() {
    return "dbdf " + source.plan.dataType + " " + source.schema().simpleString();
  }

  @Override
  public Batch toBatch() {
    return this;
  }

  /** Rows {@code start} to {@code stop} of the object. */
  static final class Rows implements InputPartition {
    private static final long serialVersionUID = 1L;
    final long start;
    final long stop;

    Rows(long start, long stop) {
      this.start = start;
      this.stop = stop;
    }
  }

  @Override
  public InputPartition[] planInputPartitions() {
    List<InputPartition> parts = new ArrayList<>();
    long start = 0;
    for (long rows : source.plan.parts) {
      if (rows > 0) {
        parts.add(new Rows(start, start + rows));
      }
      start += rows;
    }
    return parts.toArray(new InputPartition[0]);
  }

  @Override
  public PartitionReaderFactory createReaderFactory() {
    return new Readers(source);
  }

  /** Makes a partition's reader on its executor. */
  private static final class Readers implements PartitionReaderFactory {
    private static final long serialVersionUID = 1L;
    private final Source source;

    Readers(Source source) {
      this.source = source;
    }

    @Override
    public boolean supportColumnarReads(InputPartition partition) {
      return true;
    }

    @Override
    public PartitionReader<ColumnarBatch> createColumnarReader(InputPartition partition) {
      Rows rows = (Rows) partition;
      return new ColumnReader(source, rows.start, rows.stop);
    }

    @Override
    public PartitionReader<InternalRow> createReader(InputPartition partition) {
      throw new UnsupportedOperationException("the dbdf source reads columns");
    }
  }
}
