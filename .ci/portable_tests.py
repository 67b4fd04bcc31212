"""Runs the test binaries that `cargo test --workspace --features proptest` built once more,
with SERDE_DAPHNE_PORTABLE=1: the paths other platforms take (a switch read at run time, so
the same binaries). The format crate's tests cover each such path; of the converters' tests,
the torture tests and the sets' tests (files and directories swapped or linked into place).

Running the built binaries, rather than `cargo test -p ...`, keeps the workspace's feature
set, so nothing is compiled again.

    python3 .ci/portable_tests.py WORKSPACE_ROOT  (CARGO_TARGET_DIR as for the build)
"""

import json
import os
import subprocess
import sys

root = os.path.abspath(sys.argv[1])
built = subprocess.run(
    ["cargo", "test", "--workspace", "--features", "proptest", "--no-run",
     "--message-format=json"],
    cwd=root, check=True, stdout=subprocess.PIPE, text=True,
).stdout
# All of the format crate's test binaries (in the root); the converters' suite, torture and
# sets only.
runs = []
for line in built.splitlines():
    message = json.loads(line)
    if message.get("reason") != "compiler-artifact" or not message.get("executable"):
        continue
    if not message["profile"]["test"]:
        continue
    manifest_dir = os.path.dirname(message["manifest_path"])
    if manifest_dir == root:
        runs.append((manifest_dir, message["executable"], []))
    elif os.path.basename(manifest_dir) == "dbdf" and message["target"]["name"] == "suite":
        runs.append((manifest_dir, message["executable"], ["torture", "sets"]))
if len(runs) < 3:
    sys.exit(f"portable_tests: found only {len(runs)} test binaries to run")
env = dict(os.environ, SERDE_DAPHNE_PORTABLE="1")
for cwd, executable, args in runs:
    print(f"portable_tests: {os.path.relpath(executable, root)} {' '.join(args)}", flush=True)
    subprocess.run([executable, "-q", *args], cwd=cwd, env=env, check=True)
