"""The token a message carries between agents: the sender's monitor metadata, named.

Binary form, one msgpack array::

    [VERSION, system, sender, receiver, seq, label, metadata, signature]

``system`` is the 8 bytes of the system's fingerprint, ``seq`` the sender's
message number (the message id is ``f"{sender}:{seq}"``), ``metadata`` what
:class:`cpl.monitor.Metadata` encodes (the runtime's wire metadata, the same
codec), ``signature`` an HMAC-SHA256 of the rest (16 bytes) when the system
has a secret, else empty.  The text form, for headers and JSON, is
``cpl1.`` + unpadded base64url of those bytes.

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
PREFIX = "cpl1."
MAX_TOKEN = 12 * 1024  # bytes of the binary form
MAX_TOKEN_TEXT = len(PREFIX) + (MAX_TOKEN * 4 + 2) // 3  # fits any HTTP server's header limit
_FIELDS = 8
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
        return msgpack.packb(self.fields() + [self.signature], use_bin_type=True)

    @functools.cached_property
    def _text(self) -> str:
        return PREFIX + base64.urlsafe_b64encode(self._encoded).rstrip(b"=").decode("ascii")

    def fields(self) -> list:
        """Every field but the signature, as the binary form lists them: what is signed."""
        return [VERSION, self.system, self.sender, self.receiver, self.seq, self.label,
                self.metadata.encode()]


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
        if system.secret is None:
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
    if not (isinstance(fields, list) and len(fields) == _FIELDS):
        raise TokenRefused("malformed", f"a token is an array of {_FIELDS} fields")
    version, fingerprint, sender, receiver, seq, label, metadata, signature = fields
    if version != VERSION:
        raise TokenRefused("malformed", f"token version {version!r:.20}, this library reads "
                           f"{VERSION}")
    if not (isinstance(fingerprint, bytes) and isinstance(sender, str)
            and isinstance(receiver, str) and type(seq) is int and seq > 0
            and isinstance(label, str) and isinstance(metadata, bytes)
            and isinstance(signature, bytes)):
        raise TokenRefused("malformed", "a token field has the wrong type")
    _check_system(fingerprint, system)
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
    return Token(fingerprint, sender, receiver, seq, label, decoded, signature)


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
