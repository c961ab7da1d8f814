"""A misspelt variable never silently becomes a constant.

A bare name one edit from a declared variable is a ``GuardError`` naming the
variable, unless it is quoted or a listed symbol; every other bare name stays
a symbol.  One rule (``cpl.lang.names.misspelt``) for ``cpl check``, traces,
choreographies, ``cpl.live.System`` and the adapters; its search
(``cpl.lang.spelling``) bounded in time whatever the names.
"""

from __future__ import annotations

import json
import time

import pytest
from hypothesis import given, strategies as st

import cpl
from cpl.lang import Schema
from cpl.lang import names as names_module, spelling
from cpl.lang.names import misspelt
from cpl.lang.spelling import one_edit_apart
from cpl.live import LiveError, System

from choreo_util import cpl as run_cpl, marked, write

LIFELINES = ["Deployer", "Tester"]
GUARD = "@Tester(reslt != failed S result == passed)"
REFUSED = "'reslt' is not a declared variable; did you mean 'result'?"


def _system(guard: str = GUARD, **options) -> System:
    return System(LIFELINES, {"deploy": ("Deployer", guard)}, ["result", "version"], **options)


# ----------------------------------------------------------- the reslt guard


def test_a_system_refuses_the_misspelt_variable():
    with pytest.raises(cpl.GuardError) as caught:
        _system()
    assert str(caught.value) == (
        "guard 'deploy':1:9: error: " + REFUSED + "\n"
        "  " + GUARD + "\n"
        "          ^^^^^\n"
        '  hint: if you mean the string "reslt", write it in quotes or declare it a symbol')


def test_quoted_or_listed_it_is_the_constant_meant():
    quoted = _system('@Tester("reslt" != failed S result == passed)')
    assert quoted.guards["deploy"][1].canonical == '@Tester("reslt" != failed S result == passed)'
    listed = _system(symbols=["reslt", "failed", "passed"])
    assert listed.guards["deploy"][1].canonical == GUARD
    # a listed symbol closes the system's constants, as before: any other is an error
    with pytest.raises(cpl.GuardError, match="unknown name 'passed'"):
        _system(symbols=["reslt", "failed"])


def test_far_names_stay_symbols():
    system = _system("@Tester(result != failed S result == passed) && version != stale")
    owner, guard = system.guards["deploy"]
    assert owner == "Deployer" and "failed" in guard.canonical


def test_a_name_both_variable_and_symbol_is_refused():
    with pytest.raises(LiveError, match="'result' is both a variable and a symbol"):
        _system(symbols=["result", "failed"])


def test_cpl_check_refuses_it(tmp_path):
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps({"lifelines": LIFELINES, "vars": ["result", "version"]}))
    result = run_cpl("check", "--schema", schema, GUARD)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr == ("guard:1:9: error: " + REFUSED + "\n  " + GUARD + "\n"
                             "          ^^^^^\n  hint: if you mean the string \"reslt\", "
                             "write it in quotes or declare it a symbol\n")
    listed = tmp_path / "listed.json"
    listed.write_text(json.dumps({"lifelines": LIFELINES, "vars": ["result"],
                                  "symbols": ["reslt", "failed", "passed"]}))
    result = run_cpl("check", "--schema", listed, GUARD)
    assert (result.returncode, result.stdout, result.stderr) == (0, GUARD + "\n", "")


CHOREOGRAPHY = """
    c = Choreography("deploy")
    Deployer, Tester = c.lifelines("Deployer", "Tester")
    Outcome = c.symbols("Outcome", "passed", "failed")
    result = c.var("result", Outcome)
    deployed = c.var("deployed", bool)
    c.act(Tester, lambda variables, rng: "passed", assigns=[result])
    c.send(Tester, Deployer, result)
    with c.if_("GUARD", at=Deployer, label="deploy?"):  # <-
        c.set(Deployer, deployed=True)
"""


def test_a_choreography_refuses_it(tmp_path):
    path = write(tmp_path, CHOREOGRAPHY.replace("GUARD", GUARD))
    for command in (("validate",), ("run", "--sim")):
        result = run_cpl(*command, path)
        assert result.returncode == 2, result.stderr
        assert result.stderr.startswith(f"{path}:{marked(path)}: error: in the guard of "
                                         f"'deploy?': " + REFUSED), result.stderr
    # a member of a symbol set is never taken for a misspelling
    near = CHOREOGRAPHY.replace('"passed", "failed"', '"passed", "failed", "reslt"')
    result = run_cpl("validate", write(tmp_path, near.replace("GUARD", GUARD), "near.py"))
    assert result.returncode == 0, result.stderr


def test_the_adapters_take_the_systems_rule():
    """The adapters take a System (or its agents): their guards are the System's."""
    from causal_guards.langgraph import family, family_guards

    guards = family_guards("go", family("worker", 2), "@Tester(reslt == passed)")
    with pytest.raises(cpl.GuardError, match=r"did you mean 'result'\?"):
        System(["Tester", *family("worker", 2)], guards, ["result"])


def test_a_live_run_with_symbols_re_checks_from_its_merged_trace(tmp_path):
    """The logs record the symbols: the trace reads ``stale`` as the system did."""
    system = System(["A"], {"fresh": ("A", "state != stale")}, ["state"], symbols=["stale"])
    agent = system.agent("A", log=str(tmp_path / "logs"))
    agent.act(state="new")
    assert agent.decide("fresh") is True
    agent.close()
    trace = tmp_path / "run.jsonl"
    assert run_cpl("merge", tmp_path / "logs", "-o", trace).returncode == 0
    assert json.loads(trace.read_text().splitlines()[0])["symbols"] == ["stale"]
    result = run_cpl("eval", trace)
    assert result.returncode == 0 and result.stdout.endswith("all agree\n"), result.stderr


# ------------------------------------------------------------------ the rule


def test_which_variables_count_for_a_lifeline():
    """Every declared variable, whichever lifeline sets it; ``@B.x`` is a variable anyway."""
    schema = Schema(("A", "B"), frozenset({"result", "n"}))
    for guard in ("@B(reslt == 1)", "@A(reslt == 1)", "reslt == 1", "startswith(reslt, x)"):
        with pytest.raises(cpl.GuardError, match="did you mean 'result'"):
            cpl.check(guard, schema)
    with pytest.raises(cpl.GuardError, match="unknown variable 'reslt' in @B.reslt; did you "
                                             "mean 'result'"):
        cpl.check("@B.reslt == 1", schema)


@pytest.mark.parametrize("name", ["reslt", "resultt", "rseult", "resulT", "Result", "xesult"])
def test_one_edit_of_any_kind_is_refused(name):
    assert misspelt([name], Schema(variables=frozenset({"result"}))) == {name: ("result",)}


@pytest.mark.parametrize("name", ["res", "rsult_", "tluser", "results_", "x", "ok"])
def test_two_edits_or_short_names_are_not(name):
    schema = Schema(variables=frozenset({"result", "y", "on"}))
    assert misspelt([name], schema) == {}


def test_several_near_variables_are_named_in_order():
    schema = Schema(variables=frozenset({"stats", "state", "statu", "stat_", "status"}))
    with pytest.raises(cpl.GuardError, match=r"'stat' is not a declared variable; did you mean "
                                             r"'stat_', 'state' or 'stats'\?"):
        cpl.check("stat == 1", schema)


def test_unicode_variables_are_compared_by_character():
    variables = frozenset({"résultat", "名前abc", "𝒳value", "cafe\u0301"})
    schema = Schema(variables=variables)
    assert misspelt(["rsultat", "名abc", "value", "cafe", "caf", "前abc"], schema) == {
        "rsultat": ("résultat",), "名abc": ("名前abc",), "value": ("𝒳value",),
        "cafe": ("cafe\u0301",), "前abc": ("名前abc",)}
    with pytest.raises(cpl.GuardError, match="did you mean 'résultat'"):
        cpl.check("rsultat == 1", schema)
    # a System's printable names go through the same rule
    with pytest.raises(cpl.GuardError, match="did you mean 'résultat'"):
        System(["A"], {"g": ("A", "resultat == ok")}, ["résultat"])


def test_verdicts_are_remembered_and_forgotten_in_bounds(monkeypatch):
    monkeypatch.setattr(names_module, "_REMEMBERED", 3)
    schema = Schema(variables=frozenset({"result", "status"}))
    names = ["reslt", "statu", "far_away", "other", "resultt"]
    for _ in range(2):  # the second time from what is remembered, or after forgetting
        assert misspelt(names, schema) == {"reslt": ("result",), "statu": ("status",),
                                           "resultt": ("result",)}


# ------------------------------------------------------------- hostile input


def _timed(call):
    start = time.perf_counter()
    try:
        return call(), time.perf_counter() - start
    except cpl.GuardError as error:
        return error, time.perf_counter() - start


def test_a_huge_number_of_variables_stays_quick():
    variables = frozenset(f"v{i:06d}" for i in range(100_000))
    schema = Schema(("A",), variables)
    spelling.by_length.cache_clear()
    checked, seconds = _timed(lambda: cpl.check("v000001 == x && status != failed", schema))
    assert checked.canonical == "v000001 == x && status != failed" and seconds < 10
    error, seconds = _timed(lambda: cpl.check("v0000001 == 1", schema))
    assert "'v0000001' is not a declared variable; did you mean 'v000000' or 'v000001'?" \
        in str(error) and seconds < 10


def test_very_long_names_stay_quick():
    long = "a" * 60_000
    schema = Schema(("A",), frozenset({long, long + "b", "result"}))
    spelling.by_length.cache_clear()
    error, seconds = _timed(lambda: cpl.check("a" * 30_000 + "x" + "a" * 29_999 + " == 1",
                                              schema))
    assert "is not a declared variable; did you mean 'aaaa" in str(error) and seconds < 10
    checked, seconds = _timed(lambda: cpl.check("b" * 60_000 + " == 1", schema))
    assert checked.canonical.startswith("bbb") and seconds < 10


def test_numbered_names_and_variables_are_found_by_their_deletions():
    """6,000 names and 100,000 variables that share short halves by the thousand."""
    variables = frozenset(f"v{i:06d}" for i in range(100_000))
    guard = " || ".join(f"w{i:05d} == q" for i in range(6_000))
    spelling.by_length.cache_clear()
    checked, seconds = _timed(lambda: cpl.check(guard, Schema(("A",), variables)))
    assert checked.canonical == guard and seconds < 20
    error, seconds = _timed(lambda: cpl.check(guard + " || v00012 == q",
                                              Schema(("A",), variables)))
    assert "'v00012' is not a declared variable; did you mean 'v000012', 'v000102' or " \
           "'v000112'?" in str(error) and seconds < 20


def test_names_built_to_share_their_halves_are_refused_before_they_are_compared(monkeypatch):
    monkeypatch.setattr(spelling, "MOST_COMPARED", 10_000)
    variables = frozenset("x" + "a" * 60 + f"{i:05d}" for i in range(20_000))
    guard = " || ".join("x" + "a" * 60 + f"{i:03d}zz == q" for i in range(100))
    spelling.by_length.cache_clear()
    error, seconds = _timed(lambda: cpl.check(guard, Schema(("A",), variables)))
    assert isinstance(error, cpl.GuardError) and seconds < 10
    assert str(error) == ("guard: error: the guard's bare names are spelt too much like 20,000 "
                          "declared variables to check them all for a misspelling; quote the "
                          "names that are constants, or declare them symbols")
    # quoted, nothing is looked for
    quoted = guard.replace("x" + "a" * 60, '"x' + "a" * 60).replace("zz ==", 'zz" ==')
    assert cpl.check(quoted, Schema(("A",), variables)).canonical == quoted


# ------------------------------------------------------------------ property


def _distance_is_one(a: str, b: str) -> bool:
    """Optimal string alignment distance == 1, by the textbook table (the reference)."""
    rows = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            rows[i][j] = min(rows[i - 1][j] + 1, rows[i][j - 1] + 1,
                             rows[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                rows[i][j] = min(rows[i][j], rows[i - 2][j - 2] + 1)
    return rows[-1][-1] == 1


IDENT = st.text("abc_", min_size=1, max_size=7).map(lambda s: "v" + s)


# the ways a pair is found: by the halves alone; by the deletions of a variable filed with
# any name; and compared with every name filed with it (no name indexed by its deletions)
WAYS = [(8, 64), (0, 64), (0, 0)]


@pytest.mark.parametrize("few, indexed", WAYS)
@given(variables=st.sets(IDENT, min_size=1, max_size=12),
       names=st.lists(IDENT, min_size=1, max_size=8), symbols=st.sets(IDENT, max_size=4))
def test_refused_exactly_when_one_edit_from_a_variable(few, indexed, variables, names, symbols):
    symbols -= variables
    schema = Schema(variables=frozenset(variables), symbols=frozenset(symbols) or None)
    spelling.by_length.cache_clear()
    saved = spelling._FEW, spelling._INDEXED
    spelling._FEW, spelling._INDEXED = few, indexed
    try:
        found = misspelt(names, schema)
    finally:
        spelling._FEW, spelling._INDEXED = saved
    for name in names:
        near = sorted(v for v in variables if len(v) >= 3 and _distance_is_one(name, v))
        if name in variables or name in symbols or len(name) < 3 or not near:
            assert name not in found  # far names stay symbols; listed ones are never errors
        else:
            assert found[name] == tuple(near[:3])
    far = [n for n in names if n not in variables and n not in found]
    guard = " && ".join(f"{n} == 1" for n in far) or "true"
    if schema.symbols is None:  # open: every far name resolves to the string of its name
        formula = cpl.check(guard, schema).formula
        terms = [t for node in cpl.ast.walk(formula) for t in cpl.ast.terms(node)]
        assert {t.name for t in terms if isinstance(t, cpl.ast.Symbol)} == set(far)


@given(st.text(min_size=0, max_size=9), st.text(min_size=0, max_size=9))
def test_one_edit_apart_agrees_with_the_table(a, b):
    assert one_edit_apart(a, b) == _distance_is_one(a, b) == one_edit_apart(b, a)
