"""The paths traces are read from and written to, and what to say when one will not do.

A trace is read from a regular file: opening a FIFO waits for a writer, a
device may never end, and a reader may read a trace twice (a stream's
variables first).  Creating a file fails with the same ``ENOENT`` for a
missing directory and for one that takes no new files (``/proc``), so the
message looks at the directory before it says which.
"""

from __future__ import annotations

import stat
from pathlib import Path

from ..errors import TraceError


def readable_file(path: Path) -> None:
    """``TraceError`` unless ``path`` is a regular file (after links), before it is opened."""
    try:
        mode = path.stat().st_mode
    except OSError as error:
        raise TraceError(f"cannot read the trace: {error.strerror}", str(path)) from None
    except ValueError:  # a NUL in the path
        raise TraceError("cannot read the trace: the path holds a NUL character",
                         repr(str(path))) from None
    if stat.S_ISREG(mode):
        return
    kind = ("a directory; name a trace file in it" if stat.S_ISDIR(mode) else
            "a named pipe (FIFO); a trace is read from a regular file, maybe twice: save it to "
            "one first" if stat.S_ISFIFO(mode) else
            "a device, not a trace file" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else
            "not a regular file")
    raise TraceError(f"cannot read the trace: it is {kind}", str(path))


def unwritable(path, error: OSError) -> str:
    """Why ``path`` could not be created (``error``), in words that name the real cause."""
    parent, folder = Path(path).absolute().parent, repr(str(Path(path).parent))
    why = error.strerror or str(error)
    if isinstance(error, IsADirectoryError):
        return "it is a directory; name a file in it"
    if isinstance(error, (FileNotFoundError, NotADirectoryError)) and not parent.is_dir():
        return (f"{folder} is not a directory" if parent.exists() else
                f"the directory {folder} does not exist")
    if isinstance(error, (FileNotFoundError, PermissionError)):  # it is there: /proc, say
        return f"the directory {folder} is not writable ({why})"
    return why
