"""The one frame layout on the wire between lifeline processes, and its checks.

Every message — user data and projection control alike — is one ZeroMQ frame
holding a msgpack array::

    [VERSION, run, sender, seq, kind, id, path, values, label, outcome, metadata]

``run`` names the run (a frame from another run is refused), ``seq`` is the
sender's message number (``f"{sender}:{seq}"`` is the message's id in the
trace), ``kind``/``id``/``path`` its key (``"m"`` and a send statement's id or
``"c"`` and a decision's id, and the loop iterations), ``values`` what the
receive assigns, ``label`` and ``outcome`` (control messages) what the trace
shows, and ``metadata`` the sender's monitor metadata as
:class:`cpl.monitor.metadata.Metadata` encodes it.

A receiver checks everything before the Runner sees a frame
(:class:`Inbound`): the size, the layout and types, the version and run, a
sender it knows that may send this message to it, a sequence number it has
not seen, values of the variables that message assigns (of their declared
types) and nothing else, and a clock that neither goes backwards nor claims
more of the receiver's own events than it has taken.  A frame that fails is
counted by reason and dropped; nothing in it reaches the run.
"""

from __future__ import annotations

import collections
from typing import Annotated, Any, Optional

import msgpack
import msgspec

from choreo.authoring import SymbolSet, conforms, type_name
from choreo.execution import Message
from cpl.monitor import Metadata, MetadataError
from cpl.trace import value_problem
from cpl.lang import UNSET

VERSION = 1
MAX_FRAME = 1 << 20  # bytes; also the receiving socket's ZMQ_MAXMSGSIZE
MAX_PARTS = 64  # frames in one ZeroMQ message (runtime.lifeline.outgoing sends at most this many)
_FIELDS = 11
_PLAIN = frozenset((int, str, bool, type(None)))  # values of a frame that need no walk
# The layout's types, checked in C as the frame decodes (the fast path of Inbound.check):
# msgspec's int is no bool, its str valid UTF-8, its bytes no str, the array exactly 11 long
_TYPED = msgspec.msgpack.Decoder(tuple[int, str, str, int, str, int,
                                       tuple[Annotated[int, msgspec.Meta(ge=0)], ...],
                                       dict[str, Any], str, Optional[bool], bytes]).decode
_new = tuple.__new__  # a Message without NamedTuple's keyword-parsing __new__


# msgspec's encoder: the same bytes as msgpack's Packer(use_bin_type=True) for every
# value a run records (tests/test_runtime_wire.py), in half the time (bench/README.md)
_pack = msgspec.msgpack.Encoder().encode
_NOTHING = Metadata((), (), ()).encode()  # the metadata when no lifeline is carried


class FrameRejected(ValueError):
    """A frame that must not reach the run; ``reason`` is a short tag for counting."""

    def __init__(self, reason: str, detail: str):
        super().__init__(f"{reason}: {detail}")
        self.reason = reason


class FrameTooLarge(ValueError):
    """A message whose frame is larger than any receiver takes (``MAX_FRAME``)."""


def encode(run: str, message, seq: int) -> bytes:
    """The frame of a ``choreo.execution.runner.Message`` sent as the sender's ``seq``-th message.

    A frame over ``MAX_FRAME`` is ``FrameTooLarge`` here, at the sender: the receiver's
    ZMQ_MAXMSGSIZE would drop it with the connection that carried it, silently, and the
    run would wait for that message until its ``--timeout``."""
    kind, ident, path = message.key
    metadata = message.metadata
    frame = _pack((VERSION, run, message.sender, seq, kind, ident, path, message.values,
                   message.label, message.outcome,
                   metadata.encode() if metadata.vc or metadata.views or metadata.vars
                   else _NOTHING))
    if len(frame) > MAX_FRAME:
        raise FrameTooLarge(f"{message.sender} cannot send {message.label or 'a message'!r} to "
                            f"{message.receiver}: its frame is {len(frame)} bytes, the most a "
                            f"lifeline takes is {MAX_FRAME} (1 MiB)")
    return frame


class Inbound:
    """The checks one receiving lifeline applies to every frame, and what it refused.

    ``expects`` maps a message key's ``(kind, id)`` to ``(sender, names)``: who may
    send it to this lifeline and which variables it assigns (from the projection).
    """

    def __init__(self, run: str, me: str, lifelines, expects: dict, carried, shape=None,
                 variables=None):
        self.run, self.me = run, me
        self.lifelines = tuple(lifelines)
        self.index = {name: i for i, name in enumerate(self.lifelines)}
        self.expects = expects
        self.names = {key: frozenset(names) for key, (_, names) in expects.items()}
        # the lifelines whose clock entries the metadata carries, in its order
        # (``Program.carried``): a lifeline no guard reads has no entry
        self.carried = {name: i for i, name in enumerate(carried)}
        # how many clock entries the metadata carries, or its whole ``Shape``
        self.entries = shape if shape is not None else len(self.carried)
        self.variables = variables or {}  # name -> choreo.authoring.Var: what a value may be
        self.last_seq: dict[str, int] = {}
        self.last_clock: dict[str, int] = {}
        self.rejected: collections.Counter = collections.Counter()
        self._meta = (None, None)  # the latest frame's metadata: (bytes, Metadata), checked
        # (kind, id) -> (sender, names, control?) for the fast path: only where the
        # sender is a lifeline of the run other than me (else the exact path refuses)
        self._slots = {key: (sender, self.names[key], key[0] == "c")
                       for key, (sender, _) in expects.items()
                       if sender in self.index and sender != me}
        self._conforming: set = set()  # (name, type) pairs whose values fit the declaration

    def check(self, frame: bytes, taken: int, signer: str | None = None) -> Message:
        """The ``Message`` a valid frame carries to this lifeline, or ``FrameRejected``;
        ``taken`` is how many events this lifeline has taken (no sender can have seen more
        of them).

        ``signer`` is the lifeline CURVE authenticated as the frame's sender (the ZAP
        ``User-Id``), when there is one: a frame that claims another sender is an
        ``impostor``, refused before its sequence number or clock is recorded — checked
        after this method returned, an impostor would use up the numbers of the lifeline
        it claims to be, and that lifeline's own frames would then be refused."""
        try:
            return self._fast(frame, taken, signer) or self._check(frame, taken, signer)
        except FrameRejected as rejected:
            self.rejected[rejected.reason] += 1
            raise

    def _fast(self, frame: bytes, taken: int, signer: str | None) -> Message | None:
        """The checks of ``_check`` for the usual frame, its types checked as it decodes;
        None (``_check`` decides, with its reasons) for anything else.  Returns a message
        only where ``_check`` would return the same one; past the checks of the layout,
        sender, numbers and values, it refuses as ``_check`` would (the same code)."""
        if len(frame) > MAX_FRAME:
            return None
        try:
            version, run, sender, seq, kind, ident, path, values, label, outcome, meta \
                = _TYPED(frame)
        except Exception:  # noqa: BLE001 - any failure: the exact path says why
            return None
        slot = self._slots.get((kind, ident))
        if version != VERSION or run != self.run or slot is None or slot[0] != sender \
                or (signer is not None and signer != sender) \
                or seq <= self.last_seq.get(sender, 0) or values.keys() != slot[1] \
                or (outcome is None) is slot[2]:
            return None
        if values:
            conforming = self._conforming
            for name, value in values.items():
                if (name, type(value)) not in conforming and not self._conforms(name, value):
                    return None
        metadata = self._meta[1] if meta == self._meta[0] else self._metadata(meta)
        self._check_clock(sender, metadata.vc, taken)
        self.last_seq[sender] = seq
        return _new(Message, ((kind, ident, path), sender, self.me, values, metadata, label,
                              outcome, f"{sender}:{seq}"))

    def _conforms(self, name: str, value) -> bool:
        """A plain value of its declared type (remembered by type, where the type decides)."""
        if type(value) not in _PLAIN:
            return False  # a walk first: the exact path
        declared = self.variables.get(name)
        if declared is None or conforms(value, declared.type):
            if not isinstance(declared.type if declared else None, SymbolSet):
                self._conforming.add((name, type(value)))
            return True
        return False

    def _check(self, frame: bytes, taken: int, signer: str | None) -> Message:
        if len(frame) > MAX_FRAME:
            raise FrameRejected("oversized", f"{len(frame)} bytes (at most {MAX_FRAME})")
        try:
            fields = msgpack.unpackb(frame, raw=False, use_list=True, strict_map_key=True)
        except Exception as error:  # msgpack raises many unrelated types
            raise FrameRejected("undecodable", f"not a msgpack frame ({error})") from None
        if not isinstance(fields, list) or len(fields) != _FIELDS:
            raise FrameRejected("layout", f"expected an array of {_FIELDS} fields")
        version, run, sender, seq, kind, ident, path, values, label, outcome, meta = fields
        if version != VERSION:
            raise FrameRejected("version", f"version {version!r}, this run speaks {VERSION}")
        if run != self.run:
            raise FrameRejected("run", f"from run {run!r}, not this run")
        if not isinstance(sender, str) or sender not in self.index or sender == self.me:
            raise FrameRejected("sender", f"unknown sender {sender!r}")
        if signer is not None and signer != sender:
            raise FrameRejected("impostor", f"signed by {signer!r}, claims to be {sender!r}")
        if type(seq) is not int or seq <= self.last_seq.get(sender, 0):
            raise FrameRejected("replayed", f"sequence number {seq!r} from {sender} is not "
                                f"above {self.last_seq.get(sender, 0)}")
        # kind and id are checked before they are hashed: a list or a map there (msgpack
        # decodes both) made the lookup raise TypeError, which killed the receiving process
        expected = self.expects.get((kind, ident)) \
            if type(kind) is str and type(ident) is int else None
        if expected is None or expected[0] != sender:
            raise FrameRejected("unexpected", f"{sender} sends no message {kind!r} {ident!r} "
                                f"to {self.me}")
        if type(path) is not list or (path and not all(type(k) is int and k >= 0
                                                       for k in path)):
            raise FrameRejected("layout", f"loop path {path!r} is not a list of counts")
        if type(values) is not dict or values.keys() != self.names[kind, ident]:
            raise FrameRejected("values", f"values {_names(values)} instead of "
                                f"{list(expected[1])}")
        if values:
            self._check_values(values)
        if not isinstance(label, str) or (kind == "c") != isinstance(outcome, bool) \
                or (kind == "m" and outcome is not None):
            raise FrameRejected("layout", "label or outcome of the wrong type")
        if not isinstance(meta, bytes):
            raise FrameRejected("metadata", "metadata is not a byte string")
        # as the previous frame's (nothing carried, or no change): checked already
        metadata = self._meta[1] if meta == self._meta[0] else self._metadata(meta)
        self._check_clock(sender, metadata.vc, taken)
        self.last_seq[sender] = seq
        return Message((kind, ident, tuple(path)), sender, self.me, values, metadata, label,
                       outcome, f"{sender}:{seq}")

    def _metadata(self, meta: bytes) -> Metadata:
        """The checked ``Metadata`` of a frame's metadata bytes."""
        try:
            metadata = Metadata.decode(meta, self.entries)
        except MetadataError as error:
            raise FrameRejected("metadata", str(error)) from None
        for view in metadata.vars:  # values the receiver's guards read (@A.x): JSON too
            for value in view:
                problem = None if value is UNSET else value_problem(value)
                if problem:
                    raise FrameRejected("metadata", f"a variable view {problem}")
        self._meta = meta, metadata  # immutable: the next frame's may be the same
        return metadata

    def _check_values(self, values: dict) -> None:
        """JSON values (msgpack also decodes binary; its integers are 64-bit and its text
        valid UTF-8, so plain ones need no walk), each of its declared type."""
        for value in values.values():
            if type(value) not in _PLAIN:
                problem = value_problem(values)
                if problem:
                    raise FrameRejected("values", f"the values {problem}")
                break
        for name, value in values.items():
            declared = self.variables.get(name)
            if declared is not None and not conforms(value, declared.type):
                raise FrameRejected("values", f"{name} = {value!r:.60} is not "
                                    f"{type_name(declared.type)}")

    def _check_clock(self, sender: str, vc, taken: int) -> None:
        """The sender's own entry grows with every message; nobody saw more of my events
        than I took.  Only carried lifelines have entries: the sender's is checked if the
        sender is carried, mine if I am."""
        position = self.carried.get(sender)
        own = vc[position] if position is not None else None
        if own is not None and own <= self.last_clock.get(sender, 0):
            raise FrameRejected("clock", f"{sender}'s clock went back to {own}")
        mine = self.carried.get(self.me)
        if mine is not None and vc[mine] > taken:
            raise FrameRejected("clock", f"the clock claims {vc[mine]} events "
                                f"of {self.me}, which has taken {taken}")
        if own is not None:
            self.last_clock[sender] = own


def _names(values) -> str:
    return repr(sorted(map(str, values))[:8]) if isinstance(values, dict) else repr(type(values))
