"""No step is exponential in a guard's size: nested P (whose desugared tree doubles
per level), nested O/H/Y/@, P over many lifelines, and formulas deeper than
Python's recursion limit all check, print, compile and ship in bounded time."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

import cpl
from cpl import Schema, parse
from cpl.lang import ast, desugar
from cpl.monitor import OwnedFormula, compile_guards
from cpl.lang.desugar import resugar

THREE = Schema(lifelines=("A", "B", "C"))
LIMIT_SECONDS = 5
LIMIT_BYTES = 1_000_000


def nested(prefix: str, depth: int, inner: str = "x") -> str:
    return prefix * depth + inner


GUARDS = {
    "P": nested("P ", 14),
    "O": nested("O ", 40),
    "H": nested("H ", 40),
    "Y": nested("Y ", 40),
    "@": "@A(" * 30 + "x" + ")" * 30,
    "mixed": nested("P O H Y ", 8),
    "P@": nested("P @B(", 12, "x") + ")" * 12,
}


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_check_json_and_compile_are_polynomial(name):
    start = time.process_time()
    guard = cpl.check(GUARDS[name], THREE)
    shipped = json.dumps(guard.to_json())
    program = compile_guards([OwnedFormula("A", guard.primitive)], THREE.lifelines)
    assert time.process_time() - start < LIMIT_SECONDS
    assert len(shipped) < LIMIT_BYTES and len(guard.canonical) < 4 * len(GUARDS[name])
    assert sum(len(local.source) for local in program.locals) < 4 * LIMIT_BYTES


def test_shipped_formulas_check_back_to_what_is_shipped():
    guard = cpl.check(nested("P ", 14) + " && P (y S P z)", THREE)
    remote = guard.to_json()["remote"]
    shipped = cpl.exports([guard.primitive])
    for lifeline, entry in remote.items():
        for text, formula in zip(entry["formulas"], shipped[lifeline].formulas, strict=True):
            assert "P" in text or "@" not in text  # folded, not the primitive expansion
            assert cpl.check(text, THREE).primitive == formula


def test_resugar_inverts_desugar_on_generic_past():
    lifelines = tuple(f"L{i}" for i in range(7))
    formula = parse(nested("P ", 6, "x && P @L3(y)"))
    primitive = desugar(formula, lifelines)
    assert desugar(resugar(primitive, lifelines), lifelines) == primitive
    assert cpl.to_text(resugar(primitive, lifelines)) == "P P P P P P x && @L3(true S y)"


def test_generic_past_over_many_lifelines_nested_twelve_deep():
    lifelines = tuple(f"L{i}" for i in range(12))
    start = time.process_time()
    guard = cpl.check(nested("P ", 12), Schema(lifelines=lifelines))
    shipped = json.dumps(guard.to_json())
    compile_guards([OwnedFormula("L0", guard.primitive)], lifelines)
    assert time.process_time() - start < LIMIT_SECONDS
    assert len(shipped) < LIMIT_BYTES


def test_cpl_check_json_of_nested_past_is_small_and_quick():
    start = time.monotonic()
    guard = nested("P ", 14) + " && @A(y)"
    result = subprocess.run([sys.executable, "-m", "cpl_cli", "check", guard, "--format", "json"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert time.monotonic() - start < LIMIT_SECONDS + 3  # interpreter start included
    assert len(result.stdout) < LIMIT_BYTES
    assert json.loads(result.stdout)["subformulas"] < 200


def test_past_over_thousands_of_lifelines_recurses_nowhere():
    lifelines = tuple(f"L{i}" for i in range(3000))
    guard = cpl.check("P x && P (y || Seen(L7))", Schema(lifelines=lifelines))
    assert guard.to_json()["subformulas"] > 6000
    assert cpl.to_text(resugar(guard.primitive, lifelines)) == "P x && P (y || @L7(true))"


def test_formulas_deeper_than_the_recursion_limit_compile():
    formula = ast.Compare("==", ast.Var("x"), ast.Const(1))
    for level in range(3 * sys.getrecursionlimit()):
        if level % 2:
            formula = ast.Prev(formula)
        else:
            formula = ast.And(ast.Not(formula), ast.Truth(ast.Var("y")))
    program = compile_guards([OwnedFormula("A", formula)], ["A", "B"])
    assert len(program.local("A").slots) > 3 * sys.getrecursionlimit()


def test_eval_of_a_deep_guard_on_a_trace_with_both_engines():
    guard = "P H " * 49 + "status == passed"  # 300 primitive levels, shared
    outputs = [subprocess.run([sys.executable, "-m", "cpl_cli", "eval",
                               "examples/traces/fig2.json", guard, "--format", "jsonl",
                               "--engine", engine], capture_output=True, text=True, timeout=60)
               for engine in ("monitor", "reference")]
    assert [o.returncode for o in outputs] == [0, 0], outputs[0].stderr + outputs[1].stderr
    assert outputs[0].stdout == outputs[1].stdout and '"value": true' in outputs[0].stdout


def test_equality_of_deep_and_shared_formulas_recurses_nowhere():
    left = right = ast.Compare("==", ast.Var("x"), ast.Const(1))
    for _ in range(5000):
        left, right = ast.Not(left), ast.Not(right)
    assert left == right and not left != right
    shared_left, shared_right = ast.Bool(True), ast.Bool(True)
    for _ in range(200):  # a tree of 2**200 leaves, as nested P builds
        shared_left = ast.And(shared_left, shared_left)
        shared_right = ast.And(shared_right, shared_right)
    assert shared_left == shared_right
    assert ast.And(shared_left, ast.Bool(False)) != ast.And(shared_right, ast.Bool(True))
