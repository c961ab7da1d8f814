"""Names and values are data, never code: hostile lifelines, variables, symbols and
strings reach every path that generates monitor source, and the monitor still agrees
with the reference evaluator while a canary (a file, a global) is never touched."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback

import pytest

from cpl.lang import ast, desugar, Registry
from cpl import check
from cpl.monitor import offline, OwnedFormula, compile_guards
from cpl.semantics import reference
from cpl.errors import EvaluationError
from cpl.trace.files import loads_trace

CANARY_HIT = False  # set by injected code, if any ever ran


def hostile(canary_path) -> list[str]:
    """Names that break out of a def name, a docstring, a comment or a string literal."""
    touch = f"__import__('pathlib').Path({str(canary_path)!r}).touch()"
    return [
        "agent-1", "Test Runner", "a'b", 'a"b', "#hash", "ü\u00e9\u4e2d",
        f"x\n{touch}\n", f"x\r{touch}", f"x\x0c{touch}", f"x\u2028{touch}",
        f'"""\n{touch}\n"""', f"'''\n{touch}\n'''", touch,
        "\nglobal CANARY_HIT\nCANARY_HIT = True\n#", "\\", "\\\n" + touch,
        "L" * 5000 + "\n" + touch,
    ]


@pytest.fixture
def canary(tmp_path):
    path = tmp_path / "canary"
    yield path
    assert not path.exists(), "a name was executed as code"
    assert CANARY_HIT is False and "CANARY_HIT" not in dir(__builtins__)


def _trace(names: list[str], values: list[str]):
    """Every lifeline sets every hostile variable to a hostile value, then messages
    chain them all, so @B(...), @B.x and P read across every name."""
    events, n = [], len(names)
    for i, lifeline in enumerate(names):
        events.append({"id": f"a{i}", "lifeline": lifeline, "kind": "act",
                       "set": {"v": values[i % len(values)],
                               **{name: values[(i + k) % len(values)]
                                  for k, name in enumerate(names)}}})
    for i in range(n - 1):
        events += [{"id": f"s{i}", "lifeline": names[i], "kind": "send", "to": names[i + 1],
                    "msg": f"m{i}"},
                   {"id": f"r{i}", "lifeline": names[i + 1], "kind": "recv", "msg": f"m{i}"}]
    events.append({"id": "c", "lifeline": names[-1], "kind": "choice"})
    return {"format": "cpl-msc/1", "lifelines": names, "events": events}


def _formulas(names: list[str], values: list[str]) -> list:
    """ASTs built directly: the grammar cannot spell these names."""
    out = []
    for i, name in enumerate(names):
        other = names[(i + 1) % len(names)]
        value = values[i % len(values)]
        out += [
            ast.At(name, ast.Compare("==", ast.Var(other), ast.Const(value))),
            ast.Compare("!=", ast.Remote(name, other), ast.Symbol(value)),
            ast.Past(ast.Compare("==", ast.Var(name), ast.Const(value))),
            ast.Since(ast.Truth(ast.Var(name)), ast.Seen(other)),
            ast.Pred("startswith", (ast.Remote(other, name), ast.Symbol(name[:3]))),
        ]
    return out


def test_directly_built_formulas_with_hostile_names_compile_and_agree(canary):
    names = hostile(canary)
    trace = loads_trace(json.dumps(_trace(names, names[::-1])))
    formulas = _formulas(names, names[::-1])
    primitives = [desugar(f, trace.lifelines) for f in formulas]
    for owner in (None, names[3]):
        program = compile_guards([OwnedFormula(owner, p) for p in primitives], trace.lifelines)
        for local in program.locals:  # one physical line per generated line, whatever the names
            assert len(local.source.splitlines()) == local.source.count("\n")
            compile(local.source, "<check>", "exec")
        got = {f: [] for f in formulas}
        for event, monitor in offline.replay(trace, program):
            for f, p in zip(formulas, primitives):
                if owner in (None, event.lifeline):
                    got[f].append(monitor.value(p))
        for f in formulas:
            want = [v for e, v in reference.evaluate_all(trace, f)
                    if owner in (None, e.lifeline)]
            assert got[f] == want
    assert any(got[f] for f in formulas) and not all(all(got[f]) for f in formulas)


def test_offline_evaluation_over_hostile_lifelines_and_string_values(canary):
    names = hostile(canary)
    trace = loads_trace(json.dumps({
        "format": "cpl-msc/1", "lifelines": names, "vars": ["v"],
        "events": [{"id": f"e{i}", "lifeline": n, "kind": "act", "set": {"v": n}}
                   for i, n in enumerate(names)]}))
    for value in (names[6], names[10], names[16]):
        guard = "P v == " + json.dumps(value)  # a JSON string is a CPL string literal here
        for lifeline in (None, names[1]):
            monitor = offline.evaluate_trace(trace, guard, lifeline)
            literal = reference.evaluate_all(trace, check(guard, trace.schema()).formula, lifeline)
            assert [v for _, v in monitor] == [v for _, v in literal]
            assert any(v for _, v in monitor) is (lifeline is None)


def cpl_command(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "runtime.cli", *args], capture_output=True,
                          text=True, timeout=60, cwd=cwd)


def test_cpl_eval_on_a_trace_file_with_hostile_names(canary, tmp_path):
    names = hostile(canary)
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(_trace(names, names[::-1])), encoding="utf-8")
    outputs = []
    for engine in ("monitor", "reference"):
        result = cpl_command("eval", str(path), "P v == " + json.dumps(names[-1]),
                             "--format", "jsonl", "--engine", engine)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    rows = [json.loads(line) for line in outputs[0].splitlines()]
    assert [row["lifeline"] for row in rows][:len(names)] == names
    assert {row["value"] for row in rows} == {True, False}


def test_cpl_check_monitor_with_a_hostile_owner_and_string(canary):
    for name in hostile(canary):
        value = json.dumps(name).replace("\\f", "\\u000c")  # CPL has no \f escape
        result = cpl_command("check", f"x == {value} && Y x != {value}", "--monitor", name)
        assert result.returncode == 0, result.stderr
        assert len(result.stdout.splitlines()) == result.stdout.count("\n")
        namespace: dict = {}
        exec(compile(result.stdout, "<printed monitor>", "exec"), namespace)  # defines only
        assert callable(namespace["monitor"])


def test_generated_source_shows_in_tracebacks_without_the_raw_name(canary):
    registry = Registry()

    def explode(value):
        raise RuntimeError("boom")

    registry.register("explode", explode)
    name = hostile(canary)[6]
    formula = ast.Pred("explode", (ast.Var("x"),))
    program = compile_guards([OwnedFormula(name, formula)], [name], predicates=registry)
    from cpl.monitor import Monitor
    monitor = Monitor(program, name, {"x": 1})
    with pytest.raises(EvaluationError) as raised:
        monitor.act()
    frames = traceback.extract_tb(raised.value.__traceback__)
    generated = [f for f in frames if f.filename.startswith("<cpl monitor")]
    assert generated and "explode" in generated[0].line
    assert all(name not in f.filename and f.filename.isprintable() for f in generated)


def test_odd_values_become_namespace_constants_not_source():
    class Sneaky(str):
        def __repr__(self):
            return "__import__('os')"

    for value in (float("nan"), float("inf"), Sneaky("s"), 10 ** 30):
        formula = ast.Compare("==", ast.Var("x"), ast.Const(value))
        program = compile_guards([OwnedFormula("A", formula)], ["A"])
        assert "__import__" not in program.local("A").source
    with pytest.raises(ValueError, match="comparison operator"):
        compile_guards([OwnedFormula("A", ast.Compare("==1 or __import__('os')#", ast.Var("x"),
                                                      ast.Const(1)))], ["A"])
