"""Build outputs kept between CI runs on one machine, each under a key that names what built it.

A cache is a folder `<root>/<name>-<key>`, where the key hashes every lock file of the
repository's workspaces, the `rustc -vV` of each toolchain that builds into it, and Python's
version. A changed lock file, toolchain or Python gives a new key and so an empty folder:
cargo's own fingerprints would already refuse most stale outputs, and the key makes that hold
for everything else kept there (the reference checks' virtual environment, DAPHNE's reader,
the fuzz targets). A folder is used only when its `KEY` file holds its key and it belongs to
this user; any other is removed. Each name keeps its newest two folders; older ones go, and
all but the current one go when the disk has less than 20 GiB free.

    python3 .ci/cache.py link LINK NAME TOOLCHAIN...   make LINK point at the cache folder
    python3 .ci/cache.py key NAME TOOLCHAIN...          print the key
    python3 .ci/cache.py selftest                       prove that another lock file or
                                                        toolchain gets another folder

The root is $SERDE_DAPHNE_CI_CACHE, or serde_daphne/ci under $XDG_CACHE_HOME (~/.cache).
A LINK that is a real folder (a developer's own target/) is used as it is.
"""

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# What a cache's outputs depend on besides the sources: every workspace's lock file.
LOCK_FILES = ["Cargo.lock", "python/Cargo.lock", "spark/Cargo.lock", "fuzz/Cargo.lock",
              "examples/toy_converter/Cargo.lock"]
# Raised when what .ci/run keeps in a cache changes shape, so older caches are not trusted.
LAYOUT = b"serde_daphne ci cache 1"
KEEP = 2
MIN_FREE = 20 << 30


def cache_root() -> Path:
    explicit = os.environ.get("SERDE_DAPHNE_CI_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "serde_daphne" / "ci"


def toolchain_version(toolchain: str) -> bytes:
    """`rustc -vV` of a rustup toolchain ("default" for the one cargo uses here)."""
    command = ["rustc", "-vV"] if toolchain == "default" else ["rustc", f"+{toolchain}", "-vV"]
    return subprocess.run(command, check=True, stdout=subprocess.PIPE).stdout


def compute_key(repo: Path, name: str, versions: list[bytes]) -> str:
    digest = hashlib.sha256(LAYOUT)
    digest.update(b"\0name\0" + name.encode())
    for lock in LOCK_FILES:
        path = repo / lock
        digest.update(b"\0lock\0" + lock.encode() + b"\0")
        digest.update(path.read_bytes() if path.exists() else b"(none)")
    for version in versions:
        digest.update(b"\0rustc\0" + version)
    # The reference checks' virtual environment is kept there too.
    digest.update(b"\0python\0" + sys.version.encode())
    return digest.hexdigest()[:20]


def usable(folder: Path, key: str) -> bool:
    try:
        return folder.stat().st_uid == os.getuid() and (folder / "KEY").read_text() == key
    except OSError:
        return False


def prepare(root: Path, name: str, key: str, say=print, min_free=MIN_FREE) -> Path:
    """The cache folder for `key`, emptied unless it is a trusted one; old siblings pruned
    (all of them when the disk has less than `min_free` bytes free)."""
    root.mkdir(parents=True, exist_ok=True)
    folder = root / f"{name}-{key}"
    if folder.exists() and not usable(folder, key):
        say(f"cache: {folder} is not a cache of this key; starting it anew", flush=True)
        shutil.rmtree(folder)
    if not folder.exists():
        folder.mkdir()
        (folder / "KEY").write_text(key)
        say(f"cache: {folder} is new (no build outputs kept for this key)", flush=True)
    else:
        say(f"cache: {folder} kept from an earlier run", flush=True)
    os.utime(folder / "KEY")
    siblings = sorted((p for p in root.glob(f"{name}-*") if p != folder),
                      key=lambda p: (p / "KEY").stat().st_mtime if (p / "KEY").exists() else 0,
                      reverse=True)
    low_on_disk = shutil.disk_usage(root).free < min_free
    for old in siblings[0 if low_on_disk else KEEP - 1:]:
        say(f"cache: removing {old}", flush=True)
        shutil.rmtree(old, ignore_errors=True)
    return folder


def link(repo: Path, link_path: Path, name: str, toolchains: list[str]) -> Path:
    if link_path.exists() and not link_path.is_symlink():
        print(f"cache: {link_path} is a folder of its own; using it as it is", flush=True)
        return link_path
    key = compute_key(repo, name, [toolchain_version(t) for t in toolchains])
    folder = prepare(cache_root(), name, key)
    if link_path.is_symlink():
        link_path.unlink()
    link_path.symlink_to(folder)
    claim(folder, repo)
    return folder


def claim(folder: Path, repo: Path) -> None:
    """Makes the sources of `repo` newer than every output in `folder` when another checkout
    built them: cargo takes a crate's outputs as fresh when its files are older, and a test
    binary keeps the folder it was built in (`env!("CARGO_MANIFEST_DIR")`). A fresh clone's
    files are new already."""
    mark = folder / "CHECKOUT"
    if mark.exists() and mark.read_text() == str(repo):
        return
    listed = subprocess.run(["git", "-C", str(repo), "ls-files", "-z"], check=True,
                            stdout=subprocess.PIPE).stdout
    for name in filter(None, listed.split(b"\0")):
        path = repo / os.fsdecode(name)
        if path.is_file() and not path.is_symlink():
            os.utime(path)
    mark.write_text(str(repo))


def selftest() -> None:
    """Another lock file or toolchain never reaches an earlier run's outputs."""
    def prepare_quietly(root: Path, name: str, key: str) -> Path:
        # Whatever this machine's free space: pruning for want of it is not what is tested.
        return prepare(root, name, key, say=lambda *_, **__: None, min_free=0)

    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        repo = scratch / "repo"
        repo.mkdir()
        (repo / "Cargo.lock").write_text("[[package]]\nname = \"a\"\nversion = \"1.0.0\"\n")
        root = scratch / "cache"
        v1 = b"rustc 1.95.0 (59807616e 2026-04-14)\nhost: x86_64-unknown-linux-gnu\n"
        v2 = b"rustc 1.88.0 (6b00bc388 2025-06-23)\nhost: x86_64-unknown-linux-gnu\n"

        first = prepare_quietly(root, "target", compute_key(repo, "target", [v1]))
        (first / "built").write_text("outputs of the first run")
        again = prepare_quietly(root, "target", compute_key(repo, "target", [v1]))
        assert again == first and (again / "built").exists(), "the same inputs lost their cache"

        other_toolchain = prepare_quietly(root, "target", compute_key(repo, "target", [v2]))
        assert other_toolchain != first, "another toolchain got the same cache"
        assert not (other_toolchain / "built").exists(), "another toolchain saw old outputs"

        (repo / "Cargo.lock").write_text("[[package]]\nname = \"a\"\nversion = \"1.0.1\"\n")
        other_lock = prepare_quietly(root, "target", compute_key(repo, "target", [v1]))
        assert other_lock not in (first, other_toolchain), "another lock file got the same cache"
        assert not (other_lock / "built").exists(), "another lock file saw old outputs"
        # Two names kept, and the third oldest removed.
        assert not first.exists() and other_toolchain.exists(), "pruning kept the wrong folders"

        # A folder under the right name whose KEY says otherwise (copied, or an older layout)
        # is emptied, not trusted.
        key = compute_key(repo, "target", [v1])
        (other_lock / "KEY").write_text("0" * 20)
        (other_lock / "built").write_text("foreign outputs")
        trusted = prepare_quietly(root, "target", key)
        assert trusted == other_lock and not (trusted / "built").exists(), "a foreign cache was used"
        # Another checkout linking to a cache has its sources made newer than the outputs
        # there; the same checkout again is left as it is.
        checkout = scratch / "checkout"
        checkout.mkdir()
        subprocess.run(["git", "init", "-q", str(checkout)], check=True)
        (checkout / "lib.rs").write_text("fn main() {}\n")
        subprocess.run(["git", "-C", str(checkout), "add", "lib.rs"], check=True)
        os.utime(checkout / "lib.rs", (1, 1))
        claim(trusted, checkout)
        touched = (checkout / "lib.rs").stat().st_mtime
        assert touched > 1, "another checkout's sources were left older than the outputs"
        os.utime(checkout / "lib.rs", (2, 2))
        claim(trusted, checkout)
        assert (checkout / "lib.rs").stat().st_mtime == 2, "the same checkout was touched again"
        # This repository's own lock files and the toolchain CI builds with: one changed
        # line of Cargo.lock, or nightly in place of the default, gives another key.
        real = scratch / "real"
        for lock in LOCK_FILES:
            if (ROOT / lock).exists():
                (real / lock).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(ROOT / lock, real / lock)
        default = toolchain_version("default")
        assert compute_key(real, "target", [default]) == compute_key(ROOT, "target", [default])
        lock = (real / "Cargo.lock").read_text()
        (real / "Cargo.lock").write_text(lock.replace('version = "', 'version = "0', 1))
        assert compute_key(real, "target", [default]) != compute_key(ROOT, "target", [default])
        if subprocess.run(["rustup", "run", "nightly", "rustc", "-V"],
                          capture_output=True).returncode == 0:
            nightly = toolchain_version("nightly")
            assert nightly != default
            assert compute_key(ROOT, "target", [nightly]) != compute_key(ROOT, "target", [default])
    print("cache: selftest ok (another lock file, toolchain or key file gets an empty cache;"
          " another checkout's sources are made newer than its outputs)")


def main() -> None:
    args = sys.argv[1:]
    if args[:1] == ["selftest"]:
        selftest()
    elif args[:1] == ["key"] and len(args) >= 3:
        print(compute_key(ROOT, args[1], [toolchain_version(t) for t in args[2:]]))
    elif args[:1] == ["link"] and len(args) >= 4:
        link(ROOT, Path(args[1]), args[2], args[3:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
