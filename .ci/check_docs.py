#!/usr/bin/env python3
"""Every doc true: runs the shell, console and Python blocks of the README and the guides,
and checks every relative link.

    python3 .ci/check_docs.py --dbdf target/debug/dbdf --python VENV/bin/python

- ```sh blocks run with bash (-euo pipefail), ```python blocks with the given Python, in a
  scratch folder per document, in order (a block may use what an earlier one wrote). The
  folder starts with the files the examples name: DAPHNE's golden files from tests/data and
  what `cargo run --example quickstart` wrote to target/quickstart.
- ```console blocks are transcripts: each `$ command` runs and its output (stdout and
  stderr) must equal the lines below it; a line `...` stands for any number of lines.
- A block whose info string says `skip` (a cluster, a long fuzzing campaign) is not run;
  the README's set-up commands must appear word for word in .ci/run, which runs them.
- ```rust blocks are doctests: the document must be included by a crate's lib.rs.
- Every relative link must name a file of the repository, and its #anchor a heading there.
- README.md stays a front door (at most 250 lines), BENCHMARKS.md and CHANGELOG.md references
  (at most 400 and 350).
"""

import argparse
import functools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^```(.*)$")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
# Documents that stay short (issue 70 for the two references): the README a front door,
# BENCHMARKS.md the current figures, CHANGELOG.md a changelog; history stays in git.
MAX_LINES = {"README.md": 250, "BENCHMARKS.md": 400, "CHANGELOG.md": 350}


def documents():
    docs = [ROOT / "README.md", ROOT / "python" / "README.md", ROOT / "dbdf" / "README.md"]
    docs += sorted((ROOT / "docs").glob("*.md"))
    return docs


def others():
    """Documents whose links are checked but whose blocks are not run."""
    return [ROOT / n for n in ("ARCHITECTURE.md", "BENCHMARKS.md", "CHANGELOG.md")]


def blocks(path):
    """(info string, first line number, text) of each fenced block."""
    found, info, start, lines = [], None, 0, []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        m = FENCE.match(line)
        if m and info is None:
            info, start, lines = m.group(1).strip(), n + 1, []
        elif line.strip() == "```" and info is not None:
            found.append((info, start, "\n".join(lines) + "\n"))
            info = None
        elif info is not None:
            lines.append(line)
    return found


def slug(heading):
    """GitHub's anchor for a heading."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.lru_cache(maxsize=None)
def anchors(path):
    out, fenced = set(), False
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            out.add(slug(line.lstrip("#")))
    return out


def check_links(path, failures):
    fenced = False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue
        for target in LINK.findall(line):
            if re.match(r"^[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            where = f"{path.relative_to(ROOT)}:{n}: link {target}"
            if not resolved.exists():
                failures.append(f"{where}: no such file")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                failures.append(f"{where}: no heading with that anchor")


def prepare(scratch):
    for f in (ROOT / "tests" / "data" / "daphne-runtime").iterdir():
        if f.suffix in (".dbdf", ".meta"):
            shutil.copy(f, scratch)
    quick = ROOT / "target" / "quickstart"
    if not quick.is_dir():
        sys.exit("check_docs: run `cargo run --example quickstart` first")
    for f in quick.iterdir():
        if f.is_file():
            shutil.copy(f, scratch)


def transcript(text):
    """(command, expected lines) pairs of a console block."""
    steps = []
    for line in text.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line.rstrip())
    return steps


def matches(expected, actual):
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and expected[0] == actual[0] and matches(expected[1:], actual[1:])


def run_document(path, args, env, failures):
    runnable = [b for b in blocks(path) if "skip" not in b[0].split()]
    if not any(b[0].split()[:1] in (["sh"], ["console"], ["python"]) for b in runnable):
        return 0
    ran = 0
    with tempfile.TemporaryDirectory(prefix="check_docs_") as scratch:
        prepare(scratch)
        # What a document's own temporary folders hold goes with the scratch folder.
        env = dict(env, TMPDIR=os.path.join(scratch, "tmp"))
        os.mkdir(env["TMPDIR"])
        for info, line, text in runnable:
            kind = info.split()[0] if info else ""
            where = f"{path.relative_to(ROOT)}:{line}"
            if kind == "sh":
                done = subprocess.run(["bash", "-euo", "pipefail", "-c", text], cwd=scratch,
                                      env=env, capture_output=True, text=True)
                if done.returncode != 0:
                    failures.append(f"{where}: sh block failed ({done.returncode}):\n"
                                    f"{done.stdout}{done.stderr}")
            elif kind == "python":
                done = subprocess.run([args.python, "-c", text], cwd=scratch, env=env,
                                      capture_output=True, text=True)
                if done.returncode != 0:
                    failures.append(f"{where}: python block failed:\n{done.stderr}")
            elif kind == "console":
                for command, expected in transcript(text):
                    done = subprocess.run(["bash", "-c", command + " 2>&1"], cwd=scratch,
                                          env=env, capture_output=True, text=True)
                    actual = [l.rstrip() for l in done.stdout.splitlines()]
                    if not matches(expected, actual):
                        failures.append(f"{where}: `{command}` printed:\n"
                                        + "\n".join(actual) + "\nexpected:\n"
                                        + "\n".join(expected))
            else:
                continue
            ran += 1
    return ran


def check_setup_commands(failures):
    ci = (ROOT / ".ci" / "run").read_text()
    setup = [b for b in blocks(ROOT / "README.md") if "set-up" in b[0].split()]
    if not setup:
        failures.append("README.md: no ```sh skip set-up block")
    for _, line, text in setup:
        for command in text.splitlines():
            command = command.split("#")[0].strip()
            if command and command not in ci:
                failures.append(f"README.md:{line}: `{command}` is not run by .ci/run")


def check_rust_included(path, failures):
    if not any(b[0].split()[:1] == ["rust"] for b in blocks(path)):
        return
    included = set()
    for lib in (ROOT / "src" / "lib.rs", ROOT / "dbdf" / "src" / "lib.rs"):
        for name in re.findall(r'include_str!\("([^"]+)"\)', lib.read_text()):
            included.add((lib.parent / name).resolve())
    if path.resolve() not in included:
        failures.append(f"{path.relative_to(ROOT)}: has Rust blocks that no crate runs as doctests")


def check_cli_options(dbdf, failures):
    """The CLI guide names exactly the options `dbdf` has."""
    helps = ""
    for command in (["--help"], ["convert", "--help"], ["slice", "--help"], ["info", "--help"],
                    ["spy", "--help"]):
        helps += subprocess.run([dbdf, *command], capture_output=True, text=True).stdout
    have = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", helps)) - {"--help", "--version"}
    guide = "\n".join(line for line in (ROOT / "docs" / "cli.md").read_text().splitlines()
                      if not line.startswith("cargo "))
    named = set(re.findall(r"(?<![\w-])--[a-z][a-z0-9-]+", guide)) - {"--help", "--version"}
    for option in sorted(have - named):
        failures.append(f"docs/cli.md: does not describe {option}")
    for option in sorted(named - have):
        failures.append(f"docs/cli.md: names {option}, which dbdf does not have")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dbdf", required=True, help="the dbdf binary the examples run")
    parser.add_argument("--python", required=True, help="a Python with the dbdf package")
    args = parser.parse_args()
    args.python = str(Path(args.python).absolute())
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(args.dbdf).absolute().parent),
                                   str(Path(args.python).parent), env["PATH"]])
    failures = []
    for name, most in MAX_LINES.items():
        lines = len((ROOT / name).read_text().splitlines())
        if lines > most:
            failures.append(f"{name}: {lines} lines, more than {most}")
    check_setup_commands(failures)
    check_cli_options(args.dbdf, failures)
    ran = 0
    for doc in documents():
        check_links(doc, failures)
        check_rust_included(doc, failures)
        ran += run_document(doc, args, env, failures)
    for doc in others():
        check_links(doc, failures)
    for failure in failures:
        print(f"check_docs: {failure}", file=sys.stderr)
    if failures:
        sys.exit(1)
    print(f"check_docs: {ran} blocks ran as written in {len(documents())} documents; "
          "every link resolves")


if __name__ == "__main__":
    main()
