"""What an output path is, and how every ``cpl`` command writes one.

``cpl merge -o``, ``cpl render -o``, ``cpl export --otlp`` and ``cpl run
--render`` write their file whole or not at all: the content goes to a new
file and only a whole one takes the output's name.  Renaming is right for a
regular file (or a new path) alone: renamed over ``/dev/null``, a FIFO or the
``/dev/stdout`` link, the new file would *replace* the device or link (as root,
``/dev/full`` became a JSON file).  So an output is one of:

* a regular file or a new path (through any symlinks: the link is kept, its
  target replaced): a new file beside the target, renamed over it;
* a stream — ``-`` (standard output), ``/dev/stdout`` and the other links to
  one of our descriptors, a character device, a FIFO: the content is made in
  a temporary file first (so a failure writes nothing there either), then
  written into it in place;
* anything else — a directory, a socket, a block device — refused by name
  before any work (a usage error, exit 2), as is a path that cannot be looked
  at or a folder that does not exist.

``cpl run --trace`` streams its trace as the run goes (a killed run leaves what
it had): it opens the path in place and uses only the refusals here.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import sys
import tempfile
from typing import Iterable, Iterator

import attrs

from cpl.errors import TraceError

from .usage import UsageError

STDOUT = "-"
_LINKS = 40  # symlinks followed before giving up, as the kernel does (ELOOP)
_CHUNK = 1 << 20  # bytes copied at a time into a stream


@attrs.frozen
class Output:
    """An output path as looked at before any work: ``path`` is where the bytes go (a
    symlink's final target for a file; as given for a device or FIFO), ``stream`` whether
    they are written in place, ``descriptor`` one of ours the path names (``-``: 1)."""

    given: str
    option: str  # as messages name it: "-o", "--otlp"
    path: str
    stream: bool
    descriptor: int | None = None

    @classmethod
    def of(cls, given: str, option: str) -> Output:
        """What ``given`` is; ``UsageError`` naming ``option`` when it cannot be an output."""
        if not given or given.endswith(os.sep):
            raise UsageError(f"{option} {given!r}: " + (
                "name a file" if not given else "it names a directory; name a file in it"))
        try:
            descriptor = 1 if given == STDOUT else _descriptor(given)
            if descriptor is not None:
                try:
                    os.fstat(descriptor)
                except OSError:
                    raise UsageError(f"{option} {given}: it names descriptor {descriptor}, "
                                     f"which is not open") from None
                return cls(given, option, given, True, descriptor)
            try:
                mode = os.stat(given).st_mode
            except (FileNotFoundError, NotADirectoryError):  # a new path, or a link to one
                mode = None  # (made at its target), or one in no folder: said below
        except (OSError, ValueError) as error:
            raise UsageError(f"{option} {given}: cannot look at it: "
                             f"{getattr(error, 'strerror', None) or error}") from None
        if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
            return cls(given, option, given, True)
        if mode is not None and not stat.S_ISREG(mode):
            raise UsageError(f"{option} {given}: {_refused(mode)}")
        target = os.path.realpath(given)
        folder = os.path.dirname(target)
        if not os.path.isdir(folder):
            shown = repr(folder if os.path.islink(given) else os.path.dirname(given) or ".")
            raise UsageError(f"{option} {given}: the directory {shown} does not exist" if not
                             os.path.lexists(folder) else f"{option} {given}: {shown} is not "
                             f"a directory")
        return cls(given, option, target, False)

    @property
    def to_stdout(self) -> bool:
        """The bytes go to our standard output: a summary goes to standard error."""
        return self.descriptor == 1

    def holds_data(self) -> bool:
        """A regular file with something in it (what ``--force`` is asked for)."""
        try:
            return not self.stream and os.path.getsize(self.path) > 0
        except OSError:
            return False

    def temporary(self) -> str:
        """A new empty file for the content, with the output's suffix (its form): beside
        the target for a file (the rename stays on one file system), made as ``open()``
        would make it (0666 less the umask) or with the mode of the file it replaces; in
        the temporary folder for a stream.  ``UsageError`` if it cannot be made."""
        if self.stream:
            suffix = os.path.splitext(os.path.basename(self.given))[1][-32:]
            try:
                handle, path = tempfile.mkstemp(suffix=suffix, prefix=".cpl-")
            except OSError as error:
                raise UsageError(f"{self.option} {self.given}: cannot make a temporary file "
                                 f"in {tempfile.gettempdir()}: {error.strerror}") from None
            os.close(handle)
            return path
        try:
            mode = stat.S_IMODE(os.stat(self.path).st_mode) & 0o777
        except OSError:
            mode = None  # a new file: 0666 less the umask, by open()
        folder, name = os.path.split(self.path)
        for _ in range(100):
            path = os.path.join(folder, _beside_name(name))
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL,
                                 0o666 if mode is None else mode))
                if mode is not None:
                    os.chmod(path, mode)  # the replaced file's own, whatever the umask
                return path
            except FileExistsError:
                continue
            except OSError as error:
                from cpl.trace import unwritable
                raise UsageError(f"{self.option} {self.given}: cannot write it: "
                                 f"{unwritable(path, error)}") from None
        raise UsageError(f"{self.option} {self.given}: cannot write beside it: 100 names taken")

    def commit(self, temporary: str) -> None:
        """The whole content in ``temporary`` becomes the output: renamed over a file (if
        it is still one: never over what became a device meanwhile), written into a
        stream; ``TraceError`` naming the output if that fails."""
        try:
            if not self.stream:
                try:
                    mode = os.lstat(self.path).st_mode
                except FileNotFoundError:
                    mode = None
                if mode is not None and not stat.S_ISREG(mode):
                    raise TraceError(f"cannot write {self.given}: it became "
                                     f"{_what(mode)} while it was written; left as it is")
                os.replace(temporary, self.path)
                return
            with open(temporary, "rb") as source:
                self._stream(source)
        except BrokenPipeError:
            if self.to_stdout:
                raise  # `cpl ... -o - | head`: as every command's printing does
            raise TraceError(f"cannot write {self.given}: its reader closed it") from None
        except OSError as error:
            from cpl.trace import unwritable
            raise TraceError(f"cannot write {self.given}: "
                             f"{_no_room(error) or unwritable(self.given, error)}") from None
        finally:
            if self.stream and os.path.lexists(temporary):
                os.unlink(temporary)

    def _stream(self, source) -> None:
        if self.descriptor is not None:
            if sys.stdout is not None:
                sys.stdout.flush()  # what was printed before comes first
            _copy(source, self.descriptor)
            return
        descriptor = os.open(self.path, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
        try:
            mode = os.fstat(descriptor).st_mode
            if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
                raise TraceError(f"cannot write {self.given}: it became {_what(mode)} while "
                                 f"it was written; left as it is")
            _copy(source, descriptor)
        finally:
            os.close(descriptor)

    @contextlib.contextmanager
    def replacing(self) -> Iterator[str]:
        """A temporary file (made now: an unwritable folder is said before any work) to
        write the content into; it becomes the output when the block ends without error,
        and is removed in any case."""
        temporary = self.temporary()
        try:
            yield temporary
            self.commit(temporary)
        finally:
            if os.path.lexists(temporary):
                os.unlink(temporary)

    def write(self, data: Iterable[bytes]) -> None:
        """``data`` (its parts, in order) written whole, or an error naming the output and
        nothing written (also when making a part fails)."""
        with self.replacing() as temporary:
            try:
                with open(temporary, "wb") as out:
                    for part in data:
                        out.write(part)
            except OSError as error:
                raise TraceError(f"cannot write {self.given}: "
                                 f"{_no_room(error) or error.strerror}") from None


def trace_suffix(given: str | None, option: str) -> None:
    """A trace's output must end in a trace's suffix (``cpl.trace.SUFFIXES``), or none
    (JSON: ``/dev/stdout``, ``-``): ``out.txt`` would silently be JSON.  One check for
    ``cpl run --trace`` and ``cpl merge -o``."""
    if given is None:
        return
    from cpl.trace import SUFFIXES
    suffix = os.path.splitext(os.path.basename(given))[1]
    if suffix and suffix.lower() not in SUFFIXES:
        raise UsageError(f"{option} {given}: give a file ending in .json, .jsonl (streamed) "
                         f"or .msgpack (also .mpk), not {suffix}")


def _descriptor(given: str) -> int | None:
    """The descriptor of ours ``given`` names through its links (``/dev/stdout`` ->
    ``/proc/self/fd/1``), else ``None``: written as the shell's ``>`` to it would, in
    place, keeping what the descriptor is (appending, a terminal, a pipe)."""
    ours = f"/proc/{os.getpid()}/fd"
    current = os.path.abspath(given)
    for _ in range(_LINKS):
        folder, name = os.path.split(current)
        folder = os.path.realpath(folder)
        if folder == ours and name.isdigit():
            return int(name)
        current = os.path.join(folder, name)
        if not os.path.islink(current):
            return None
        current = os.path.join(folder, os.readlink(current))
    return None


def _beside_name(name: str) -> str:
    """A hidden name for the file that becomes ``name``, ending as it does (its suffix
    says the form), short enough for any file system (255 bytes)."""
    token = secrets.token_hex(4)
    while len(os.fsencode(name)) > 200:
        name = name[len(name) // 4:]  # keeps the end, where the suffix is
    return f".cpl-{token}-{name}"


def _refused(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "it is a directory; name a file in it"
    if stat.S_ISSOCK(mode):
        return "it is a socket; name a file (or a FIFO, or - for standard output)"
    if stat.S_ISBLK(mode):
        return "it is a block device (a disk): name a file on a file system"
    return f"it is {_what(mode)}; name a file"


def _what(mode: int) -> str:
    for test, words in ((stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISLNK, "a symbolic link"),
                        (stat.S_ISREG, "a regular file")):
        if test(mode):
            return words
    return "not a file"


def _no_room(error: OSError) -> str | None:
    import errno
    if error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT):
        return f"no room for it ({error.strerror})"
    return None


def _copy(source, descriptor: int) -> None:
    while chunk := source.read(_CHUNK):
        view = memoryview(chunk)
        while view:
            view = view[os.write(descriptor, view):]


__all__ = ["Output", "STDOUT", "trace_suffix"]
