"""Per-lifeline keys: each lifeline signs its own state, so no peer can speak for it.

With a shared ``secret`` every process holds the one key that signs tokens:
any of them can sign a token "from" another lifeline, or relay state of a
third lifeline that it made up.  With a :class:`KeyRing` each lifeline has
its own Ed25519 key pair; its private key stays in the process that runs it,
and every process knows every lifeline's public key.

At each send a lifeline signs one *record*: its own clock entry, view and
variable view (what ``@B(…)`` and ``@B.x`` read of it; nothing when no guard
reads it) and a 16-byte digest of the token it sends (system, receiver,
message number, label, all the metadata).  That signature is the token's.  A
later token that relays this entry carries the signature and the digest
verbatim (a *proof*, 80 bytes), so every receiver checks every entry against
the key of the lifeline it describes: a relay cannot invent another
lifeline's state, and a message number or a clock entry is only ever one
its own lifeline signed.

``cryptography`` is imported when a ring is first used, not before: a system
without keys never needs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from typing import Iterable, Mapping

import attrs
import msgpack

from ..monitor import Metadata
from .errors import LiveError, SigningUnavailable, TokenRefused
from .token import MAX_TOKEN

PUBLIC_FILE = "public.json"
PUBLIC_FORMAT = "cpl-keys/1"
PRIVATE_FORMAT = "cpl-key/1"
RECORD = "cpl-record/1"  # the first item of every signed record: a signature means nothing else
KEY_BYTES = 32
SIGNATURE_BYTES = 64
DIGEST_BYTES = 16
PROOF_BYTES = SIGNATURE_BYTES + DIGEST_BYTES + 5  # and msgpack's headers
VERIFIED_LATELY = 1024  # proofs a system remembers having verified (relays repeat them)
_SAFE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


@attrs.frozen
class KeyRing:
    """Every lifeline's public key (32 raw bytes), and the private keys of the lifelines
    this process runs: ``KeyRing.generate`` makes a whole ring once, ``save`` writes it,
    ``KeyRing.load(folder, "Committer")`` is what the Committer's process reads."""

    public: Mapping[str, bytes] = attrs.field(converter=lambda m: _mapping(m, "public"))
    private: Mapping[str, bytes] = attrs.field(  # never printed, in a log or a traceback
        factory=dict, converter=lambda m: _mapping(m, "private"),
        repr=lambda m: f"<the private keys of {', '.join(map(str, m)) or 'no lifeline'}>")

    @classmethod
    def generate(cls, lifelines: Iterable[str]) -> "KeyRing":
        """A new key pair for each of ``lifelines``: hand each process only its own part
        (``only``, or ``save`` then ``load``)."""
        ed25519, serialization = _library()
        raw = serialization.Encoding.Raw
        private, public = {}, {}
        for name in lifelines:
            key = ed25519.Ed25519PrivateKey.generate()
            private[name] = key.private_bytes(raw, serialization.PrivateFormat.Raw,
                                              serialization.NoEncryption())
            public[name] = key.public_key().public_bytes(raw, serialization.PublicFormat.Raw)
        return cls(public, private)

    def only(self, *lifelines: str) -> "KeyRing":
        """The same public keys, and the private keys of ``lifelines`` alone."""
        missing = [name for name in lifelines if name not in self.private]
        if missing:
            raise LiveError(f"this ring holds no private key of {missing[0]!r}")
        return KeyRing(self.public, {name: self.private[name] for name in lifelines})

    def save(self, folder: str) -> None:
        """``folder/public.json`` (every public key; give it to every process) and one
        ``.key`` file per private key (mode 0600; give each only to its lifeline's
        process).  Nothing that exists is overwritten."""
        os.makedirs(folder, exist_ok=True)
        _write(os.path.join(folder, PUBLIC_FILE), {
            "format": PUBLIC_FORMAT, "public": {k: v.hex() for k, v in self.public.items()}})
        for name, key in self.private.items():
            _write(private_path(folder, name),
                   {"format": PRIVATE_FORMAT, "lifeline": name, "private": key.hex()})

    @staticmethod
    def private_path(folder: str, lifeline: str) -> str:
        """Where ``save`` puts ``lifeline``'s private key in ``folder``."""
        return private_path(folder, lifeline)

    @classmethod
    def load(cls, folder: str, *lifelines: str) -> "KeyRing":
        """The public keys in ``folder/public.json`` and the private keys of ``lifelines``
        from their ``.key`` files there (``LiveError`` naming the file if one is not)."""
        path = os.path.join(folder, PUBLIC_FILE)
        data = _read(path, PUBLIC_FORMAT)
        if not isinstance(data.get("public"), dict):
            raise LiveError(f"{path}: no 'public' object mapping lifelines to keys")
        public = {name: _hex_key(path, name, text) for name, text in data["public"].items()}
        private = {}
        for name in lifelines:
            path = private_path(folder, name)
            data = _read(path, PRIVATE_FORMAT)
            if data.get("lifeline") != name:
                raise LiveError(f"{path}: the key of {data.get('lifeline')!r:.60}, not of "
                                f"{name!r}")
            private[name] = _hex_key(path, name, data.get("private"))
        return cls(public, private)


def private_path(folder: str, lifeline: str) -> str:
    """Where ``save`` puts ``lifeline``'s private key: ``<lifeline>.key``, or a hash of the
    name when it is no plain file name."""
    name = lifeline if _SAFE_NAME.fullmatch(lifeline) else \
        "lifeline-" + hashlib.sha256(lifeline.encode()).hexdigest()[:16]
    return os.path.join(folder, f"{name}.key")


class Signing:
    """A system's signer and checker: every public key, this process's private keys, and
    the proofs verified lately.  Made by ``System(keys=...)``."""

    def __init__(self, ring, system):
        if not isinstance(ring, KeyRing):
            raise LiveError(f"keys must be a cpl.live.KeyRing, not {type(ring).__name__}")
        ed25519, serialization = _library()
        missing = [name for name in system.lifelines if name not in ring.public]
        extra = sorted(set(ring.public) - set(system.lifelines), key=str)
        if missing or extra:
            raise LiveError(f"the key ring has no public key of {missing[0]!r}" if missing else
                            f"the key ring names {extra[0]!r:.60}, not a lifeline of the "
                            f"system: it holds one public key per lifeline")
        self._public, self._private = {}, {}
        for name, key in ring.public.items():
            if not (isinstance(key, bytes) and len(key) == KEY_BYTES):
                raise LiveError(f"the public key of {name!r} must be {KEY_BYTES} bytes")
            self._public[name] = ed25519.Ed25519PublicKey.from_public_bytes(key)
        raw = serialization.Encoding.Raw, serialization.PublicFormat.Raw
        for name, key in ring.private.items():
            if not (isinstance(key, bytes) and len(key) == KEY_BYTES):
                raise LiveError(f"the private key of {name!r:.60} must be {KEY_BYTES} bytes")
            signer = ed25519.Ed25519PrivateKey.from_private_bytes(key)
            if signer.public_key().public_bytes(*raw) != ring.public.get(name):
                raise LiveError(f"the private key of {name!r:.60} does not match its public "
                                f"key in the ring")
            self._private[name] = signer
        self._invalid = _library_error()
        self._fingerprint = system.signature
        self._carried = system.program.carried
        self._verified: dict[bytes, bytes] = {}  # signature -> the record it signs
        if len(self._carried) * PROOF_BYTES > MAX_TOKEN // 2:
            raise LiveError(f"guards read {len(self._carried)} lifelines: their proofs "
                            f"({PROOF_BYTES} bytes each) would fill half a token; signed "
                            f"tokens take at most {MAX_TOKEN // 2 // PROOF_BYTES}")

    def holds(self, lifeline: str) -> bool:
        return lifeline in self._private

    def sign(self, token, held: Mapping[int, tuple]):
        """``token`` signed by its sender, carrying the proof ``held`` has of each other
        entry it carries (none for the receiver's, which its receiver never takes)."""
        vc = token.metadata.vc
        proofs = tuple(None if vc[i] == 0 or name in (token.sender, token.receiver)
                       else held[i] for i, name in enumerate(self._carried))
        fields = (token.system, token.sender, token.receiver, token.seq, token.label,
                  token.metadata)  # built twice: cheaper than attrs.evolve
        unsigned = type(token)(*fields, b"", proofs)  # a signed token's digest says so
        signature = self._private[token.sender].sign(
            self._record(token.sender, token.metadata, unsigned.digest))
        return type(token)(*fields, signature, proofs)

    def check(self, token) -> None:
        """``TokenRefused`` unless the sender signed ``token`` and every other entry it
        carries (but the receiver's) has a proof by its own lifeline."""
        sender = token.sender
        if sender not in self._public:
            raise TokenRefused("malformed", f"from {sender!r:.60}, which is not a lifeline of "
                               f"this system")
        if len(token.proofs) != len(self._carried):
            raise TokenRefused("malformed", f"a signed token carries {len(self._carried)} "
                               f"proofs, one per lifeline guards read")
        if not self._verify(sender, token.signature,
                            self._record(sender, token.metadata, token.digest)):
            raise TokenRefused("forged", f"it is not signed by {sender:.60}'s key (made by "
                               f"another lifeline, changed on the way, or made by hand)")
        vc = token.metadata.vc
        for i, name in enumerate(self._carried):
            proof = token.proofs[i]
            if name in (sender, token.receiver):
                continue  # the sender's entry is in its signed record; the receiver's unused
            if vc[i] == 0:
                if proof is not None:
                    raise TokenRefused("malformed", f"a proof for {name!r:.60}'s entry, "
                                       f"which is empty")
                continue
            if proof is None or not self._verify(name, proof[0],
                                                 self._record(name, token.metadata, proof[1])):
                raise TokenRefused("forged", f"its entry of {name:.60} (clock {vc[i]}) is "
                                   f"not signed by {name:.60}'s key: {sender:.60} relays a "
                                   f"state {name:.60} never signed")

    def _record(self, lifeline: str, metadata, digest: bytes) -> bytes:
        """What ``lifeline`` signs: its entry in ``metadata`` (none if no guard reads it)
        and the digest of the send it made that entry at."""
        i = self._position(lifeline)
        entry = b"" if i is None else Metadata(
            (metadata.vc[i],), (metadata.views[i],), (metadata.vars[i],)).encode()
        return msgpack.packb([RECORD, self._fingerprint, lifeline, entry, digest],
                             use_bin_type=True)

    def _position(self, lifeline: str):
        try:
            return self._carried.index(lifeline)
        except ValueError:
            return None

    def _verify(self, lifeline: str, signature: bytes, record: bytes) -> bool:
        if self._verified.get(signature) == record:
            return True
        try:
            self._public[lifeline].verify(signature, record)
        except self._invalid:
            return False
        self._verified[signature] = record
        if len(self._verified) > VERIFIED_LATELY:
            del self._verified[next(iter(self._verified))]
        return True


def _mapping(value, which: str) -> dict:
    if not isinstance(value, Mapping):
        raise LiveError(f"a KeyRing's {which} keys map lifelines to 32 bytes, not "
                        f"{type(value).__name__}")
    return dict(value)


def _library():
    """The Ed25519 module of ``cryptography``, or ``SigningUnavailable`` saying how to
    install it."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        raise SigningUnavailable() from None
    return ed25519, serialization


def _library_error():
    from cryptography.exceptions import InvalidSignature
    return InvalidSignature


def _write(path: str, data: dict) -> None:
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise LiveError(f"{path} exists already: keys are never overwritten (move it, or "
                        f"save the ring to a new folder)") from None
    except OSError as error:
        raise LiveError(f"cannot write {path}: {error.strerror}") from None
    with os.fdopen(descriptor, "w") as file:
        json.dump(data, file, indent=1)
        file.write("\n")


def _read(path: str, format: str) -> dict:
    try:
        with open(path, encoding="utf-8") as file:
            data = json.loads(file.read(1 << 20))
    except FileNotFoundError:
        raise LiveError(f"{path}: no such file (KeyRing.save writes it)") from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise LiveError(f"{path}: not a key file ({type(error).__name__})") from None
    if not (isinstance(data, dict) and data.get("format") == format):
        raise LiveError(f"{path}: not a {format} file")
    return data


def _hex_key(path: str, name, text) -> bytes:
    try:
        key = bytes.fromhex(text)
    except (TypeError, ValueError):
        key = b""
    if not (isinstance(name, str) and len(key) == KEY_BYTES):
        raise LiveError(f"{path}: the key of {name!r:.60} is not {KEY_BYTES} bytes in hex")
    return key


__all__ = ["KeyRing", "Signing", "private_path"]
