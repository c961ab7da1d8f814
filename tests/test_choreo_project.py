"""Projection: golden `cpl show` text of the examples, and who learns each decision."""

import os
from pathlib import Path

import pytest

import choreo
from choreo import Choreography
from choreo.analysis.local import LAct, LBranch, LChoose, LLoop, LPar, LRecv, LSend, LWhile
from choreo_util import cpl

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = Path(__file__).resolve().parent / "golden"
EXAMPLES = ["code_review", "relay", "parallel_tools"]


@pytest.mark.parametrize("example", EXAMPLES)
def test_golden_projection(example):
    """`cpl show` of each example; CPL_UPDATE_GOLDEN=1 rewrites the files after a
    deliberate change."""
    result = cpl("show", ROOT / "examples" / f"{example}.py")
    assert result.returncode == 0, result.stderr
    golden = GOLDEN / f"{example}.show.txt"
    if os.environ.get("CPL_UPDATE_GOLDEN"):
        golden.write_text(result.stdout, encoding="utf-8")
    assert result.stdout == golden.read_text(encoding="utf-8")


def test_show_one_lifeline():
    result = cpl("show", ROOT / "examples" / "code_review.py", "--lifeline", "Committer")
    assert result.returncode == 0
    assert result.stdout.startswith(
        "Committer:\n  loop on control from Orchestrator [another round?]")
    assert "choose merge? by guard @TestRunner.candidate == candidate" in result.stdout
    assert result.stdout.rstrip().endswith("result: candidate, decision")


def three(control="minimal"):
    c = Choreography("t", control=control)
    lifelines = c.lifelines("Boss", "X", "Z")
    return c, lifelines, c.var("v", int, init=0)


def program(c, name):
    return choreo.analysis.project(c).program(name).body


def decision(c):
    (d,) = choreo.analysis.project(c).decisions
    return d


def test_owner_tells_only_the_lifelines_that_behave_differently():
    c, (Boss, X, Z), v = three()
    c.send(Boss, Z, v)
    with c.if_("v == 0", at=Boss, label="zero?"):
        c.set(X, v=1)
        c.set(Z, v=1)
    with c.else_():
        c.set(Z, v=1)  # the same behaviour as in the then-branch
    d = decision(c)
    assert (d.differing, d.told, d.learners, d.uninformed) == (("X",), ("X",), (), ())
    assert isinstance(program(c, "X")[0], LBranch) and program(c, "X")[0].via == "control"
    assert program(c, "Z")[1] == LAct(None, ("v",), (), "set v=1", (("v", 1),))


def test_first_message_from_the_owner_informs_without_a_control_message():
    c, (Boss, X, Z), v = three()
    with c.if_("v == 0", at=Boss, label="zero?"):
        c.send(Boss, X, v, label="yes")
    with c.else_():
        c.send(Boss, X, v, label="no")
    d = decision(c)
    assert (d.told, d.learners) == ((), ("X",))
    (branch,) = program(c, "X")
    assert branch.via == "message"
    assert isinstance(branch.then[0], LRecv) and branch.then[0].label == "yes"


def test_transitive_propagation_through_a_told_lifeline():
    """X cannot learn by message (it acts first), Z learns from X's first message."""
    c, (Boss, X, Z), v = three()
    with c.if_("v == 0", at=Boss, label="zero?"):
        c.set(X, v=1)
        c.send(X, Z, v, label="one")
    with c.else_():
        c.send(X, Z, v, label="other")
    d = decision(c)
    assert (d.told, d.learners) == (("X",), ("Z",))
    (choose,) = program(c, "Boss")
    assert isinstance(choose, LChoose) and choose.tell == ("X",)


def test_broadcast_tells_everybody():
    c, (Boss, X, Z), v = three("broadcast")
    with c.if_("v == 0", at=Boss):
        c.set(X, v=1)
    d = decision(c)
    assert d.told == ("X", "Z")
    branch = program(c, "Z")[0]
    assert branch.via == "control" and branch.then == branch.else_ == ()


def test_per_statement_tell_overrides_the_policy():
    c, (Boss, X, Z), v = three("none")
    with c.if_("v == 0", at=Boss, tell=[X]):
        c.set(X, v=1)
    assert decision(c).told == ("X",)


def test_while_tells_every_lifeline_with_a_part_in_the_body_each_round():
    c, (Boss, X, Z), v = three()
    with c.while_("v < 3", at=Boss, label="more?"):
        c.act(Boss, lambda vs, rng: vs["v"] + 1, assigns=[v], reads=[v])
        c.send(Boss, X, v)
    d = decision(c)
    assert (d.kind, d.told) == ("while", ("X",))
    assert isinstance(program(c, "Boss")[0], LWhile)
    loop = program(c, "X")[0]
    assert isinstance(loop, LLoop) and loop.owner == "Boss" and isinstance(loop.body[0], LRecv)
    assert program(c, "Z") == ()


def test_parallel_threads_of_one_lifeline_become_local_threads():
    c, (Boss, X, Z), v = three()
    with c.parallel():
        with c.thread():
            c.send(Boss, X, v)
        with c.thread():
            c.send(Boss, Z, v)
    (par,) = program(c, "Boss")
    assert isinstance(par, LPar) and [type(t[0]) for t in par.threads] == [LSend, LSend]
    assert isinstance(program(c, "X")[0], LRecv)  # one thread only: inlined


def test_equality_ignores_source_lines_but_not_messages():
    c, (Boss, X, Z), v = three()
    with c.if_("v == 0", at=Boss):
        c.send(Boss, X, v)
    with c.else_():
        c.send(Boss, X, v)  # the same text, but another message: X must tell them apart
    assert decision(c).learners == ("X",)


def test_include_renames_lifelines_and_guards():
    sub = Choreography("ask")
    Asker, Answerer = sub.lifelines("Asker", "Answerer")
    q = sub.var("q", int, init={Asker: 1})
    sub.send(Asker, Answerer, q)
    with sub.if_("@Asker.q == q", at=Answerer, label="same?"):
        sub.set(Answerer, q=2)
    c, (Boss, X, Z), v = three()
    c.include(sub, lifelines={"Asker": Boss, "Answerer": X})
    c.include(sub, lifelines={Asker: Boss, Answerer: Z})
    report = choreo.analysis.validate(c)
    assert report.ok, report.render_errors()
    choose = program(c, "X")[1]
    assert choose.guard.canonical == "@Boss.q == q"
    first, second = (s for s in c.body if hasattr(s, "sender"))
    assert first.id != second.id and (first.receiver, second.receiver) == ("X", "Z")


def test_include_needs_a_counterpart_for_every_role():
    sub = Choreography("ask")
    sub.lifelines("Asker", "Answerer")
    c, _, _ = three()
    with pytest.raises(choreo.ChoreographyError, match="'Answerer' of 'ask' has no counterpart"):
        c.include(sub, lifelines={"Asker": "Boss"})


def test_guard_is_checked_at_definition_against_the_declarations():
    c, (Boss, X, Z), v = three()
    line = _line() + 1
    with c.if_("@Q.v == 1", at=Boss):
        pass
    (problem,) = c.problems
    assert (problem.where.path, problem.where.line) == (__file__, line)
    assert problem.message.endswith("unknown lifeline 'Q'")


def test_symbols_of_a_symbol_set_resolve_in_guards():
    c, (Boss, X, Z), v = three()
    Mode = c.symbols("Mode", "fast", "slow")
    mode = c.var("mode", Mode, init="fast")
    with c.if_("mode != slow", at=Boss) as _:
        pass
    assert c.problems == []
    assert Mode.fast == "fast" and mode.type is Mode


def _line():
    import sys
    return sys._getframe(1).f_lineno
