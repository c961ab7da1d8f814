"""Every code block of README.md and docs/*.md runs as shown.

Each document is read as a script: its blocks run in order, one test per block
(its id is ``FILE:LINE``), in one scratch folder per document holding a copy of
``examples/`` and every ``file`` block of every document (so docs/traces.md can
run the ``approval.py`` docs/choreographies.md shows).  A block of commands
(lines starting with ``$ ``) is run command by command, and what each prints
(stdout and stderr, as a terminal shows them) must be the text under it; a
``simulator:`` line (CPU times; ``cpl verify``'s ``  time:``) is compared up to
its first ':', and a JSON ``"seconds"`` object not at all.  A ``python`` block
is a complete program, run with a time limit, that must exit 0.  A ``json``
block must parse (as one value, or as JSON lines).  Other blocks (a command's
synopsis, a sample of output, YAML) are text and not run.  An HTML comment on
the line before a block changes that:

    <!-- readme: file NAME -->       the block is the file NAME of the scratch folder (used by
                                     later commands or continuations; python is compiled,
                                     json parsed)
    <!-- readme: continues NAME -->  a python block that goes on where the file NAME (and any
                                     continuation of it before) stopped: run as one program with it
    <!-- readme: output -->          what the python block just before prints, exactly
    <!-- readme: shape -->           output that varies run to run (a real multi-process run):
                                     only each line's text up to its first ':' must match
    <!-- readme: skip REASON -->     not run here, for the REASON given (the Quick start's installs:
                                     CI runs those); a python block is still compiled and its
                                     imports imported
"""

from __future__ import annotations

import ast
import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from itertools import zip_longest
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^( *)```(\w*)\s*$")
DIRECTIVE = re.compile(r"^\s*<!-- readme: (\w+)(?: (.*?))? -->\s*$")
DIRECTIVES = {"file", "continues", "output", "shape", "skip"}
DOCUMENTS = ["README.md"] + sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md"))
SECONDS = re.compile(r'"seconds": \{[^{}]*\}')
TIMEOUT = 120  # seconds, for one command or one python block


def blocks(text: str):
    """(info, directive, argument, lines, line number) for every fenced block, in order."""
    lines = text.splitlines()
    found, index = [], 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if not opened:
            index += 1
            continue
        indent, info, start = len(opened.group(1)), opened.group(2), index
        previous = DIRECTIVE.match(lines[index - 1]) if index else None
        index += 1
        body = []
        while not FENCE.match(lines[index]):
            body.append(lines[index][indent:])
            index += 1
        found.append((info, previous.group(1) if previous else None,
                      previous.group(2) if previous else None, body, start + 1))
        index += 1
    return found


def commands(body):
    """(command, expected output lines) for each ``$ `` line of a console block."""
    steps = []
    for line in body:
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def scratch_folder(folder: Path) -> Path:
    """``folder`` with a copy of ``examples/`` and a ``.bin/cpl`` that runs this checkout's
    cpl, whatever is installed: where shown commands run (``run_shell``)."""
    shutil.copytree(ROOT / "examples", folder / "examples")
    shims = folder / ".bin"
    shims.mkdir()
    cpl = shims / "cpl"
    cpl.write_text(f"#!/bin/sh\nexec {sys.executable} -m cpl_cli \"$@\"\n")
    cpl.chmod(0o755)
    return folder


def _environment(folder: Path) -> dict:
    """A user's terminal: without what pytest and xdist set for the test that runs the block
    (pytest-benchmark 5.2 in a block's own pytest warns that xdist is active when it sees
    PYTEST_XDIST_WORKER, and the warning is not in the doc)."""
    theirs = {name: value for name, value in os.environ.items()
              if not name.startswith(("PYTEST_XDIST_", "PYTEST_CURRENT_TEST"))}
    return dict(theirs, PYTHONUNBUFFERED="1", PYTHONPATH=str(ROOT), COLUMNS="80",
                PATH=f"{folder / '.bin'}{os.pathsep}{os.environ['PATH']}")


def run_shell(command: str, folder: Path, timeout: float = TIMEOUT) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(["bash", "-c", "exec 2>&1\n" + command], cwd=folder,
                              env=_environment(folder), capture_output=True, text=True,
                              timeout=timeout)
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(command, -1, f"(no end after {timeout} s)\n", "")


def run_python(source: str, name: str, folder: Path, timeout: float = TIMEOUT):
    program = folder / name
    program.write_text(source, encoding="utf-8")
    try:
        return subprocess.run([sys.executable, name], cwd=folder, env=_environment(folder),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as stopped:
        return subprocess.CompletedProcess(name, -1, stopped.stdout or "",
                                           f"(no end after {timeout} s)")


def _shown(line: str, shape: bool) -> str:
    """What of a printed line is compared: measured times (a ``simulator:`` line, a JSON
    ``"seconds"`` object) differ run to run."""
    line = SECONDS.sub('"seconds": {}', line.rstrip())
    timed = line.startswith("simulator:") or line.startswith("  time:")  # explore's, verify's
    return line.split(":")[0] if shape or timed else line


def _imports_only(source: str) -> str:
    """The import statements of a program, to check what a block that cannot run needs."""
    tree = ast.parse(source)
    return "\n".join(ast.get_source_segment(source, node) for node in tree.body
                     if isinstance(node, (ast.Import, ast.ImportFrom))) + "\n"


@dataclass(frozen=True)
class Block:
    document: str
    index: int
    info: str
    directive: str | None
    argument: str | None
    body: tuple
    line: int

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"

    @property
    def text(self) -> str:
        return "\n".join(self.body) + "\n"

    @property
    def is_console(self) -> bool:
        return any(line.startswith("$ ") for line in self.body)


def document_blocks(document: str, text: str | None = None) -> list[Block]:
    text = (ROOT / document).read_text(encoding="utf-8") if text is None else text
    return [Block(document, n, info, directive, argument, tuple(body), line)
            for n, (info, directive, argument, body, line) in enumerate(blocks(text))]


ALL = [block for document in DOCUMENTS for block in document_blocks(document)]
# the tests in turns, one block of each document: without --dist loadgroup (which sends
# each document's blocks to one worker) xdist's workers then mostly ask for blocks of
# different documents, which run at once, rather than queue for one document's lock
TURNS = [block for turn in zip_longest(*(document_blocks(d) for d in DOCUMENTS))
         for block in turn if block is not None]
FILES = {block.argument: block.text for block in ALL if block.directive == "file"}


def _programs(document_blocks: list[Block], index: int) -> dict:
    """Each continuable name's program as it stands before block ``index``."""
    programs = {}
    for block in document_blocks[:index]:
        if block.info == "python" and block.directive == "file":
            programs[block.argument] = block.text
        elif block.info == "python" and block.directive == "continues" \
                and block.argument in programs:
            programs[block.argument] += block.text
    return programs


class Reading:
    """One document being run, block by block, in one scratch folder that every xdist worker
    shares: a lock lets one worker at a time run the blocks not yet run, up to the one its
    test asks for, and the results file tells the others what each block did."""

    def __init__(self, document: str, root: Path, text: str | None = None):
        self.blocks = document_blocks(document, text)
        self.place = root / Path(document).stem
        self.place.mkdir(parents=True, exist_ok=True)
        self.folder = self.place / "scratch"

    def failure(self, index: int) -> str | None:
        with open(self.place / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            done_file = self.place / "done.json"
            done = json.loads(done_file.read_text()) if done_file.exists() else []
            if not self.folder.exists():
                scratch_folder(self.folder)
                for name, text in FILES.items():
                    (self.folder / name).write_text(text, encoding="utf-8")
            for block in self.blocks[len(done):index + 1]:
                try:
                    done.append(_run(block, self))
                except (SyntaxError, ValueError) as error:  # a file block that does not parse
                    done.append(f"{block.where}: {type(error).__name__}: {error}")
                done_file.write_text(json.dumps(done))
            return done[index]


def _run(block: Block, reading: Reading) -> str | None:
    folder, where = reading.folder, block.where
    if block.directive == "skip":
        if not block.argument:
            return f"{where}: say why the block is skipped: <!-- readme: skip REASON -->"
        if block.info != "python":
            return None
        checked = run_python(_imports_only(block.text), f"imports_{block.line}.py", folder)
        return None if checked.returncode == 0 else \
            f"{where}: the skipped block's imports fail:\n{checked.stderr}"
    if block.directive == "output":
        return None  # compared by the python block before it
    if block.directive == "file":
        (folder / block.argument).write_text(block.text, encoding="utf-8")
        if block.info == "python":
            compile(block.text, where, "exec")
        elif block.info == "json":
            _parse_json(block)
        return None
    if block.info == "python":
        source = block.text
        if block.directive == "continues":
            programs = _programs(reading.blocks, block.index)
            if block.argument not in programs:
                return f"{where}: continues {block.argument!r}, no python file block before it"
            source = programs[block.argument] + source
        ran = run_python(source, f"block_{block.line}.py", folder)
        if ran.returncode != 0:
            return f"{where}: the block fails (exit {ran.returncode}):\n{ran.stdout}{ran.stderr}"
        following = reading.blocks[block.index + 1:block.index + 2]
        if following and following[0].directive == "output" and ran.stdout != following[0].text:
            return f"{where}: the block printed\n{ran.stdout}\nnot what {following[0].where} shows"
        return None
    if block.info == "json":
        _parse_json(block)
        return None
    for command, expected in commands(block.body):
        result = run_shell(command, folder)
        shape = block.directive == "shape"
        got = [_shown(g, shape) for g in result.stdout.rstrip("\n").splitlines()]
        if got != [_shown(w, shape) for w in expected]:
            return f"{where}: `{command}` printed\n" + "\n".join(got)
    return None


def _parse_json(block: Block) -> None:
    try:
        json.loads(block.text)
    except json.JSONDecodeError:
        for line in block.body:
            json.loads(line)  # a JSON lines file


@pytest.fixture(scope="session")
def readings(tmp_path_factory):
    """Where the documents run: one folder for the whole session, shared by xdist's workers
    (each has its own basetemp below one common parent)."""
    base = tmp_path_factory.getbasetemp()
    root = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "docblocks"
    made = {}

    def reading(document: str) -> Reading:
        if document not in made:
            made[document] = Reading(document, root)
        return made[document]
    return reading


@pytest.mark.parametrize("block", [pytest.param(block, id=block.where,
                                                marks=pytest.mark.xdist_group(block.document))
                                   for block in TURNS])
def test_every_block_runs_as_shown(readings, block):
    failure = readings(block.document).failure(block.index)
    assert failure is None, failure


def test_every_directive_is_known_and_every_file_named_once():
    assert all(block.directive in DIRECTIVES | {None} for block in ALL), \
        [block.where for block in ALL if block.directive not in DIRECTIVES | {None}]
    named = [block.argument for block in ALL if block.directive == "file"]
    assert len(named) == len(set(named)), sorted(named)


def test_few_blocks_are_skipped():
    """A skipped block is one the docs could not show running here (a cluster, a killed
    run): at most one in ten of the blocks that run."""
    runnable = [block for block in ALL if block.info == "python" or block.is_console]
    skipped = [block.where for block in runnable if block.directive == "skip"]
    assert len(skipped) * 10 <= len(runnable), skipped


def test_the_docs_have_runnable_blocks():
    """The README introduces (a guard, a choreography, a run, each shown running) and the
    docs teach: their blocks run."""
    readme = [block.info for block in ALL if block.document == "README.md"
              and block.directive != "skip"]
    assert readme.count("python") >= 1 and len(readme) >= 4
    run = [block for block in ALL if block.info == "python" and block.directive != "skip"]
    assert len(run) >= 20


def test_the_readme_introduces_rather_than_teaches():
    """About 200 lines: what the project is, how to start, one guard, one run, one
    picture and a map; the tours live in docs/, where the map points."""
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 220, f"README.md has {len(lines)} lines: move a tour into docs/"


SAMPLE = """<!-- readme: file sketch.py -->
```python
total = 1
```

<!-- readme: continues sketch.py -->
```python
total += 1
print(total)
```

<!-- readme: output -->
```
2
```

```python
print(total)
```

<!-- readme: output -->
```
3
```

<!-- readme: skip -->
```
$ cpl --version
```

<!-- readme: skip needs a cluster -->
```python
import no_such_module_here
```

```
$ cat sketch.py
total = 1
$ echo wrong
right
```

<!-- readme: file broken.json -->
```json
{"a":
```
"""


def test_the_directives_do_what_they_say(tmp_path):
    reading = Reading("SAMPLE.md", tmp_path, SAMPLE)
    results = [reading.failure(block.index) for block in reading.blocks]
    assert results[:3] == [None, None, None]  # file, continuation printing 2, its output
    assert "NameError: name 'total' is not defined" in results[3]  # no continuation marker
    assert results[4] is None  # an output block is its program's test
    assert "say why the block is skipped" in results[5]
    assert "No module named 'no_such_module_here'" in results[6]  # imports of a skipped block
    assert results[7] == "SAMPLE.md:36: `echo wrong` printed\nwrong"
    assert results[8].startswith("SAMPLE.md:44: JSONDecodeError: ")


def test_a_block_runs_without_the_test_runners_own_variables(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw1")
    monkeypatch.setenv("PYTEST_XDIST_WORKER_COUNT", "2")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-q")  # the user's own: kept
    environment = _environment(tmp_path)
    runners = {"PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_CURRENT_TEST"}
    assert not runners & set(environment)
    assert environment["PYTEST_ADDOPTS"] == "-q"
