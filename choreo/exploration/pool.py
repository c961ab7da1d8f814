"""Worker processes for many independent runs, none of which outlives its caller.

:func:`in_pool` hands chunks of work to a ``ProcessPoolExecutor`` a few at a
time (the work may be huge: never all of it at once) and gives back each
batch of results as it comes.  However the block is left — Ctrl-C, an error
while merging, a worker that died (killed from outside, out of memory,
``os._exit``: :class:`WorkerDied`) — every worker is ended before the call
returns.
"""

from __future__ import annotations

import itertools
import os
import pickle
from typing import Callable, Iterable

from cpl.errors import CplError


class WorkerDied(CplError, RuntimeError):
    """A worker process ended without its result (killed, out of memory, ``os._exit``)."""


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def picklable(value) -> bool:
    """``value`` can be shipped to a spawned worker (a lambda or a local class cannot)."""
    try:
        pickle.dumps(value)
    except Exception:  # noqa: BLE001 - whatever pickle raises for a lambda, a local class
        return False
    return True


def in_pool(chunks: Iterable, workers: int, context, initializer: Callable, initargs: tuple,
            work: Callable, take: Callable[[list], None]) -> None:
    """``work(chunk)`` for every chunk in ``workers`` processes started by ``context``, each
    first running ``initializer(*initargs)``; ``take(results)`` here after each batch."""
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    pool = ProcessPoolExecutor(workers, mp_context=context, initializer=initializer,
                               initargs=initargs)
    chunks = iter(chunks)
    try:
        # A few chunks ahead of each worker, not all of them: --runs may be huge.
        pending = {pool.submit(work, chunk) for chunk in itertools.islice(chunks, 3 * workers)}
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            take([future.result() for future in done])
            pending |= {pool.submit(work, chunk) for chunk in itertools.islice(chunks, len(done))}
    except BrokenProcessPool as error:
        _terminate(pool)
        raise WorkerDied(f"a worker process ended without its result ({error})") from None
    except BaseException:  # Ctrl-C: no worker outlives us
        _terminate(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _terminate(pool) -> None:
    """End the pool's processes now (``terminate_workers`` from Python 3.14 on)."""
    terminate = getattr(pool, "terminate_workers", None)
    if terminate is not None:
        terminate()
        return
    for process in list((getattr(pool, "_processes", None) or {}).values()):
        if process.is_alive():
            process.terminate()
