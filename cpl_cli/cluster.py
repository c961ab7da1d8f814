"""``cpl run --launcher ray``'s options: ``--ray-address`` and ``--place`` read, and their
errors worded as usage errors; the cluster itself is :mod:`runtime.supervisor.ray_cluster`'s.

``--ray-address auto`` (the default) joins the cluster ``RAY_ADDRESS`` names, else
the one running on this machine, else starts one here; ``local`` always starts one
here; ``ADDRESS`` (``HOST:PORT``) joins that cluster.

``--place FILE`` is JSON, one entry per lifeline placed: ``{"Lifeline":
{"resources": ["host-b"]}}`` (a node with that custom resource; a map
``{"host-b": 0.5}`` says how much of it), or ``{"Lifeline": {"node": "ID or
ADDRESS"}}``.  Lifelines not in it go where Ray's scheduler puts them.  The
file is data: every entry is checked, then checked again against the
cluster, and a wrong one is a usage error naming the file and the entry.
"""

from __future__ import annotations

import contextlib

from runtime.supervisor import ClusterError, Misplaced, Place, on_cluster, place_of, ray_session
from .usage import UsageError, option_json

MISSING = "--launcher ray needs Ray: pip install 'causal-guards[ray]'"


def joined(address: str, scope: contextlib.ExitStack) -> str:
    """The cluster ``--ray-address`` names, joined (or started) for ``scope``; the address
    the supervisor listens on."""
    try:
        return scope.enter_context(ray_session(address))
    except ClusterError as error:
        raise UsageError(f"--ray-address {address}: {error}") from None


def read_place(path: str, lifelines) -> dict[str, Place]:
    """``--place FILE``: lifeline -> :class:`Place`, every entry checked."""
    data = option_json("--place", path)
    if not isinstance(data, dict):
        raise UsageError(f'--place: {path} must be {{"Lifeline": {{"resources": ["NAME"]}} '
                         f'or {{"node": "ID or ADDRESS"}}, ...}}')
    places = {}
    for name, entry in data.items():
        where = f"--place: {path}: entry {name!r}"
        if name not in lifelines:
            raise UsageError(f"{where} is not a lifeline of this choreography "
                             f"({', '.join(lifelines)})")
        try:
            places[name] = place_of(entry)
        except Misplaced as error:
            raise UsageError(f"{where}: {error}") from None
    return places


def checked_on_cluster(path: str, places: dict[str, Place]) -> dict[str, Place]:
    """The places of ``--place`` checked against the cluster joined, now."""
    try:
        return on_cluster(places)
    except Misplaced as error:
        raise UsageError(f"--place: {path}: entry {error.lifeline!r}: {error}") from None
