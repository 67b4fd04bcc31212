package org.serdedaphne.dbdf;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * The native half of the data source (the crate in {@code spark/src}), loaded once per JVM
 * from inside this jar. Every rule of the format is there; this class only calls it.
 */
final class Native {
  static {
    load();
  }

  private Native() {}

  /**
   * The plan of a read of object {@code object} of the file at {@code path}, or of the folder
   * of DAPHNE's segments at {@code path}, as JSON (see {@link Plan}).
   *
   * @throws IOException a missing or malformed file, an object past the last
   */
  static native String describe(String path, int object, String dialect) throws IOException;

  /**
   * Rows {@code start} to {@code stop} (excluded) of the columns {@code columns} of object
   * {@code object} of the file at {@code path}, which must still be of this size and
   * modification time, into the direct buffers {@code outputs}, one per column, each value in
   * its Spark type, little-endian.
   *
   * @throws IOException a changed or malformed file, rows or columns outside the object
   */
  static native void read(
      String path,
      long size,
      long mtimeNs,
      int object,
      String dialect,
      long start,
      long stop,
      int[] columns,
      ByteBuffer[] outputs)
      throws IOException;

  /** Copies the library out of the jar (a JVM loads libraries from files only) and loads it. */
  private static void load() {
    String os = System.getProperty("os.name").toLowerCase().startsWith("mac") ? "macos" : "linux";
    String arch = System.getProperty("os.arch").replace("amd64", "x86_64");
    String name = System.mapLibraryName("dbdf_spark");
    String resource = "/native/" + os + "-" + arch + "/" + name;
    try (InputStream in = Native.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new UnsatisfiedLinkError(
            "the dbdf data source's jar has no native library for " + os + "-" + arch
                + " (" + resource + ")");
      }
      Path dir = Files.createTempDirectory("dbdf-spark");
      Path file = dir.resolve(name);
      Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
      System.load(file.toString());
      // Loaded: the file can go (Linux and macOS keep a mapped library's pages).
      Files.deleteIfExists(file);
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      throw new UnsatisfiedLinkError("the dbdf data source's native library: " + e);
    }
  }
}
