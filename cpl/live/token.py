"""The token a message carries between agents: the sender's monitor metadata, named.

Binary form, one msgpack array::

    [VERSION, system, sender, receiver, seq, label, metadata, signature]
    [SIGNED, system, sender, receiver, seq, label, metadata, signature, proofs]

``system`` is the 8 bytes of the system's fingerprint, ``seq`` the sender's
message number (the message id is ``f"{sender}:{seq}"``), ``metadata`` what
:class:`cpl.monitor.Metadata` encodes (the runtime's wire metadata, the same
codec), ``signature`` an HMAC-SHA256 of the rest (16 bytes) when the system
has a secret, else empty.  A system with per-lifeline keys (:mod:`.keys`)
makes the second form: ``signature`` is the sender's Ed25519 signature of
its own record, ``proofs`` one per carried lifeline, ``None`` or
``[signature, digest]`` of that lifeline's own record.  The text form, for
headers and JSON, is ``cpl1.`` + unpadded base64url of those bytes.

Everything is checked before a monitor sees it (:func:`read`), and a token
is refused whole: its size and layout, the system, the addressee, the
signature, then (by the agent, which knows what it has seen) replays and
the clock.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import hmac

import attrs
import msgpack

from ..lang import UNSET
from ..monitor import Metadata, MetadataError
from ..trace import value_problem
from .errors import TokenRefused

VERSION = 1
SIGNED = 2  # the version of a token signed with per-lifeline keys
PREFIX = "cpl1."
MAX_TOKEN = 12 * 1024  # bytes of the binary form
MAX_TOKEN_TEXT = len(PREFIX) + (MAX_TOKEN * 4 + 2) // 3  # fits any HTTP server's header limit
_FIELDS = 8  # a VERSION token's, one more for a SIGNED token's proofs
READ_LATELY = 64  # tokens a system remembers having read and checked, for the receive after
_SIGNATURE = 16
_BEYOND = 2**64  # no msgpack integer (a decoded token's clock or seq) reaches it


@attrs.frozen
class Token:
    """What ``Agent.send`` returns: pass it on (``text`` or ``encode()``) with the message."""

    system: bytes
    sender: str
    receiver: str
    seq: int
    label: str
    metadata: Metadata
    signature: bytes = b""
    proofs: tuple | None = None  # with per-lifeline keys: (signature, digest) or None each

    @property
    def msg(self) -> str:
        """The message's id in the trace."""
        return f"{self.sender}:{self.seq}"

    def encode(self) -> bytes:
        return self._encoded

    @property
    def text(self) -> str:
        return self._text

    def __str__(self) -> str:
        return self._text

    @functools.cached_property
    def _encoded(self) -> bytes:
        tail = [self.signature] if self.proofs is None else \
            [self.signature, [None if p is None else list(p) for p in self.proofs]]
        return msgpack.packb(self.fields() + tail, use_bin_type=True)

    @functools.cached_property
    def _text(self) -> str:
        return PREFIX + base64.urlsafe_b64encode(self._encoded).rstrip(b"=").decode("ascii")

    def fields(self) -> list:
        """Every field but the signature, as the binary form lists them: what is signed."""
        return [VERSION if self.proofs is None else SIGNED, self.system, self.sender,
                self.receiver, self.seq, self.label, self.metadata.encode()]

    @functools.cached_property
    def digest(self) -> bytes:
        """16 bytes that name this send (every field but the signatures): what its
        sender's signed record says it was made at."""
        return hashlib.sha256(msgpack.packb(self.fields(), use_bin_type=True)).digest()[:16]


def sign(fields: list, secret: bytes | None) -> bytes:
    """The signature of a token's other fields under ``secret`` (none without one)."""
    if secret is None:
        return b""
    body = msgpack.packb(fields, use_bin_type=True)
    return hmac.new(secret, body, hashlib.sha256).digest()[:_SIGNATURE]


def read(token, system) -> Token:
    """The ``Token`` that ``token`` (a ``Token``, its text or its bytes) is, checked against
    ``system``: anything else is ``TokenRefused``."""
    if isinstance(token, Token):  # made or built in this process: checked as a decoded one
        if system.read_lately.get(id(token)) is token:
            return token  # this system read it just now (an adapter that replies to its sender)
        _check_system(token.system, system)
        _check_built(token, system)
        if system.secret is None and system.signing is None:
            return token
        data = token.encode()  # typed now, so it encodes; its signature is checked below
    elif isinstance(token, str):
        data = _from_text(token)
    elif isinstance(token, (bytes, bytearray, memoryview)):
        data = bytes(token)
    else:
        raise TokenRefused("malformed", f"a token is a Token, its text or its bytes, not "
                           f"{type(token).__name__}")
    token = _decode(data, system)
    remembered = system.read_lately
    remembered[id(token)] = token  # kept, so the id names this token while it is there
    if len(remembered) > READ_LATELY:
        del remembered[next(iter(remembered))]
    return token


def _from_text(text: str) -> bytes:
    if len(text) > MAX_TOKEN_TEXT:
        raise TokenRefused("oversized", f"{len(text):,} characters (at most {MAX_TOKEN_TEXT:,})")
    text = text.strip()
    if not text.startswith(PREFIX):
        raise TokenRefused("malformed", f"a token's text starts with {PREFIX!r}")
    body = text[len(PREFIX):]
    try:
        return base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
    except (binascii.Error, ValueError):
        raise TokenRefused("malformed", "the text after cpl1. is not base64url "
                           "(cut short, or not a token)") from None


def _decode(data: bytes, system) -> Token:
    if len(data) > MAX_TOKEN:
        raise TokenRefused("oversized", f"{len(data):,} bytes (at most {MAX_TOKEN:,})")
    try:
        fields = msgpack.unpackb(data, raw=False, use_list=True, strict_map_key=True)
    except Exception:  # msgpack raises many unrelated types on hostile bytes
        raise TokenRefused("malformed", "not a token's msgpack array (cut short, or not a "
                           "token)") from None
    if not (isinstance(fields, list) and len(fields) in (_FIELDS, _FIELDS + 1)):
        raise TokenRefused("malformed", f"a token is an array of {_FIELDS} fields "
                           f"({_FIELDS + 1} signed with per-lifeline keys)")
    version, fingerprint, sender, receiver, seq, label, metadata, signature = fields[:_FIELDS]
    if (version, len(fields)) not in ((VERSION, _FIELDS), (SIGNED, _FIELDS + 1)):
        raise TokenRefused("malformed", f"token version {version!r:.20} of {len(fields)} "
                           f"fields, this library reads {VERSION} (of {_FIELDS}) and "
                           f"{SIGNED} (of {_FIELDS + 1})")
    proofs = _proofs(fields[-1]) if version == SIGNED else None
    if not (isinstance(fingerprint, bytes) and isinstance(sender, str)
            and isinstance(receiver, str) and type(seq) is int and seq > 0
            and isinstance(label, str) and isinstance(metadata, bytes)
            and isinstance(signature, bytes)):
        raise TokenRefused("malformed", "a token field has the wrong type")
    _check_system(fingerprint, system)
    _check_kind(proofs, system)
    if system.secret is not None and not hmac.compare_digest(
            signature, sign(fields[:-1], system.secret)):
        raise TokenRefused("forged", "its signature does not match this system's secret "
                           "(signed with another secret, changed on the way, or made by "
                           "hand)" if signature else "it is unsigned, and this system "
                           "signs every token")
    try:
        decoded = Metadata.decode(metadata, system.shape)
    except MetadataError as error:
        raise TokenRefused("malformed", str(error)) from None
    for view in decoded.vars:
        for value in view:
            problem = None if value is UNSET else value_problem(value, recorded=True)
            if problem:
                raise TokenRefused("malformed", f"a variable view {problem}")
    token = Token(fingerprint, sender, receiver, seq, label, decoded, signature, proofs)
    if system.signing is not None:
        system.signing.check(token)
    return token


def _proofs(proofs) -> tuple:
    """A signed token's proofs, each ``None`` or ``(signature, digest)`` of right sizes."""
    if not _proofs_shaped(proofs, list):
        raise TokenRefused("malformed", "a signed token's proofs are a list of [64-byte "
                           "signature, 16-byte digest] or nil")
    return tuple(None if p is None else tuple(p) for p in proofs)


def _proofs_shaped(proofs, kind) -> bool:
    return type(proofs) is kind and len(proofs) <= MAX_TOKEN // 80 and all(
        p is None or type(p) is kind and len(p) == 2
        and type(p[0]) is bytes and len(p[0]) == 64
        and type(p[1]) is bytes and len(p[1]) == 16 for p in proofs)


def _check_kind(proofs, system) -> None:
    """A token signed as the system signs: with its per-lifeline keys, or not."""
    if system.signing is None and proofs is not None:
        raise TokenRefused("foreign", "signed with per-lifeline keys, which this system has "
                           "not (give every process's System keys=, with the same public keys)")
    if system.signing is not None and proofs is None:
        raise TokenRefused("forged", "it is not signed by its sender's key, and this system "
                           "takes only tokens so signed (keys=)")


def _check_system(fingerprint: bytes, system) -> None:
    if fingerprint != system.signature:
        if not isinstance(fingerprint, bytes):  # only a Token built by hand
            raise TokenRefused("malformed", "a token field has the wrong type")
        raise TokenRefused("foreign", f"made by another system ({fingerprint.hex()[:16]!r}, "
                           f"this one is {system.fingerprint!r}): its lifelines, guards or "
                           f"variables differ")


def _check_built(token: Token, system) -> None:
    """A ``Token`` built in this process rather than decoded: typed and shaped as a decoded
    one is, or the monitor would read past a view, or half-take it and then fail."""
    metadata = token.metadata
    if not (isinstance(token.sender, str) and isinstance(token.receiver, str)
            and type(token.seq) is int and 0 < token.seq < _BEYOND
            and isinstance(token.label, str) and isinstance(token.signature, bytes)
            and (token.proofs is None or _proofs_shaped(token.proofs, tuple))
            and isinstance(metadata, Metadata)
            and _shaped(metadata, system.shape)):
        raise TokenRefused("malformed", "a token field has the wrong type")


def _shaped(metadata: Metadata, shape) -> bool:
    """Whether ``metadata`` has the clock, views and variable views ``Metadata.decode``
    gives for ``shape``, each value one a trace holds."""
    vc, views, variables = metadata
    if not (type(vc) is type(views) is type(variables) is tuple
            and len(vc) == len(views) == len(variables) == len(shape.bits)):
        return False
    for clock, view, values, bits, count in zip(vc, views, variables, shape.bits,
                                                shape.variables):
        if not (type(clock) is int and 0 <= clock < _BEYOND and type(view) is int and view >= 0
                and not view >> bits and type(values) is tuple and len(values) == count):
            return False
        for value in values:
            if value is not UNSET and value_problem(value, (list, tuple), recorded=True):
                return False
    return True
