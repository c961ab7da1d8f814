"""A run over processes as one call: its parts claimed, its trace written, its parts settled.

:func:`run` is what ``cpl run`` (without ``--sim``) does around the :class:`Supervisor`,
for any caller: with a trace ``T`` the lifelines' logs go to ``T.parts`` beside it,
made and locked before ``T`` is opened (:class:`~.parts.Claim`: a second run given the
same ``T`` touches neither); the trace is opened before any lifeline starts (an
unwritable one costs no run); every merged event is written as the run goes, a write
that fails ends the writing but not the run (its results still count); and at the end
the parts are removed once the trace is whole, or kept with how the run ended
(``end.json``) for ``cpl merge``: when the trace could not be written, when a second
Ctrl-C cut the final merge short, when the merge could not place every event, or when
the trace vanished meanwhile.  Ctrl-C and SIGTERM are counted from the claim until the
parts are settled (:mod:`.interrupts`): none lands inside a line of the trace.  The
caller words what it prints from the :class:`RunResult`.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Sequence

import attrs

from choreo.execution import EXIT_CODES, INCOMPLETE, LOST, Sweep
from cpl.errors import EXIT_USAGE, CplError, TraceError
from .interrupts import Interrupts
from .launchers import Launcher
from .parts import Claim, keep_end
from .supervisor import Supervisor
from .verdicts import before_lost


class TraceRefused(CplError):
    """The trace cannot be opened (``error``, a ``TraceError``, says why): no run was made
    (exit 2, as ``cpl run --trace`` words it)."""

    exit_code = EXIT_USAGE

    def __init__(self, error: TraceError):
        super().__init__(str(error))
        self.error = error


@attrs.frozen
class RunResult:
    """How a run over processes ended: its trace's ``meta`` (status, error, results...), the
    ``trace`` written, the ``parts`` kept for ``cpl merge`` (None: removed, or none), the
    trace's write that failed (``write_error``), and the exit code ``cpl run`` gives."""

    meta: dict
    trace: str | None
    parts: str | None
    write_error: TraceError | None
    exit_code: int

    @property
    def status(self) -> str:
        return self.meta["status"]

    @property
    def error(self) -> str | None:
        return self.meta.get("error")

    @property
    def results(self) -> dict[str, dict]:
        """Each lifeline's reported variables, as the merged events leave them."""
        return self.meta.get("results", {})

    @property
    def written(self) -> bool:
        """The trace holds the whole run: written, ended, every event merged, still there."""
        return bool(self.trace) and self.write_error is None and \
            not self.meta.get("unmerged") and self.status != LOST

    @property
    def unmerged(self) -> bool:
        """A second Ctrl-C cut the final merge short: the trace lacks events its kept
        ``parts`` hold."""
        return bool(self.meta.get("unmerged") and self.parts and self.write_error is None)


def run(choreography: str, *, name: str | None = None, args: Sequence[str] = (),
        seed: int = 0, trace: str | None = None, keep_parts: bool = True,
        timeout: float | None = None, secure: bool = True, host: str = "127.0.0.1",
        launchers: list[Launcher] | None = None, plan=None, inputs: dict | None = None,
        interrupts: Interrupts | None = None, opened: Callable[[], None] | None = None,
        tell: Callable[[dict], None] | None = None,
        ended: Callable[[dict], None] | None = None) -> RunResult:
    """Run the choreography in file ``choreography`` (``name``: which one, if it holds
    several), its inputs ``args`` (``NAME=VALUE``), one process per lifeline placed by
    ``launchers`` (default: all here) under a supervisor listening on ``host``.

    ``trace``: the ``cpl-msc/1`` trace to write (``TraceRefused`` if it cannot be opened),
    its lifelines' logs beside it unless ``keep_parts`` is false (a trace into a device or
    FIFO: they go to a temporary folder); ``Taken`` if its parts folder is there already.
    ``plan`` and ``inputs``: the choreography already prepared and its inputs read (the
    caller worded their errors).  ``opened()``: the trace is open, no lifeline started
    yet (what an insecure run warns of is said then); ``tell(meta)``: a lifeline died or is
    unresponsive, said before the stop and the last merge, which may take seconds;
    ``ended(meta)``: the run ended, called before the trace is closed (results shown
    first: a FIFO's reader may keep the close waiting)."""
    if plan is None:
        from choreo import load_one
        from choreo.execution import prepare
        plan = prepare(load_one(choreography, name))
    if inputs is None:
        inputs = plan.inputs(list(args))
    with contextlib.nullcontext(interrupts) if interrupts is not None else Interrupts() as held:
        parts = _parts_of(trace) if trace and keep_parts else None
        claim = _claimed(parts) if parts else None  # before the trace is opened
        try:
            supervisor = _supervisor(plan, choreography, name, inputs, seed, claim,
                                     secure=secure, timeout=timeout, host=host,
                                     launchers=launchers, parts=parts)
            meta, failed_write = _written(supervisor, trace, held, opened, tell, ended)
            return _settled(meta, trace, parts, failed_write)
        finally:
            if claim is not None:
                claim.release()


def _parts_of(trace: str) -> str:
    from cpl.trace import parts_of
    return parts_of(trace)


def _claimed(parts: str) -> Claim | None:
    """The parts folder made and locked for this run, or None if it cannot be made (the
    trace's check, or the supervisor's, then says why); ``Taken`` if it is there."""
    try:
        return Claim(parts)
    except OSError:
        return None


def _supervisor(plan, choreography, name, inputs, seed, claim, **options) -> Supervisor:
    """The run's supervisor; if it cannot be made (launchers that do not place every
    lifeline once), no run: the parts folder goes as it came."""
    try:
        return Supervisor(plan, choreography, name, inputs, seed, claim=claim, **options)
    except BaseException:
        if claim is not None:
            claim.abandon()
        raise


def _written(supervisor: Supervisor, trace: str | None, interrupts: Interrupts, opened, tell,
             ended) -> tuple[dict, TraceError | None]:
    """The run with its trace written as it goes: its meta, and the write that failed."""
    from cpl.trace import Recording, TraceWriter
    spec, claim, writer = supervisor.spec, supervisor.claim, None
    if trace:  # checked before the run: an unwritable path must not cost a run
        try:
            writer = TraceWriter.open(trace, **spec.plan.header(spec.inputs),
                                      parts=spec.parts and os.path.basename(spec.parts))
        except TraceError as error:
            if claim is not None:
                claim.abandon()
            raise TraceRefused(error) from None
        if claim is not None:
            claim.watch(trace)
    write = Recording(writer)
    # Leaving the block without close() (an error of ours, a second Ctrl-C) still ends
    # the trace, as failed or interrupted.
    with writer or contextlib.nullcontext(), Sweep():  # no process of the run outlives it
        if opened is not None:
            opened()
        meta = supervisor.run(write, interrupts, tell)
        if ended is not None:
            ended(meta)
        write.close(meta)
    return meta, write.failed


def _settled(meta: dict, trace: str | None, parts: str | None,
             failed_write: TraceError | None) -> RunResult:
    """The parts removed if the trace is whole, else kept with how the run ended
    (``end.json``) for ``cpl merge``; the result, with its exit code."""
    code = EXIT_CODES[meta["status"]]
    unmerged = bool(meta.get("unmerged") and parts and failed_write is None)
    gone = meta["lost"]["vanished"] if meta["status"] == LOST else []
    unplaced = meta["status"] == INCOMPLETE and failed_write is None  # the parts hold it
    if (failed_write or unmerged or gone or unplaced) and parts \
            and all(path == trace for path in gone):
        keep_end(parts, before_lost(meta))  # how the run ended, for cpl merge
    kept = parts
    if failed_write is not None:
        code = code or 1
    elif unmerged:
        code = code or 130
    elif parts and not gone and not unplaced:
        shutil.rmtree(parts, ignore_errors=True)  # the trace is whole: its parts are done
        kept = None
    return RunResult(meta, trace, kept, failed_write, code)
