package org.serdedaphne.dbdf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.MetadataBuilder;
import org.apache.spark.sql.types.StructField;

/**
 * What a read of one object gives, as the native side planned it on the driver: its columns
 * and their Spark types, the files its rows are in, and the rows of each partition.
 */
final class Plan implements Serializable {
  private static final long serialVersionUID = 1L;
  /** The field metadata key that keeps a column's value type in the file. */
  static final String VALUE_TYPE_KEY = "dbdf.value_type";

  /** A file holding rows {@code first} to {@code first + rows} of the object. */
  static final class Piece implements Serializable {
    private static final long serialVersionUID = 1L;
    final String path;
    final int object;
    final long first;
    final long rows;
    final long size;
    final long mtimeNs;

    Piece(JsonNode node) {
      path = node.get("path").asText();
      object = node.get("object").asInt();
      first = node.get("first").asLong();
      rows = node.get("rows").asLong();
      size = node.get("size").asLong();
      mtimeNs = node.get("mtimeNs").asLong();
    }
  }

  final String dataType;
  final long rows;
  final long cols;
  /**
   * A column's name, its value type in the file and its Spark type, for every column of the
   * object.
   */
  final String[] names;
  final String[] valueTypes;
  final DataType[] sparkTypes;
  final List<Piece> pieces = new ArrayList<>();
  final long[] parts;
  final String dialect;

  private Plan(JsonNode node, String dialect) {
    this.dialect = dialect;
    dataType = node.get("dataType").asText();
    rows = node.get("rows").asLong();
    cols = node.get("cols").asLong();
    // Names and types as the native planner gives them (dbdf::plan): one type for all of a
    // matrix's columns.
    JsonNode given = node.get("names");
    JsonNode types = node.get("valueTypes");
    JsonNode spark = node.get("sparkTypes");
    names = new String[given.size()];
    valueTypes = new String[names.length];
    sparkTypes = new DataType[names.length];
    for (int j = 0; j < names.length; j++) {
      int k = types.size() == names.length ? j : 0;
      names[j] = given.get(j).asText();
      valueTypes[j] = types.get(k).asText();
      sparkTypes[j] = DataType.fromDDL(spark.get(k).asText());
    }
    for (JsonNode piece : node.get("pieces")) {
      pieces.add(new Piece(piece));
    }
    JsonNode sizes = node.get("parts");
    parts = new long[sizes.size()];
    for (int k = 0; k < parts.length; k++) {
      parts[k] = sizes.get(k).asLong();
    }
  }

  /** The plan of object {@code object} of {@code path} (a file or a folder of segments). */
  static Plan make(String path, int object, String dialect) throws IOException {
    JsonNode node = new ObjectMapper().readTree(Native.describe(path, object, dialect));
    String type = node.get("dataType").asText();
    if (!type.equals("Frame") && !type.equals("DenseMatrix") && !type.equals("CSRMatrix")) {
      throw new IOException(path + ": a " + type + " is not a table");
    }
    return new Plan(node, dialect);
  }

  /** Column {@code j} as a field: non-nullable, its value type in its metadata. */
  StructField field(int j) {
    Metadata meta = new MetadataBuilder().putString(VALUE_TYPE_KEY, valueTypes[j]).build();
    return new StructField(names[j], sparkTypes[j], false, meta);
  }

  /** The position of the column named {@code name}, or -1. */
  int column(String name) {
    for (int j = 0; j < names.length; j++) {
      if (names[j].equals(name)) {
        return j;
      }
    }
    return -1;
  }
}
