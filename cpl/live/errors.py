"""What goes wrong when an application drives its agents by hand: one error per misuse.

Every error says what was asked, what the system has, and the fix, so a
developer wiring guards into an agent never reads a ``KeyError`` from inside
the monitor.  All are ``LiveError``s, themselves ``ValueError``s (and ``cpl.CplError``s:
exit code 2, a misuse, but for a log that failed or a token refused, 1).
"""

from __future__ import annotations

from ..errors import EXIT_FAILED, EXIT_USAGE, CplError
from ..lang import did_you_mean


class LiveError(CplError, ValueError):
    """A misuse of the live API; the message says the fix."""

    exit_code = EXIT_USAGE


class UnknownLifeline(LiveError):
    def __init__(self, name, lifelines):
        super().__init__(_said(f"{name!r} is not a lifeline of this system", name, lifelines,
                               f"its lifelines are {_listed(lifelines)}; System(...) lists "
                               f"every agent that takes part"))


class UnknownLabel(LiveError):
    def __init__(self, label, labels):
        super().__init__(_said(f"no guard is labelled {label!r}", label, labels,
                               f"the guards are {_listed(labels) or 'none'}; add it to "
                               f"System(..., guards)"))


class NotOwner(LiveError):
    def __init__(self, label, owner, asked):
        super().__init__(f"the guard {label!r} belongs to {owner!r}, not {asked!r}: a guard is "
                         f"decided only by its owner, from its causal past; ask "
                         f"system.agent({owner!r})")


class UndeclaredVariable(LiveError):
    def __init__(self, name, variables):
        super().__init__(_said(f"{name!r} is not a declared variable", name, variables,
                               f"the variables are {_listed(variables) or 'none'}; declare "
                               f"it with System(..., variables=[...])"))


class LogExists(LiveError):
    """An agent's log that is there already (an earlier run's?): kept unless ``overwrite``.
    ``path`` is the log, for a program to name its own way to overwrite it."""

    def __init__(self, lifeline, path):
        super().__init__(f"{lifeline}'s log {path} exists already (an earlier run's?): move or "
                         f"delete it first (after cpl merge, if its events matter), or give "
                         f"overwrite=True with log= to replace it")
        self.path = path


class LogFailed(LiveError):
    """An event the agent's log could not take (a full disk, a file size limit, an I/O
    error): the event is refused whole, so the agent's counters, monitor and log are as
    they were, and the next event may succeed once the log has room again.  ``reason``
    (``"log"``) is the short tag adapters answer with; ``path`` is the log."""

    reason = "log"
    exit_code = EXIT_FAILED  # the agent's call was right; the disk was not

    def __init__(self, lifeline, path, why: str):
        super().__init__(f"{lifeline}'s log {path} could not take the event ({why}): the "
                         f"event is refused and nothing of it is counted; give the log room "
                         f"(disk space, the file size limit) and the agent goes on")
        self.path = path
        self.why = why


class TokenRefused(LiveError):
    """A token that must not reach the monitor: ``reason`` is a short tag for counting
    (``malformed``, ``oversized``, ``foreign``, ``misaddressed``, ``replayed``, ``forged``,
    ``clock``).  The agent's state is as it was."""

    exit_code = EXIT_FAILED  # the input was read, and refused

    def __init__(self, reason: str, detail: str):
        super().__init__(f"token refused ({reason}): {detail}")
        self.reason = reason


class SigningUnavailable(LiveError):
    """Per-lifeline keys without the ``cryptography`` package, which signs with them."""

    def __init__(self):
        super().__init__("per-lifeline keys (KeyRing) sign with the cryptography package, "
                         "which is not installed: pip install 'causal-guards[signing]'")


def _said(what: str, name, known, rest: str) -> str:
    """``what``, the closest known name if one is close, then ``rest``."""
    hint = did_you_mean(name, known)
    return f"{what}{hint} {rest[0].upper()}{rest[1:]}." if hint else f"{what}: {rest}."


def _listed(names, most: int = 12) -> str:
    names = list(names)
    shown = ", ".join(repr(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "")
