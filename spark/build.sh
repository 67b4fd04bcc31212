#!/usr/bin/env bash
# Builds the jar of Spark's JVM data source "dbdf": the Java classes (java/), compiled
# against the Spark of PYTHON's pyspark, and the native library (this crate) inside it.
# The jar goes to target/dbdf-spark.jar and into the Python package (dbdf/jars/), which
# ships it in the wheel: dbdf.spark.jar() gives its path.
#
#   PYTHON=/path/to/venv/bin/python bash spark/build.sh [--debug]
set -euo pipefail
cd "$(dirname "$0")"
python=${PYTHON:-python3}
profile=release
[ "${1:-}" = --debug ] && profile=debug
jars=$("$python" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
if [ "$profile" = release ]; then cargo build --release --quiet; else cargo build --quiet; fi
classes=target/classes
rm -rf "$classes" && mkdir -p "$classes"
javac --release 17 -Xlint:all,-path,-classfile,-processing -Werror -d "$classes" \
  -cp "$jars/*" java/org/serdedaphne/dbdf/*.java
cp -r resources/. "$classes/"
os=$(uname -s | tr '[:upper:]' '[:lower:]'); [ "$os" = darwin ] && os=macos
arch=$(uname -m); [ "$arch" = arm64 ] && arch=aarch64
lib=libdbdf_spark.so; [ "$os" = macos ] && lib=libdbdf_spark.dylib
mkdir -p "$classes/native/$os-$arch"
cp "${CARGO_TARGET_DIR:-target}/$profile/$lib" "$classes/native/$os-$arch/"
jar --create --file target/dbdf-spark.jar -C "$classes" .
mkdir -p ../python/py_src/dbdf/jars
cp target/dbdf-spark.jar ../python/py_src/dbdf/jars/
echo "target/dbdf-spark.jar"
