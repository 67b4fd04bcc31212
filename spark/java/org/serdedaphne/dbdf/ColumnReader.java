package org.serdedaphne.dbdf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.ValueVector;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DecimalType;
import org.apache.spark.sql.types.DoubleType;
import org.apache.spark.sql.types.FloatType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.vectorized.ArrowColumnVector;
import org.apache.spark.sql.vectorized.ColumnVector;
import org.apache.spark.sql.vectorized.ColumnarBatch;

/**
 * A partition's rows, read in batches of about {@link #BATCH_BYTES} into Arrow vectors that
 * the native side fills in place; the vectors are reused from batch to batch, as Spark's own
 * columnar readers reuse theirs.
 */
final class ColumnReader implements PartitionReader<ColumnarBatch> {
  /** Bytes of cells per batch. */
  static final long BATCH_BYTES = 4L << 20;
  /** Rows per batch at least: a JNI call and a window's planning per batch. */
  static final long LEAST_ROWS = 64;

  private final Source source;
  private final long stop;
  private final int batchRows;
  private final BufferAllocator allocator = new RootAllocator();
  private final BaseFixedWidthVector[] vectors;
  private final BigIntVector index;
  private final ColumnarBatch batch;
  private long next;

  ColumnReader(Source source, long start, long stop) {
    this.source = source;
    this.next = start;
    this.stop = stop;
    long rows = source.batchRows > 0
        ? source.batchRows
        : Math.max(LEAST_ROWS, BATCH_BYTES / source.rowBytes());
    this.batchRows = (int) Math.max(1, Math.min(rows, Math.min(stop - start, 1 << 20)));
    int width = source.columns.length + (source.rowIndex != null ? 1 : 0);
    ColumnVector[] columns = new ColumnVector[width];
    vectors = new BaseFixedWidthVector[source.columns.length];
    int at = 0;
    if (source.rowIndex != null) {
      index = new BigIntVector(source.rowIndex, allocator);
      prepare(index);
      columns[at++] = new Reused(index);
    } else {
      index = null;
    }
    for (int k = 0; k < vectors.length; k++) {
      int j = source.columns[k];
      vectors[k] = vector(source.plan.names[j], source.plan.sparkTypes[j]);
      prepare(vectors[k]);
      columns[at++] = new Reused(vectors[k]);
    }
    batch = new ColumnarBatch(columns, 0);
  }

  private BaseFixedWidthVector vector(String name, DataType type) {
    if (type instanceof ByteType) {
      return new TinyIntVector(name, allocator);
    } else if (type instanceof ShortType) {
      return new SmallIntVector(name, allocator);
    } else if (type instanceof IntegerType) {
      return new IntVector(name, allocator);
    } else if (type instanceof LongType) {
      return new BigIntVector(name, allocator);
    } else if (type instanceof FloatType) {
      return new Float4Vector(name, allocator);
    } else if (type instanceof DoubleType) {
      return new Float8Vector(name, allocator);
    } else if (type instanceof DecimalType) {
      DecimalType decimal = (DecimalType) type;
      return new DecimalVector(name, allocator, decimal.precision(), decimal.scale());
    }
    throw new IllegalArgumentException("no column vector for " + type);
  }

  /** Room for a batch, every row valid (the format has no nulls). */
  private void prepare(BaseFixedWidthVector vector) {
    vector.allocateNew(batchRows);
    vector.getValidityBuffer().setOne(0, vector.getValidityBuffer().capacity());
  }

  @Override
  public boolean next() throws IOException {
    if (next >= stop) {
      return false;
    }
    Plan.Piece piece = pieceOf(next);
    long n = Math.min(batchRows, Math.min(stop, piece.first + piece.rows) - next);
    if (vectors.length > 0) {
      ByteBuffer[] outputs = new ByteBuffer[vectors.length];
      for (int k = 0; k < vectors.length; k++) {
        outputs[k] = vectors[k].getDataBuffer().nioBuffer(0, (int) n * vectors[k].getTypeWidth());
      }
      long from = next - piece.first;
      Native.read(piece.path, piece.size, piece.mtimeNs, piece.object, source.plan.dialect,
          from, from + n, source.columns, outputs);
    }
    for (BaseFixedWidthVector vector : vectors) {
      vector.setValueCount((int) n);
    }
    if (index != null) {
      for (int i = 0; i < n; i++) {
        index.set(i, next + i);
      }
      index.setValueCount((int) n);
    }
    batch.setNumRows((int) n);
    next += n;
    return true;
  }

  /** The file that holds row {@code row} of the object. */
  private Plan.Piece pieceOf(long row) {
    for (Plan.Piece piece : source.plan.pieces) {
      if (row < piece.first + piece.rows) {
        return piece;
      }
    }
    throw new UncheckedIOException(
        new IOException("row " + row + " is past the object's " + source.plan.rows));
  }

  /**
   * A vector filled again for every batch. Spark frees a consumed batch's vectors
   * ({@code closeIfFreeable}) unless they are reused, as its own writable vectors are; these
   * are freed by {@link #close}.
   */
  private static final class Reused extends ArrowColumnVector {
    Reused(ValueVector vector) {
      super(vector);
    }

    @Override
    public void closeIfFreeable() {}
  }

  @Override
  public ColumnarBatch get() {
    return batch;
  }

  @Override
  public void close() {
    batch.close();
    allocator.close();
  }
}
