package org.serdedaphne.dbdf;

import java.io.File;
import java.util.Map;
import org.apache.hadoop.fs.Path;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SQLContext;
import org.apache.spark.sql.SaveMode;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.errors.QueryCompilationErrors;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.sources.BaseRelation;
import org.apache.spark.sql.sources.CreatableRelationProvider;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;

/**
 * Spark's data source {@code "dbdf"} in the JVM: {@code spark.read.format("dbdf")} reads an
 * object of a {@code .dbdf} file or a folder of DAPHNE's segments into column vectors, reading
 * only the columns a query uses and answering {@code count()} from the headers alone.
 *
 * <p>What the JVM half does not read itself, URLs and the {@code array} and {@code triples}
 * layouts, it hands to the Python source as Spark would have ({@code PythonDataSourceV2}).
 *
 * <p>Writes ({@code df.write.format("dbdf")}) are the Python package's: every task writes a
 * segment and the job's commit makes the folder appear at once. They run on Spark's Python
 * workers, through the Python source registered as {@code "dbdf_python"} (module {@code
 * pyspark_dbdf_python} of the {@code dbdf} wheel); the save modes are decided here, as
 * Spark's built-in sources decide them.
 */
public final class DbdfDataSource
    implements TableProvider, DataSourceRegister, CreatableRelationProvider {
  /** The Python source that writes. */
  static final String PYTHON_SOURCE = "dbdf_python";

  @Override
  public String shortName() {
    return "dbdf";
  }

  /** The Python source, for the reads the JVM half hands over; made on first use. */
  private PythonDataSourceV2 python;

  /** Whether the Python source reads what {@code options} ask for. */
  private static boolean forPython(Map<String, String> options) {
    CaseInsensitiveStringMap map = new CaseInsensitiveStringMap(options);
    String path = map.getOrDefault("path", "");
    String layout = map.getOrDefault("layout", "columns");
    return path.contains("://") || !layout.equalsIgnoreCase("columns");
  }

  private PythonDataSourceV2 python() {
    if (python == null) {
      python = new PythonDataSourceV2();
      python.setShortName(PYTHON_SOURCE);
    }
    return python;
  }

  @Override
  public StructType inferSchema(CaseInsensitiveStringMap options) {
    if (forPython(options)) {
      return python().inferSchema(options);
    }
    return DbdfTable.read(options).schema();
  }

  /** A schema given by the reader (or the written frame's) is taken as is, not inferred. */
  @Override
  public boolean supportsExternalMetadata() {
    return true;
  }

  @Override
  public Table getTable(
      StructType schema, Transform[] partitioning, Map<String, String> properties) {
    if (forPython(properties)) {
      return python().getTable(schema, partitioning, properties);
    }
    return new DbdfTable(new CaseInsensitiveStringMap(properties), schema);
  }

  @Override
  public BaseRelation createRelation(
      SQLContext sqlContext,
      SaveMode mode,
      scala.collection.immutable.Map<String, String> parameters,
      Dataset<Row> data) {
    String path = parameters.get("path").getOrElse(() -> null);
    if (path == null) {
      throw new IllegalArgumentException("the dbdf data source needs a path: save(path)");
    }
    boolean exists = path.contains("://") || new File(path).exists();
    String given = mode == SaveMode.Overwrite ? "overwrite" : "append";
    java.util.Map<String, String> options =
        new java.util.HashMap<>(scala.jdk.javaapi.CollectionConverters.asJava(parameters));
    switch (mode) {
      case ErrorIfExists:
        if (exists) {
          throw DbdfDataSource.<RuntimeException>unchecked(
              QueryCompilationErrors.outputPathAlreadyExistsError(new Path(path)));
        }
        // A folder that appears while the job runs fails its commit.
        options.put("ifExists", "error");
        break;
      case Ignore:
        if (exists) {
          return new Written(sqlContext, data.schema());
        }
        break;
      default:
        break;
    }
    data.write().format(PYTHON_SOURCE).mode(given).options(options).save();
    return new Written(sqlContext, data.schema());
  }

  /** Throws {@code error} as it is: Spark's errors (AnalysisException) are checked in Java's
   * eyes, though Scala throws them from anywhere. */
  @SuppressWarnings("unchecked")
  private static <E extends Throwable> E unchecked(Throwable error) throws E {
    throw (E) error;
  }

  /** What {@link #createRelation} returns: the written frame's schema. */
  private static final class Written extends BaseRelation {
    private final SQLContext context;
    private final StructType schema;

    Written(SQLContext context, StructType schema) {
      this.context = context;
      this.schema = schema;
    }

    @Override
    public SQLContext sqlContext() {
      return context;
    }

    @Override
    public StructType schema() {
      return schema;
    }
  }
}
