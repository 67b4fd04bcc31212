package org.serdedaphne.dbdf;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A planned read: the object's plan, the columns read (positions in the object, in the
 * order given) and the optional column of row numbers. It travels to the executors.
 */
final class Source implements Serializable {
  private static final long serialVersionUID = 1L;
  final Plan plan;
  final int[] columns;
  /** The name of a first column of row numbers, or null. */
  final String rowIndex;
  /** Rows per columnar batch, or 0 for about {@link ColumnReader#BATCH_BYTES} of cells. */
  final int batchRows;

  Source(Plan plan, int[] columns, String rowIndex, int batchRows) {
    this.plan = plan;
    this.columns = columns;
    this.rowIndex = rowIndex;
    this.batchRows = batchRows;
  }

  /** The read of {@code plan}'s columns named in {@code chosen} (comma-separated; all where
   * null): frame labels, or a matrix's {@code c<j>} names or indices. */
  static Source make(Plan plan, String chosen, String rowIndex, int batchRows, String path) {
    List<Integer> picked = new ArrayList<>();
    if (chosen == null || chosen.trim().isEmpty()) {
      for (int j = 0; j < plan.names.length; j++) {
        picked.add(j);
      }
    } else {
      for (String word : chosen.split(",")) {
        String name = word.trim();
        if (name.isEmpty()) {
          continue;
        }
        int j = plan.column(name);
        // A matrix's column also by its position.
        if (j < 0 && !plan.dataType.equals("Frame") && name.matches("[0-9]{1,9}")) {
          j = Integer.parseInt(name) < plan.names.length ? Integer.parseInt(name) : -1;
        }
        if (j < 0) {
          throw new IllegalArgumentException(
              path + ": no column '" + name + "'; the " + plan.dataType + " has "
                  + describe(plan));
        }
        picked.add(j);
      }
    }
    if (batchRows < 0) {
      throw new IllegalArgumentException("batchRows must be positive, not " + batchRows);
    }
    int[] columns = picked.stream().mapToInt(Integer::intValue).toArray();
    return new Source(plan, columns, rowIndex, batchRows);
  }

  private static String describe(Plan plan) {
    if (!plan.dataType.equals("Frame")) {
      return "columns c0 to c" + (plan.names.length - 1);
    }
    return String.join(", ", plan.names);
  }

  StructType schema() {
    List<StructField> fields = new ArrayList<>();
    if (rowIndex != null) {
      fields.add(new StructField(rowIndex, DataTypes.LongType, false, Metadata.empty()));
    }
    for (int j : columns) {
      fields.add(plan.field(j));
    }
    return new StructType(fields.toArray(new StructField[0]));
  }

  /** The read of only the columns of {@code required} (by name), in its order. */
  Source pruned(StructType required) {
    List<Integer> kept = new ArrayList<>();
    boolean index = false;
    for (StructField field : required.fields()) {
      if (field.name().equals(rowIndex)) {
        index = true;
        continue;
      }
      for (int j : columns) {
        if (plan.names[j].equals(field.name()) && !kept.contains(j)) {
          kept.add(j);
          break;
        }
      }
    }
    int[] picked = kept.stream().mapToInt(Integer::intValue).toArray();
    return new Source(plan, picked, index ? rowIndex : null, batchRows);
  }

  /** About how many bytes a row of the columns read takes in memory. */
  long rowBytes() {
    long bytes = rowIndex != null ? 8 : 0;
    for (int j : columns) {
      bytes += plan.field(j).dataType().defaultSize();
    }
    return Math.max(1, bytes);
  }
}
