"""The Ray cluster of a run on Ray: found or started, and where lifelines may be placed on it.

Address ``auto`` joins the cluster ``RAY_ADDRESS`` names, else the one this
machine's ``/tmp/ray/ray_current_cluster`` names if it still listens (a killed
driver leaves that file behind), else starts one here; ``local`` always starts one
here; ``HOST:PORT`` joins that cluster.  A Ray started here listens on 127.0.0.1
only, and ends with the run (``ray.shutdown`` on every path; if the run's process is
killed, Ray's processes do not die with it, and a watcher started first,
:mod:`.ray_reaper`, ends them and removes their session folder).  It needs nothing
of HOME (``own_token``).  A cluster joined is left running; only our actors end.

A lifeline's place is read from its JSON form (:func:`place_of`: ``{"resources":
["host-b"]}``, a map ``{"host-b": 0.5}`` saying how much, or ``{"node": "ID or
ADDRESS"}``), every part checked, and checked again against the cluster once joined
(:func:`on_cluster`): a resource no node has, a node not alive or not named once.
``cpl run --launcher ray`` (``cpl_cli.cluster``) reads the options and words the
errors as usage errors.
"""

from __future__ import annotations

import contextlib
import importlib.util
import ipaddress
import logging
import math
import os
import secrets
import shutil
import signal
import socket
import sys
import tempfile
import threading

from cpl.errors import EXIT_USAGE, CplError

from .ray_launcher import TOKEN, Place, node_of
from .ray_reaper import Reaper

RUN_FOLDER = "cpl-rayrun-"  # the prefix of a Ray session folder of ours
_CURRENT = "/tmp/ray/ray_current_cluster"  # where a Ray started on this machine says it is


class ClusterError(CplError):
    """Ray cannot be started or joined at the address given; the message says why (exit 2,
    as ``cpl run`` words it: the address given is the usage at fault)."""

    exit_code = EXIT_USAGE


class Misplaced(CplError, ValueError):
    """A lifeline's place that is malformed, or not on the cluster (``lifeline``'s, if
    known); the message says why (exit 2: ``--place`` is the usage at fault)."""

    exit_code = EXIT_USAGE

    def __init__(self, message: str, lifeline: str | None = None):
        super().__init__(message)
        self.lifeline = lifeline


def ray_installed() -> bool:
    """Found, not imported: what Ray reads of the environment once, at its import, is set
    first (``own_token``)."""
    try:
        return importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        return False


@contextlib.contextmanager
def ray_session(address: str):
    """Connected to (or running) the cluster ``address`` names (``auto``, ``local`` or
    ``HOST:PORT``) for the block; yields the address the supervisor listens on: the
    driver's node address (127.0.0.1 for a Ray started here).  ``ClusterError`` if the
    address is none of these, or Ray cannot be started or joined."""
    target = _target(address)
    if target is None:
        own_token()
    import ray
    if target is None or _loopback(target.rsplit(":", 1)[0]):
        stay_on_loopback()
    quiet = {"logging_level": logging.ERROR, "log_to_driver": True}
    folder = session_name() if target is None else None  # its session: logs, sockets;
    reaper = None  # gone with the run, and no /tmp/ray/ray_current_cluster left behind
    try:
        try:
            if target is None:
                reaper = Reaper(folder)  # first: a kill -9 from now on leaves no Ray behind,
                os.mkdir(folder, 0o700)  # nor the folder (made after the reaper knows it)
            with sigterm_as_ctrl_c():
                if target is None:
                    ray.init(address="local", _node_ip_address="127.0.0.1",
                             include_dashboard=False, _temp_dir=os.path.join(folder, "r"),
                             **quiet)
                else:
                    ray.init(address=target, **quiet)
        except Exception as error:  # noqa: BLE001 - Ray raises many kinds for one cause
            with contextlib.suppress(Exception):
                ray.shutdown()
            said = str(error).strip().splitlines()
            raise ClusterError(f"cannot start or join Ray: "
                               f"{said[0][:300] if said else type(error).__name__}") from None
        try:
            yield ray.util.get_node_ip_address()
        finally:
            ray.shutdown()
    finally:
        if reaper is not None:
            reaper.close()  # it kills what Ray left (nothing, mostly) and removes the folder
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def sigterm_as_ctrl_c():
    """While Ray starts, SIGTERM is a Ctrl-C (``KeyboardInterrupt``: ``cpl run`` ends, 130,
    and Ray with it).  ``ray.init`` sets a SIGTERM handler of its own that raises
    ``SystemExit`` wherever the main thread is, and one raised in a finaliser is lost:
    the run went on, a SIGTERM sent at its start unheeded.  Ray is kept from setting it
    (its setter, private, is looked up at each call: replaced for the block)."""
    import ray._private.utils as utils  # private, and so kept in this one place
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    setter = utils.set_sigterm_handler
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    utils.set_sigterm_handler = lambda handler: None
    try:
        yield
    finally:
        utils.set_sigterm_handler = setter
        signal.signal(signal.SIGTERM, previous)


def own_token() -> None:
    """A Ray started here asks for token authentication by default and writes its token to
    ``~/.ray/auth_token``, failing where HOME is read-only: its token is made here instead,
    for this run alone, and handed to Ray's processes in their environment.  An explicit
    ``RAY_AUTH_MODE``, ``RAY_AUTH_TOKEN`` or ``RAY_AUTH_TOKEN_PATH`` is the user's choice:
    kept."""
    if not any(os.environ.get(name) for name in
               ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH")):
        os.environ["RAY_AUTH_MODE"] = "token"
        os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(32)
        if "ray._raylet" in sys.modules:  # read already (by a caller of ours): read again,
            from ray._raylet import Config  # as Ray does when it turns the mode on itself
            Config.initialize("")


def stay_on_loopback() -> None:
    """Ray "resolves" 127.0.0.1 to this machine's outward address unless
    ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` was set before ray was imported (it reads it
    once); a cluster on loopback must stay there: nothing of the run leaves 127.0.0.1."""
    import ray._private.ray_constants as constants  # private, and so kept in this one place
    constants.ENABLE_RAY_CLUSTER = False


def session_folder(prefix: str = RUN_FOLDER) -> str:
    """A new folder for a Ray started here (0700: Ray makes its own session folder, ``r``
    inside, open to all, 0777)."""
    folder = session_name(prefix)
    os.mkdir(folder, 0o700)
    return folder


def session_name(prefix: str = RUN_FOLDER) -> str:
    """A path no folder has yet, for a Ray started here: in the temp folder if its path is
    short enough for Ray's sockets (AF_UNIX paths hold 107 bytes; we add 22, Ray up to 64),
    else in /tmp.  Made by its user (0700), which fails should it exist."""
    base = tempfile.gettempdir()
    return os.path.join(base if len(base) <= 18 else "/tmp", prefix + secrets.token_hex(4))


def _target(address: str) -> str | None:
    """The cluster to join, ``HOST:PORT``; None: start one here."""
    if address == "local":
        return None
    if address != "auto":
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ClusterError("give auto, local or HOST:PORT")
        return address
    named = os.environ.get("RAY_ADDRESS", "").strip()
    if named and named not in ("auto", "local"):
        return named
    with contextlib.suppress(OSError, ValueError):
        with open(_CURRENT, encoding="utf-8") as handle:
            found = handle.read(300).strip()
        host, _, port = found.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=1):
            return found
    return None


def _loopback(host: str) -> bool:
    try:
        return host == "localhost" or ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def place_of(entry) -> Place:
    """A lifeline's :class:`Place` from its JSON form, every part checked (``Misplaced``)."""
    if not isinstance(entry, dict) or len(entry) != 1 or \
            next(iter(entry)) not in ("resources", "node"):
        raise Misplaced('give {"resources": ["NAME", ...]} or {"node": "ID or ADDRESS"}')
    if "node" in entry:
        node = entry["node"]
        if not isinstance(node, str) or not 0 < len(node) <= 200 or not node.isprintable():
            raise Misplaced("the node is a node id or address (text)")
        return Place(node=node)
    resources = entry["resources"]
    if isinstance(resources, list):
        resources = {item: TOKEN for item in resources} \
            if all(isinstance(item, str) for item in resources) else None
    if not isinstance(resources, dict) or not resources:
        raise Misplaced("the resources are a list of names or a map of names to amounts")
    for resource, amount in resources.items():
        if not resource or not resource.isprintable() or len(resource) > 200:
            raise Misplaced(f"{resource!r} is no resource name")
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or \
                not 0 < amount < math.inf:
            raise Misplaced(f"the amount of {resource!r} must be a number > 0")
    return Place(resources=dict(resources))


def on_cluster(places: dict[str, Place]) -> dict[str, Place]:
    """The places (lifeline -> :class:`Place`) checked against the cluster joined, now:
    every resource some node has, every node alive and named once (an address becomes
    that node's id); else ``Misplaced`` naming the lifeline."""
    import ray
    totals, nodes = ray.cluster_resources(), ray.nodes()
    checked = {}
    for name, place in places.items():
        for resource in place.resources or {}:
            if resource not in totals:
                raise Misplaced(f"no node of the cluster has the resource {resource!r}", name)
        if place.node is not None:
            try:
                place = Place(node=node_of(place, nodes))
            except ValueError as error:
                raise Misplaced(str(error), name) from None
        checked[name] = place
    return checked
