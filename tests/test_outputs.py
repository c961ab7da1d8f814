"""Every command that writes a file, given a device, a FIFO, a link or a directory.

A regular file or a new path is written whole, through a new file renamed over it; a
character device, a FIFO or a link to our standard output is written into, in place, and
stays what it was; a directory, socket or block device is refused by name (exit 2).
Renamed over, as they once were, a private ``/dev/null`` became a JSON file and a link to
``/dev/stdout`` a regular file with the picture in it, while standard output got nothing.
The device nodes are private (``mknod`` in the test's folder), never the machine's.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from cpl.errors import TraceError
from cpl.live import System
from cpl_cli.outputs import Output
from cpl_cli.usage import UsageError

ROOT = Path(__file__).resolve().parent.parent
FIG2 = ROOT / "examples" / "traces" / "fig2.json"
RELAY = ROOT / "examples" / "relay.py"
NULL, FULL = (1, 3), (1, 7)


def cpl(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpl_cli", *map(str, args)],
                          capture_output=True, cwd=cwd, timeout=60)


def _logs(folder: Path) -> None:
    """Two agents' logs (cpl.live): Tester passes, tells Builder, Builder ships."""
    system = System(["Builder", "Tester"], {"ship": ("Builder", "@Tester(result == passed)")},
                    ["result"])
    builder = system.agent("Builder", log=str(folder))
    tester = system.agent("Tester", log=str(folder))
    tester.act(result="passed")
    builder.receive(tester.send("Builder", "report"))
    assert builder.decide("ship") is True
    builder.close()
    tester.close()


def _trace(data: bytes) -> bool:
    """A whole trace and nothing else: a JSON document, or JSON lines (``.jsonl``)."""
    try:
        first = json.loads(data)
    except ValueError:
        lines = [json.loads(line) for line in data.splitlines()]
        first = lines[0] if "end" in lines[-1] else {}
    return first.get("format") == "cpl-msc/1"


def _otlp(data: bytes) -> bool:
    return "resourceSpans" in json.loads(data)


def _svg(data: bytes) -> bool:
    return b"<svg" in data and data.rstrip().endswith(b"</svg>")


# writer -> (its command line with {out} for the output, the output's suffix, what its
# bytes look like, whether it writes to standard output)
WRITERS = {
    "merge -o": (("merge", "logs", "-o", "{out}"), ".jsonl", _trace, True),
    "render -o": (("render", FIG2, "-o", "{out}", "--format", "svg"), ".svg", _svg, True),
    "export --otlp": (("export", FIG2, "--otlp", "{out}"), ".json", _otlp, True),
    "run --trace": (("run", RELAY, "--sim", "--trace", "{out}"), ".jsonl", _trace, False),
    "run --render": (("run", RELAY, "--sim", "--render", "{out}"), ".svg", _svg, False),
}


def _run(writer: str, out, cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    argv, _, _, _ = WRITERS[writer]
    if writer == "merge -o" and not (cwd / "logs").exists():
        (cwd / "logs").mkdir()
        _logs(cwd / "logs")
    return cpl(*(str(word).format(out=out) for word in argv), *extra, cwd=cwd)


def _mknod(path: Path, numbers: tuple[int, int], kind: int = stat.S_IFCHR) -> None:
    try:
        os.mknod(path, 0o666 | kind, os.makedev(*numbers))
    except PermissionError:
        pytest.skip("making a device node needs root (CAP_MKNOD), as .ci/run has: run "
                    "these tests as root (or in a container)")


def _device(path: Path) -> tuple[int, int] | None:
    """The character device ``path`` still is, or ``None``."""
    mode = os.lstat(path)
    if not stat.S_ISCHR(mode.st_mode):
        return None
    return os.major(mode.st_rdev), os.minor(mode.st_rdev)


def _left_over(folder: Path) -> list[str]:
    return sorted(name.name for name in folder.iterdir() if name.name.startswith(".cpl-"))


@pytest.mark.parametrize("writer", WRITERS)
def test_a_null_device_is_written_into_and_stays_one(tmp_path, writer):
    node = tmp_path / f"null{WRITERS[writer][1]}"
    _mknod(node, NULL)
    done = _run(writer, node.name, tmp_path)
    assert done.returncode == 0, done.stderr
    assert _device(node) == NULL, f"{node.name} is no longer /dev/null: {os.lstat(node)}"
    assert not _left_over(tmp_path)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_full_device_is_a_failed_write_that_leaves_it_a_device(tmp_path, writer):
    node = tmp_path / f"full{WRITERS[writer][1]}"
    _mknod(node, FULL)
    done = _run(writer, node.name, tmp_path)
    assert done.returncode in (1, 2) and b"no room for it" in done.stderr, done
    assert b"Traceback" not in done.stderr
    assert _device(node) == FULL, f"{node.name} is no longer /dev/full: {os.lstat(node)}"
    assert not _left_over(tmp_path)


class _Reader(threading.Thread):
    """Reads a FIFO to its end; ``stop`` ends a read whose writer never came."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        self.path, self.got = path, b""

    def run(self) -> None:
        with open(self.path, "rb") as fifo:
            self.got = fifo.read()

    def stop(self, timeout: float = 10) -> None:
        self.join(timeout)
        if self.is_alive():  # its open() waits for a writer: be one, with nothing to say
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))
            self.join(5)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_gets_the_whole_output_and_stays_a_fifo(tmp_path, writer):
    fifo = tmp_path / f"pipe{WRITERS[writer][1]}"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    reader.start()
    try:
        done = _run(writer, fifo.name, tmp_path)
    finally:
        reader.stop()
    assert done.returncode == 0, done.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced"
    assert WRITERS[writer][2](reader.got), reader.got[:200]
    assert not _left_over(tmp_path)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_link_to_standard_output_writes_there_and_stays_a_link(tmp_path, writer):
    link = tmp_path / f"out{WRITERS[writer][1]}"
    link.symlink_to("/dev/stdout")
    done = _run(writer, link.name, tmp_path)
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout", "the link was replaced"
    if WRITERS[writer][3]:
        assert done.returncode == 0, done.stderr
        assert WRITERS[writer][2](done.stdout), done.stdout[:200]
    else:  # cpl run prints its results there: a trace or picture too would spoil both
        assert done.returncode == 2 and b"standard output carries the run's results" \
            in done.stderr, done.stderr
        assert done.stdout == b""
    assert not _left_over(tmp_path)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_dash_is_standard_output_or_refused_by_name(tmp_path, writer):
    done = _run(writer, "-", tmp_path)
    assert not (tmp_path / "-").exists()
    if WRITERS[writer][3]:
        assert done.returncode == 0, done.stderr
        assert WRITERS[writer][2](done.stdout), done.stdout[:200]
    else:
        assert done.returncode == 2 and b"-: standard output carries" in done.stderr


@pytest.mark.parametrize("writer", WRITERS)
def test_a_directory_is_a_named_usage_error(tmp_path, writer):
    folder = tmp_path / f"folder{WRITERS[writer][1]}"
    folder.mkdir()
    done = _run(writer, folder.name, tmp_path, *(("--force",) if writer == "merge -o" else ()))
    assert done.returncode == 2, done.stderr
    assert b"it is a directory; name a file in it" in done.stderr, done.stderr
    assert b"internal error" not in done.stderr and done.stdout == b""
    assert folder.is_dir() and not list(folder.iterdir())


@pytest.mark.parametrize("writer", WRITERS)
def test_a_link_to_a_file_writes_the_file_and_keeps_the_link(tmp_path, writer):
    suffix = WRITERS[writer][1]
    target = tmp_path / "real" / f"target{suffix}"
    target.parent.mkdir()
    target.write_bytes(b"")  # empty: merge replaces it without --force
    target.chmod(0o640)
    link = tmp_path / f"link{suffix}"
    link.symlink_to(target)
    done = _run(writer, link.name, tmp_path)
    assert done.returncode == 0, done.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert WRITERS[writer][2](target.read_bytes())
    if writer != "run --trace":  # written in place as the run goes: the file stays
        assert stat.S_IMODE(target.stat().st_mode) == 0o640, "the file's mode kept"
    assert not _left_over(tmp_path) and not _left_over(target.parent)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_socket_is_refused_by_name(tmp_path, writer):
    path = tmp_path / f"s{WRITERS[writer][1]}"
    listening = socket.socket(socket.AF_UNIX)
    try:
        listening.bind(str(path))
        done = _run(writer, path.name, tmp_path)
    finally:
        listening.close()
    assert done.returncode == 2 and b"it is a socket" in done.stderr, done.stderr
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_merge_takes_the_suffixes_cpl_run_takes(tmp_path):
    """``-o x.txt`` would be JSON under a name that says text: refused as --trace is."""
    for name in ("x.txt", "t.svg", "a.JSONL.bak"):
        merged = _run("merge -o", name, tmp_path)
        ran = _run("run --trace", name, tmp_path)
        assert merged.returncode == ran.returncode == 2, (merged.stderr, ran.stderr)
        assert merged.stderr.replace(b"cpl merge: -o", b"cpl run: --trace") == ran.stderr
        assert not (tmp_path / name).exists()
    for name in ("t.json", "t.JSONL", "t.msgpack", "t.mpk", "t"):
        assert _run("merge -o", name, tmp_path).returncode == 0
        assert (tmp_path / name).stat().st_size > 0


# ------------------------------------------------ the module, in process


def test_links_to_our_descriptors_are_streams(tmp_path):
    hop = tmp_path / "hop"
    hop.symlink_to("/dev/stdout")
    (tmp_path / "two").symlink_to(hop)
    for given, descriptor in (("-", 1), ("/dev/stdout", 1), ("/dev/stderr", 2),
                              ("/proc/self/fd/2", 2), (str(tmp_path / "two"), 1)):
        output = Output.of(given, "-o")
        assert output.stream and output.descriptor == descriptor, given
    assert not Output.of(str(tmp_path / "new.json"), "-o").stream


def test_a_block_device_and_a_missing_folder_are_refused(tmp_path):
    _mknod(tmp_path / "disk", (7, 0), stat.S_IFBLK)
    with pytest.raises(UsageError, match="it is a block device"):
        Output.of(str(tmp_path / "disk"), "-o")
    with pytest.raises(UsageError, match="the directory '.*nowhere' does not exist"):
        Output.of(str(tmp_path / "nowhere" / "t.json"), "-o")
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(UsageError, match="cannot look at it"):
        Output.of(str(loop), "-o")


def test_a_file_that_became_a_device_meanwhile_is_not_renamed_over(tmp_path):
    path = tmp_path / "t.json"
    path.write_text("old")
    output = Output.of(str(path), "-o")
    temporary = output.temporary()
    path.unlink()
    _mknod(path, NULL)
    with pytest.raises(TraceError, match="it became a character device"):
        output.commit(temporary)
    assert _device(path) == NULL
    os.unlink(temporary)


def test_a_link_to_a_new_path_makes_its_target_and_stays_a_link(tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to("real.json")  # relative, dangling
    Output.of(str(link), "-o").write([b"{}", b"\n"])
    assert link.is_symlink() and (tmp_path / "real.json").read_bytes() == b"{}\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["link.json", "real.json"]


@pytest.mark.parametrize("given, words", [("", "name a file"),
                                          ("somewhere/", "it names a directory")])
def test_no_name_or_a_folder_name_is_refused(given, words):
    with pytest.raises(UsageError, match=words):
        Output.of(given, "-o")
