"""Shared fixtures: the repository's reference files, the `dbdf` command-line tool, storage
servers and Dask's worker processes."""

import functools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# Files written by DAPHNE's own C++ runtime, with their manifest (tests/data/README.md).
DAPHNE = REPO / "tests" / "data" / "daphne-runtime"


def _find_cli():
    given = os.environ.get("DBDF_CLI")
    if given and not Path(given).is_file():
        raise RuntimeError(f"DBDF_CLI={given} is not a file")
    for candidate in (
        os.environ.get("DBDF_CLI"),
        REPO / "target" / "debug" / "dbdf",
        REPO / "target" / "release" / "dbdf",
        shutil.which("dbdf"),
    ):
        if candidate and Path(candidate).is_file():
            return str(candidate)
    return None


@pytest.fixture(scope="session")
def cli():
    """Runs the Rust crate's `dbdf` tool (build it with `cargo build -p dbdf`)."""
    path = _find_cli()
    if path is None:
        pytest.skip("the dbdf command-line tool is not built (cargo build -p dbdf)")

    def run(*args, check=True, env=None, timeout=None):
        done = subprocess.run(
            [path, *map(str, args)], capture_output=True, text=True, env=env, timeout=timeout
        )
        if check and done.returncode != 0:
            raise AssertionError(f"dbdf {' '.join(map(str, args))} failed: {done.stderr}")
        return done

    return run


@pytest.fixture(scope="session")
def tool(cli):
    """The CLI with a time limit, run with an environment of its own (``env=``: a storage
    server's settings)."""
    return functools.partial(cli, timeout=120)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """moto's S3 server with a bucket ``data`` (remote_servers.py), for a module's tests."""
    from remote_servers import S3

    with S3(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture(scope="module")
def azure(tmp_path_factory):
    """Azurite with a container ``data`` (remote_servers.py), for a module's tests."""
    from remote_servers import Azurite

    with Azurite(tmp_path_factory.mktemp("azure")) as server:
        yield server


@pytest.fixture(scope="module")
def client(request):
    """Two Dask worker processes (`LocalCluster(processes=True)`) for a module's tests."""
    distributed = pytest.importorskip("dask.distributed")
    import cloudpickle

    # The workers unpickle the module's functions by value: they cannot import it.
    cloudpickle.register_pickle_by_value(request.module)
    cluster = distributed.LocalCluster(
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()
