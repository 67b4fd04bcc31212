package org.serdedaphne.dbdf;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.expressions.aggregate.AggregateFunc;
import org.apache.spark.sql.connector.expressions.aggregate.Aggregation;
import org.apache.spark.sql.connector.expressions.aggregate.Count;
import org.apache.spark.sql.connector.expressions.aggregate.CountStar;
import org.apache.spark.sql.connector.read.LocalScan;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.connector.read.SupportsPushDownAggregates;
import org.apache.spark.sql.connector.read.SupportsPushDownRequiredColumns;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A scan of the columns a query uses; {@code count()} (and counts of columns, which hold no
 * nulls) without grouping is answered from the plan's row count, reading no values.
 */
final class DbdfScanBuilder
    implements ScanBuilder, SupportsPushDownRequiredColumns, SupportsPushDownAggregates {
  private Source source;
  /** The counts pushed down, or null. */
  private AggregateFunc[] counts;

  DbdfScanBuilder(Source source) {
    this.source = source;
  }

  @Override
  public void pruneColumns(StructType required) {
    source = source.pruned(required);
  }

  @Override
  public boolean supportCompletePushDown(Aggregation aggregation) {
    return isCount(aggregation);
  }

  @Override
  public boolean pushAggregation(Aggregation aggregation) {
    if (!isCount(aggregation)) {
      return false;
    }
    counts = aggregation.aggregateExpressions();
    return true;
  }

  /** Counts of rows or of columns (never null here), not distinct, not grouped. */
  private static boolean isCount(Aggregation aggregation) {
    if (aggregation.groupByExpressions().length > 0) {
      return false;
    }
    for (AggregateFunc f : aggregation.aggregateExpressions()) {
      boolean count = f instanceof CountStar || (f instanceof Count && !((Count) f).isDistinct());
      if (!count) {
        return false;
      }
    }
    return aggregation.aggregateExpressions().length > 0;
  }

  @Override
  public Scan build() {
    if (counts != null) {
      return new Counted(source.plan.rows, counts.length);
    }
    return new DbdfScan(source);
  }

  /** The answer of pushed-down counts: one row, each the object's row count. */
  private static final class Counted implements LocalScan {
    private final long rows;
    private final int width;

    Counted(long rows, int width) {
      this.rows = rows;
      this.width = width;
    }

    @Override
    public InternalRow[] rows() {
      Object[] values = new Object[width];
      java.util.Arrays.fill(values, rows);
      return new InternalRow[] {new GenericInternalRow(values)};
    }

    @Override
    public StructType readSchema() {
      List<StructField> fields = new ArrayList<>();
      for (int k = 0; k < width; k++) {
        fields.add(new StructField("count" + k, DataTypes.LongType, false, Metadata.empty()));
      }
      return new StructType(fields.toArray(new StructField[0]));
    }

    @Override
    public String description() {
      return "dbdf count from the headers: " + rows;
    }
  }
}
