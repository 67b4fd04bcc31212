package org.serdedaphne.dbdf;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * One object of a file or folder, as a table: planned when first asked for its schema or a
 * scan, not before (a write's table is never planned).
 */
final class DbdfTable implements SupportsRead {
  private final CaseInsensitiveStringMap options;
  /** The schema the reader gave, or the written frame's; null where none was. */
  private final StructType given;
  private Source source;

  DbdfTable(CaseInsensitiveStringMap options, StructType given) {
    this.options = options;
    this.given = given;
  }

  /** The read that {@code options} ask for, planned. */
  static Source read(CaseInsensitiveStringMap options) {
    String path = options.get("path");
    if (path == null || path.isEmpty()) {
      throw new IllegalArgumentException("the dbdf data source needs a path: load(path)");
    }
    try {
      Plan plan = Plan.make(path, options.getInt("object", 0), options.get("dialect"));
      return Source.make(plan, options.get("columns"), options.get("rowIndex"),
          options.getInt("batchRows", 0), path);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private Source source() {
    if (source == null) {
      source = read(options);
    }
    return source;
  }

  @Override
  public String name() {
    return "dbdf " + options.get("path");
  }

  // Spark still asks tables for schema() and builds columns() from it.
  @Override
  @SuppressWarnings("deprecation")
  public StructType schema() {
    return given != null ? given : source().schema();
  }

  @Override
  public Set<TableCapability> capabilities() {
    return Collections.unmodifiableSet(EnumSet.of(TableCapability.BATCH_READ));
  }

  @Override
  public ScanBuilder newScanBuilder(CaseInsensitiveStringMap scanOptions) {
    Source read = source();
    if (given != null && !sameColumns(given, read.schema())) {
      throw new IllegalArgumentException(
          options.get("path") + ": the schema given, " + given.simpleString()
              + ", is not the file's, " + read.schema().simpleString()
              + " (the JVM's dbdf source takes the file's names and types)");
    }
    return new DbdfScanBuilder(read);
  }

  private static boolean sameColumns(StructType a, StructType b) {
    if (a.fields().length != b.fields().length) {
      return false;
    }
    for (int i = 0; i < a.fields().length; i++) {
      if (!a.fields()[i].name().equals(b.fields()[i].name())
          || !a.fields()[i].dataType().equals(b.fields()[i].dataType())) {
        return false;
      }
    }
    return true;
  }
}
