"""Who can forge what: an insider against the Committer's merge guard, in each signing mode.

The forger is the Author, an insider: it runs a genuine lifeline of the system and holds
what its process is given (the shared ``secret``, or its own private key of a
``KeyRing``).  It tries five forgeries: a token "from" the TestRunner
(impersonation), its own token relaying TestRunner state it invented, a forged
``TestRunner:1`` before the genuine one (id collision), a TestRunner clock entry of
2^63 (a pinned view), 4,097 forged TestRunner message numbers from 10^12 up (the
replay window).  With per-lifeline keys each is ``TokenRefused`` naming why, the
Committer is left exactly as it was, and the genuine tokens after it are taken.  With a
shared secret (and unsigned) each succeeds: the tests assert the harm docs/embedding.md
states, so a change in either mode fails one of them.
"""

from __future__ import annotations

import os
import stat
import sys

import attrs
import msgpack
import pytest

from cpl.live import KeyRing, LiveError, SigningUnavailable, System, Token, TokenRefused
from cpl.live.keys import private_path
from cpl.live.token import sign
from test_live_tokens import GUARDS, LIFELINES, VARIABLES, refused, state

SECRET = b"0123456789abcdef-secret"
RING = KeyRing.generate(LIFELINES)  # the genuine keys: each process gets its own part
FORGER_KEY = KeyRing.generate(["Author"]).private["Author"]  # any key but the TestRunner's


def system(mode, lifeline=None, ring=None) -> System:
    """The flagship system as ``lifeline``'s process builds it in ``mode`` (``ring``: the
    keys it holds, when not its own part of the genuine ring)."""
    options = {"secret": SECRET} if mode == "shared" else {} if mode == "unsigned" else \
        {"keys": ring or RING.only(lifeline)}
    return System(LIFELINES, GUARDS, VARIABLES, init={"Committer": {"candidate": "abc"}},
                  **options)


class Release:
    """The TestRunner, the Committer (logging) and the Author, each in its own system as
    its own process has it; the Author's process is the forger's."""

    def __init__(self, mode, folder):
        self.mode = mode
        self.runner = system(mode, "TestRunner").agent("TestRunner")
        self.committer = system(mode, "Committer").agent(
            "Committer", log=os.path.join(folder, "Committer.jsonl"))
        self.author = system(mode, "Author").agent("Author")
        # The forger's best in the keyed mode: its own genuine key as the Author, and a
        # key of its own making as the TestRunner (it has no other).
        ring = KeyRing({**RING.public, "TestRunner": _public(FORGER_KEY)},
                       {"Author": RING.private["Author"], "TestRunner": FORGER_KEY})
        self.forger = system(mode, "TestRunner", ring) if mode == "keyed" else \
            system(mode, "TestRunner")
        puppet = self.forger.agent("TestRunner")  # a real view of "passed", to forge with
        puppet.act(status="passed", candidate="abc")
        self.passed = puppet.send("Author").metadata

    def report(self, status: str, candidate: str = "abc") -> Token:
        """A genuine TestRunner report to the Committer."""
        self.runner.act(status=status, candidate=candidate)
        return self.runner.send("Committer", "report")

    def forged(self, sender: str, seq: int, clock: int) -> Token:
        """A token "from" ``sender`` to the Committer whose TestRunner entry says the
        tests of ``abc`` passed at TestRunner's event ``clock``, signed as well as the
        forger can: with the shared secret, or with the keys its process holds."""
        carried = self.forger.program.carried
        vc = list(self.passed.vc)
        vc[carried.index("TestRunner")] = clock
        metadata = self.passed._replace(vc=tuple(vc))
        token = Token(self.forger.signature, sender, "Committer", seq, "report", metadata)
        if self.mode == "shared":
            return attrs.evolve(token, signature=sign(token.fields(), SECRET))
        if self.mode == "unsigned":
            return token
        signing = self.forger.signing  # signs as the sender, relays its TestRunner state
        held = {i: _proof(signing, name, metadata) for i, name in enumerate(carried)
                if name == "TestRunner" != sender}
        return signing.sign(token, held)


def _public(private: bytes) -> bytes:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    return Ed25519PrivateKey.from_private_bytes(private).public_key().public_bytes_raw()


def _proof(signing, name: str, metadata) -> tuple:
    """``name``'s record of its entry in ``metadata``, signed with the forger's key."""
    digest = os.urandom(16)
    return signing._private[name].sign(signing._record(name, metadata, digest)), digest


@pytest.fixture
def keyed(tmp_path):
    return Release("keyed", str(tmp_path))


@pytest.fixture(params=["shared", "unsigned"])
def weaker(request, tmp_path):
    return Release(request.param, str(tmp_path))


def merges(release, token, **updates) -> bool:
    release.committer.receive(token, **updates)
    return release.committer.decide("merge")


# ------------------------------------------------------------------ per-lifeline keys

def test_genuine_tokens_and_relays_are_taken(keyed):
    """The TestRunner's passing report reaches the Committer through the Author: its
    entry travels with the TestRunner's own proof, and the guard holds."""
    keyed.runner.act(status="passed", candidate="abc")
    keyed.author.receive(keyed.runner.send("Author").text)
    relayed = keyed.author.send("Committer", "relay")
    assert relayed.proofs[keyed.committer.system.carried["TestRunner"]] is not None
    assert merges(keyed, relayed.text)
    assert not merges(keyed, keyed.report("failed").encode())


def test_impersonation_is_refused(keyed):
    before = state(keyed.committer)
    error = refused(keyed.committer, keyed.forged("TestRunner", 1, 1).text, "forged")
    assert "not signed by TestRunner's key" in str(error)
    assert state(keyed.committer) == before and not keyed.committer.decide("merge")


def test_a_relay_of_invented_state_is_refused(keyed):
    error = refused(keyed.committer, keyed.forged("Author", 1, 1).text, "forged")
    assert "its entry of TestRunner (clock 1) is not signed by TestRunner's key" in str(error)
    assert "Author relays a state TestRunner never signed" in str(error)
    assert not keyed.committer.decide("merge")


def test_a_forged_id_leaves_the_genuine_one_free(keyed):
    refused(keyed.committer, keyed.forged("TestRunner", 1, 1).encode(), "forged")
    genuine = keyed.report("failed")
    assert genuine.msg == "TestRunner:1"
    assert not merges(keyed, genuine)  # taken, not "replayed"; the tests failed
    assert merges(keyed, keyed.report("passed").text)


def test_a_forged_clock_of_2_to_the_63_pins_nothing(keyed):
    for sender in ("TestRunner", "Author"):
        refused(keyed.committer, keyed.forged(sender, 1, 2**63).text, "forged")
    assert not merges(keyed, keyed.report("failed"))
    assert merges(keyed, keyed.report("passed"))
    assert not merges(keyed, keyed.report("failed"))  # each genuine report replaces the view


def test_4097_forged_message_numbers_leave_the_window(keyed):
    before = state(keyed.committer)
    for k in range(4097):
        token = keyed.forged("TestRunner", 10**12 + k, 10**12 + k)
        with pytest.raises(TokenRefused) as caught:
            keyed.committer.receive(token.encode())
        assert caught.value.reason == "forged"
    assert state(keyed.committer) == before
    assert merges(keyed, keyed.report("passed"))  # TestRunner:1, genuine, taken


def test_a_changed_proof_or_entry_is_refused(keyed):
    keyed.runner.act(status="failed", candidate="abc")
    keyed.author.receive(keyed.runner.send("Author"))
    token = keyed.author.send("Committer")
    at = keyed.committer.system.carried["TestRunner"]
    signature, digest = token.proofs[at]
    for proof in ((bytes(64), digest), (signature, bytes(16)),
                  (signature[:-1] + bytes([signature[-1] ^ 1]), digest)):
        proofs = token.proofs[:at] + (proof,) + token.proofs[at + 1:]
        refused(keyed.committer, attrs.evolve(token, proofs=proofs).text, "forged")
    views = list(token.metadata.views)
    views[at] ^= 1  # the TestRunner's view, changed on the way
    changed = attrs.evolve(token, metadata=token.metadata._replace(views=tuple(views)))
    refused(keyed.committer, changed.text, "forged")
    keyed.committer.receive(token.text)  # the genuine one is still good


def test_every_flipped_byte_of_a_relay_is_refused(keyed):
    """No byte of a keyed token goes unchecked: one bit flipped anywhere (a field, the
    metadata, the sender's signature, a relayed proof) and it is refused, the Committer
    unchanged."""
    keyed.runner.act(status="passed", candidate="abc")
    keyed.author.receive(keyed.runner.send("Author"))
    data = keyed.author.send("Committer").encode()
    for at in range(len(data)):
        flipped = data[:at] + bytes([data[at] ^ (1 << at % 8)]) + data[at + 1:]
        refused(keyed.committer, flipped)
    assert merges(keyed, data)


def test_modes_do_not_mix(keyed, tmp_path):
    os.mkdir(tmp_path / "shared")
    shared = Release("shared", str(tmp_path / "shared"))
    error = refused(keyed.committer, shared.report("passed").text, "forged")
    assert "not signed by its sender's key" in str(error)
    error = refused(shared.committer, keyed.report("passed").text, "foreign")
    assert "per-lifeline keys" in str(error)
    fields = msgpack.unpackb(keyed.report("passed").encode())
    refused(keyed.committer, msgpack.packb(fields[:-1]), "malformed")  # 8 fields, version 2
    fields[-1] = [[b"x", b"y"]] * len(fields[-1])
    refused(keyed.committer, msgpack.packb(fields), "malformed")


# ------------------------------------------------------------------ what a shared secret allows

def test_shared_secret_limit_impersonation_flips_the_guard(weaker):
    assert not weaker.committer.decide("merge")
    assert merges(weaker, weaker.forged("TestRunner", 1, 1).text)


def test_shared_secret_limit_a_relay_of_invented_state(weaker):
    assert merges(weaker, weaker.forged("Author", 1, 1).text)


def test_shared_secret_limit_a_forged_id_refuses_the_genuine_one(weaker):
    weaker.committer.receive(weaker.forged("TestRunner", 1, 1))
    with pytest.raises(TokenRefused) as caught:
        weaker.committer.receive(weaker.report("failed"))
    assert caught.value.reason == "replayed"


def test_shared_secret_limit_a_clock_of_2_to_the_63_pins_the_view(weaker):
    assert merges(weaker, weaker.forged("Author", 1, 2**63))
    assert merges(weaker, weaker.report("failed"))  # the genuine failure replaces nothing


def test_shared_secret_limit_4097_forged_numbers_move_the_window(weaker):
    for k in range(4097):
        weaker.committer.receive(weaker.forged("TestRunner", 10**12 + k, 10**12 + k).encode())
    with pytest.raises(TokenRefused) as caught:
        weaker.committer.receive(weaker.report("passed"))
    assert caught.value.reason == "replayed"


# ------------------------------------------------------------------ keys made and given out

def test_a_ring_saved_and_loaded_by_part(tmp_path):
    folder = str(tmp_path / "keys")
    RING.save(folder)
    assert stat.S_IMODE(os.stat(private_path(folder, "TestRunner")).st_mode) == 0o600
    ring = KeyRing.load(folder, "TestRunner")
    assert ring.public == RING.public and ring.private == {"TestRunner": RING.private["TestRunner"]}
    runner = System(LIFELINES, GUARDS, VARIABLES, keys=ring).agent("TestRunner")
    committer = system("keyed", "Committer").agent("Committer")
    committer.receive(runner.send("Committer").text)
    with pytest.raises(LiveError, match="exists already: keys are never overwritten"):
        RING.save(folder)
    with pytest.raises(LiveError, match="does not hold: load it with"):
        System(LIFELINES, GUARDS, VARIABLES, keys=ring).agent("Committer")


def test_key_files_that_are_not_are_named(tmp_path):
    folder = str(tmp_path)
    with pytest.raises(LiveError, match="public.json: no such file"):
        KeyRing.load(folder)
    RING.only("Author").save(folder)
    with pytest.raises(LiveError, match=r"Committer.key: no such file"):
        KeyRing.load(folder, "Committer")
    os.rename(private_path(folder, "Author"), private_path(folder, "Committer"))
    with pytest.raises(LiveError, match="the key of 'Author', not of 'Committer'"):
        KeyRing.load(folder, "Committer")
    with open(os.path.join(folder, "public.json"), "w") as file:
        file.write('{"format": "cpl-keys/1", "public": {"Author": "abc"}}')
    with pytest.raises(LiveError, match="the key of 'Author' is not 32 bytes in hex"):
        KeyRing.load(folder)


def test_a_ring_must_fit_the_system():
    with pytest.raises(LiveError, match="no public key of 'Committer'"):
        System(LIFELINES, GUARDS, VARIABLES, keys=KeyRing(
            {k: v for k, v in RING.public.items() if k != "Committer"}))
    with pytest.raises(LiveError, match="names 'Intruder', not a lifeline"):
        System(LIFELINES, GUARDS, VARIABLES, keys=KeyRing({**RING.public, "Intruder": bytes(32)}))
    with pytest.raises(LiveError, match="does not match its public key"):
        System(LIFELINES, GUARDS, VARIABLES,
               keys=KeyRing(RING.public, {"Author": RING.private["TestRunner"]}))
    with pytest.raises(LiveError, match="public keys map lifelines to 32 bytes, not list"):
        KeyRing([])
    assert RING.private["Author"].hex() not in repr(RING)
    assert "<the private keys of Author, TestRunner, Committer>" in repr(RING)
    with pytest.raises(LiveError, match="secret or keys, not both"):
        System(LIFELINES, GUARDS, VARIABLES, secret=SECRET, keys=RING)


def test_without_cryptography_keys_are_a_named_error(monkeypatch):
    for name in [n for n in sys.modules if n.startswith("cryptography")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "cryptography", None)
    with pytest.raises(SigningUnavailable, match=r"pip install 'causal-guards\[signing\]'"):
        System(LIFELINES, GUARDS, VARIABLES, keys=RING)
    with pytest.raises(SigningUnavailable):
        KeyRing.generate(["A"])
    System(LIFELINES, GUARDS, VARIABLES, secret=SECRET).agent("Author").send("Committer")
