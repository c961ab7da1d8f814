"""``choreo.execution.fingerprint``: two lifelines run the same plan only if their
fingerprints agree."""

from __future__ import annotations

import textwrap

import choreo
from choreo.execution.fingerprint import fingerprint, sources

SUB = """
from choreo import Choreography

ask = Choreography("ask")
Asker, Answerer = ask.lifelines("Asker", "Answerer")
q = ask.var("q", int, init=1)
ask.send(Asker, Answerer, q)
"""

MAIN = """
from choreo import Choreography
from fingerprint_sub import ask

main = Choreography("main")
A, B = main.lifelines("A", "B")
n = main.input("n", int, default=1, at=A)
main.include(ask, lifelines={"Asker": A, "Answerer": B})
"""


def _files(tmp_path):
    (tmp_path / "fingerprint_sub.py").write_text(textwrap.dedent(SUB))
    (tmp_path / "main.py").write_text(textwrap.dedent(MAIN))
    return str(tmp_path / "main.py"), str(tmp_path / "fingerprint_sub.py")


def test_the_fingerprint_covers_the_files_the_inputs_the_seed_and_the_name(tmp_path):
    main, sub = _files(tmp_path)
    loaded = choreo.load_one(main)
    assert sources(loaded) == [main, sub]  # its own file first, then the included one's
    first = fingerprint(loaded, {"n": 1}, 0)
    assert len(first) == 16 and first == fingerprint(choreo.load_one(main), {"n": 1}, 0)
    assert fingerprint(loaded, {"n": 2}, 0) != first
    assert fingerprint(loaded, {"n": 1}, 1) != first
    assert fingerprint(choreo.load_one(main, "ask"), {"n": 1}, 0) != first
    with open(sub, "a") as handle:
        handle.write("# a change in the included file only\n")
    assert fingerprint(loaded, {"n": 1}, 0) != first


def test_the_same_source_elsewhere_has_the_same_fingerprint(tmp_path):
    """A joined host's copy sits at another path: only the contents count."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    (there / "copy.py").write_text(textwrap.dedent(SUB))
    (here / "ask.py").write_text(textwrap.dedent(SUB))
    assert fingerprint(choreo.load_one(str(here / "ask.py")), {}, 0) == \
        fingerprint(choreo.load_one(str(there / "copy.py")), {}, 0)
