"""What a lifeline process needs to join a run: its ticket.

The supervisor writes one :class:`Ticket` per lifeline: the run id, where the
supervisor listens, where to bind, the choreography, its inputs and the
fingerprint of that plan, the event log path, and — unless ``--insecure`` —
the lifeline's own CURVE key pair, the supervisor's public key and every
lifeline's public key.  A local child reads it from its standard input (a
pipe nobody else can read); a lifeline on another host reads it from a
connection file only its owner can read, as Jupyter kernels do.  Secret keys
are never on a command line or in the environment.
"""

from __future__ import annotations

import json
import os

import attrs

from cpl.errors import EXIT_USAGE, CplError

from .curve import Keys

_LONGEST = 16 << 20  # characters of a connection file: keys and addresses, a few kB a lifeline


class JoinError(CplError):
    """A connection file or stdin blob that cannot be used (exit 2)."""

    exit_code = EXIT_USAGE

    def for_cli(self, command: str) -> str:
        return f"error: {self}"


@attrs.frozen
class Ticket:
    """A lifeline's ticket to one run: whom to join, what to load and the keys to do it with;
    read from standard input or from a host's connection file."""

    run: str
    lifeline: str
    supervisor: str  # tcp://HOST:PORT of the supervisor's control socket
    host: str  # the address this lifeline binds its inbox on
    choreography: str  # path of the CHOREO.py
    choreography_name: str | None  # which choreography in that file (--name)
    inputs: dict = attrs.field(eq=False)
    seed: int
    # of the plan the supervisor loaded (choreo.execution.fingerprint): ours must match
    fingerprint: str
    log: str  # this lifeline's event log (JSON Lines, one event per line); "": shipped
    keys: Keys | None  # None: --insecure

    def to_json(self) -> str:
        return json.dumps(attrs.asdict(self))

    @classmethod
    def from_json(cls, text: str, origin: str = "connection") -> "Ticket":
        try:
            data = json.loads(text)
            keys = data.pop("keys")
            ticket = cls(**data, keys=Keys(**keys) if keys is not None else None)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            raise JoinError(f"{origin}: not a cpl connection ({error})") from None
        for field in ("run", "lifeline", "supervisor", "host", "choreography", "fingerprint",
                      "log"):
            if not isinstance(getattr(ticket, field), str):
                raise JoinError(f"{origin}: {field!r} must be text")
        return ticket

    @classmethod
    def read(cls, path: str, lifeline: str) -> "Ticket":
        """``lifeline``'s connection from a host's connection file (``write_connection_file``)."""
        try:
            if os.path.exists(path) and not os.path.isfile(path):  # a FIFO waits, /dev/zero
                raise JoinError(f"{path}: a connection file is a regular file; this is not")
            if os.stat(path).st_mode & 0o077:
                raise JoinError(f"{path}: a connection file holds secret keys and must be "
                                f"readable by its owner only (chmod 600 {path})")
            with open(path, encoding="utf-8") as handle:
                text = handle.read(_LONGEST + 1)
            if len(text) > _LONGEST:
                raise JoinError(f"{path}: longer than a connection file can be "
                                f"({_LONGEST >> 20} MiB)")
            data = json.loads(text)
        except OSError as error:
            raise JoinError(f"{path}: cannot read the connection file: {error.strerror}") from None
        except ValueError as error:
            raise JoinError(f"{path}: not a cpl connection file ({error})") from None
        entries = data.get("lifelines") if isinstance(data, dict) else None
        if not isinstance(entries, dict) or lifeline not in entries:
            known = ", ".join(entries) if isinstance(entries, dict) else "none"
            raise JoinError(f"{path}: no connection for lifeline {lifeline!r} (it has {known})")
        return cls.from_json(json.dumps(entries[lifeline]), path)


def write_connection_file(path: str, tickets) -> None:
    """One host's connection file, readable by its owner only (created with mode 0600)."""
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        json.dump({"lifelines": {c.lifeline: json.loads(c.to_json()) for c in tickets}},
                  handle)
