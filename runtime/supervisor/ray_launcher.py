"""``cpl run --launcher ray``: each lifeline a Ray actor, on a cluster the user runs.

An actor runs the unchanged lifeline loop (:class:`runtime.lifeline.process.LifelineProcess`)
in one of its two threads; ZeroMQ + CURVE between actors, each inbox bound on its
node's address.  Ray's own traffic is not encrypted unless the cluster enables
TLS, so **secret keys never travel**: an actor makes its key pair where it runs,
and only the public key comes back (``where``); its connection carries every
lifeline's public key and the supervisor's, and no secret.

Death: every actor's ``serve`` call is an object ref; ``ray.wait`` on them
(``ended``, every tenth of a second) sees an actor die — its worker killed
with -9, ``ray.kill``, its node removed — within milliseconds, and the
``ActorDiedError`` says how.  The actors belong to the driver (``cpl run``):
killed in ``stop``/``close`` on every path, and by Ray itself if the driver
dies.  ``import ray`` only here, and lazily: ray is an optional extra.
"""

from __future__ import annotations

import os
import re
import secrets
import time

import attrs

from runtime.frames import Ticket, Keys, HELLO_TIMEOUT
from .launchers import Launcher, Unlaunched

TOKEN = 0.001  # of a custom resource a lifeline placed by name takes: many share a node
NAMESPACE = "cpl"  # the actors' Ray namespace; each is named cpl.RUN.LIFELINE (ray list actors)
_WAY = re.compile(r"^The actor (?:is dead|died) because (.+?)(?:\.(?:\s|$)|$)", re.M)


class CplLifeline:
    """One lifeline in a Ray worker (``ray::CplLifeline(NAME) run RUN`` in ``ps`` while it
    serves): its key pair made here, its loop in ``serve``."""

    def __init__(self):
        self._public, self._secret = Keys.pair()

    def where(self) -> tuple[str, str, str, int]:
        """The public key, this node's address (the inbox binds there), its id, our pid."""
        import ray
        return (self._public, ray.util.get_node_ip_address(),
                ray.get_runtime_context().get_node_id(), os.getpid())

    def serve(self, connection: str) -> int:
        """The lifeline loop, with the secret key that never left this process."""
        from runtime.lifeline import LifelineProcess
        c = Ticket.from_json(connection, "the supervisor's connection")
        _title(f"ray::CplLifeline({c.lifeline}) run {c.run}")
        if c.keys is not None:
            if c.keys.public != self._public:
                raise ValueError(f"the connection of {c.lifeline} holds another public key")
            c = attrs.evolve(c, keys=attrs.evolve(c.keys, secret=self._secret))
        return LifelineProcess(c).serve()


@attrs.frozen
class Place:
    """Where ``--place`` puts a lifeline: on a node with these custom ``resources`` (name ->
    amount), or on one ``node`` (its id, or its address if no other node shares it)."""

    resources: dict | None = None
    node: str | None = None


class RayActors(Launcher):
    """Every lifeline of the run as an actor of the Ray cluster the driver is connected
    to (:mod:`.ray_cluster`), placed by Ray's scheduler or by ``places``."""

    actor = CplLifeline  # the class each actor is made of (a bench's may record more)

    def __init__(self, lifelines, places: dict[str, Place] | None = None,
                 patience: float = HELLO_TIMEOUT):
        self.lifelines = tuple(lifelines)
        self.places_ = dict(places or {})
        self.patience = patience
        self.actors: dict = {}  # lifeline -> its actor handle
        self.found: dict[str, tuple] = {}  # lifeline -> where()
        self.serving: dict = {}  # object ref of serve() -> lifeline
        self.done: dict[str, int | None] = {}  # lifeline -> exit status (None: it died)
        self.ways: dict[str, str] = {}  # lifeline -> how it ended, when not by returning

    def public_keys(self) -> dict[str, str]:
        return {name: found[0] for name, found in self._spawn().items()}

    def _spawn(self) -> dict[str, tuple]:
        """Start every actor (once) and wait, at most ``patience`` seconds, for each to say
        where it runs; :class:`Unlaunched` if one died first or was not placed in time."""
        if self.actors:  # asked already (a second call after Unlaunched finds no more)
            return self.found
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
        remote = ray.remote(num_cpus=0, max_concurrency=2, max_restarts=0,
                            max_task_retries=0)(self.actor)
        asked, run = {}, secrets.token_hex(4)
        for name in self.lifelines:
            place = self.places_.get(name, Place())
            options = {"name": f"cpl.{run}.{name}", "namespace": NAMESPACE}
            if place.resources:
                options["resources"] = dict(place.resources)
            if place.node:
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(place.node,
                                                                                soft=False)
            self.actors[name] = remote.options(**options).remote()
            asked[self.actors[name].where.remote()] = name
        deadline = time.monotonic() + self.patience
        waiting = list(asked)
        dead = {}
        while waiting and time.monotonic() < deadline:
            ready, waiting = ray.wait(waiting, num_returns=len(waiting),
                                      timeout=min(0.2, max(0.0, deadline - time.monotonic())))
            for ref in ready:
                try:
                    self.found[asked[ref]] = tuple(ray.get(ref))
                except ray.exceptions.RayError as error:
                    dead[asked[ref]] = _way(error)
            if dead:
                raise Unlaunched(dead=dead)
        if waiting:
            raise Unlaunched([asked[ref] for ref in waiting], self.patience)
        return self.found

    def launch(self, drafts: dict[str, Ticket]) -> dict[str, Ticket]:
        """Each draft bound on its actor's node, its log shipped, no secret in it."""
        found = self._spawn()
        placed = {}
        for name, draft in drafts.items():
            public, address = found[name][:2]
            keys = draft.keys and attrs.evolve(draft.keys, public=public, secret="")
            placed[name] = attrs.evolve(draft, host=address, log="", keys=keys)
            self.serving[self.actors[name].serve.remote(placed[name].to_json())] = name
        return placed

    def ended(self) -> dict[str, int | None]:
        if self.serving:
            import ray
            ready, _ = ray.wait(list(self.serving), num_returns=len(self.serving), timeout=0)
            for ref in ready:
                name = self.serving.pop(ref)
                try:
                    self.done[name] = ray.get(ref)
                except ray.exceptions.RayActorError as error:
                    self.done[name], self.ways[name] = None, _way(error)
                except ray.exceptions.RayError as error:
                    self.done[name] = 1
                    self.ways[name] = f"its actor raised {_first_line(error)}"
        return dict(self.done)

    def why(self, name: str) -> str | None:
        return self.ways.get(name)

    def places(self) -> dict[str, dict]:
        return {name: {"node": node, "address": address, "pid": pid}
                for name, (_, address, node, pid) in self.found.items()}

    def alive(self, name: str) -> bool | None:
        """An actor Ray has not reported dead is there (Ray says within milliseconds)."""
        return name in self.actors and name not in self.ended()

    def stop(self) -> None:
        """Kill every actor now (its log lines went to the supervisor as they came)."""
        import ray
        for actor in self.actors.values():
            try:
                ray.kill(actor, no_restart=True)
            except Exception:  # noqa: BLE001 - dead already, or Ray gone: nothing to end
                pass
        self.serving.clear()

    def close(self) -> None:
        if self.actors:
            self.stop()
            self.actors.clear()


def _title(title: str) -> None:
    """Name the lifeline in ``ps`` for as long as it runs: Ray titles every actor's worker
    after the method it runs (``ray::CplLifeline.serve``, the same for all), and puts its
    own title back when ``serve`` returns.  Ray's own setter, the one it uses itself."""
    try:
        from ray._raylet import setproctitle  # private: kept in this one place
        setproctitle(title)
    except (ImportError, AttributeError):  # another Ray: its title stays
        pass


def _way(error) -> str:
    """How an actor died, in Ray's words: "its actor died because it was killed by
    `ray.kill`", "... because its worker process has died", "... its node has died"."""
    found = _WAY.search(str(error))
    pid = re.search(r"\bpid: (\d+)", str(error))
    return (f"its actor died because {found.group(1) if found else 'Ray lost it'}"
            + (f" (worker pid {pid.group(1)})" if pid else ""))


def _first_line(error) -> str:
    text = str(error).strip().splitlines()
    return text[-1][:200] if text else type(error).__name__


def node_of(place: Place, nodes: list[dict]) -> str | None:
    """The node id ``place.node`` names among Ray's alive ``nodes`` (``ray.nodes()``), or a
    ValueError saying why none (unknown, or an address several nodes share)."""
    wanted = place.node
    alive = [node for node in nodes if node.get("Alive")]
    by_id = [node["NodeID"] for node in alive if node.get("NodeID") == wanted]
    if by_id:
        return by_id[0]
    by_address = [node["NodeID"] for node in alive if node.get("NodeManagerAddress") == wanted]
    if len(by_address) == 1:
        return by_address[0]
    if by_address:
        raise ValueError(f"{len(by_address)} nodes have the address {wanted}: give a node id "
                         f"({', '.join(by_address)})")
    raise ValueError(f"no alive node of the cluster is {wanted!r} (its nodes: "
                     f"{', '.join(str(n.get('NodeManagerAddress')) for n in alive) or 'none'})")

