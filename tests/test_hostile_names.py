"""Names and values are data, never code: hostile lifelines, variables, symbols and
strings reach every path that generates monitor source, and the monitor still agrees
with the reference evaluator while a canary (a file, a global) is never touched."""

from __future__ import annotations

import json
import subprocess
import sys
import traceback
import xml.etree.ElementTree as ET

import pytest

from cpl.lang import ast, desugar, Registry
from cpl import check
from cpl.monitor import offline, OwnedFormula, compile_guards
from cpl.semantics import reference
from cpl.errors import EvaluationError
from cpl.trace.files import loads_trace
from needs import needs_dot

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
    return subprocess.run([sys.executable, "-m", "cpl_cli", *args], capture_output=True,
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


# ------------------------------------------ hostile traces through every command
# Each trace is accepted end to end (its odd characters shown escaped) or refused with a
# message naming the event and the field: never a traceback, never an internal error.

CONTROL = "A\x00\x1b[2J\r\n\x07\u2028\x7f\x85\u202eZ"  # NUL, ESC, CR, LF, BEL, LS, DEL, C1, RLO
UNSAFE_ON_A_TERMINAL = ("\x00", "\x1b", "\r", "\x07", "\x7f", "\x85", "\u202e")


def _doc(lifelines, *events, **top) -> dict:
    return {"format": "cpl-msc/1", "lifelines": list(lifelines), "events": list(events), **top}


def _control_everywhere() -> dict:
    return _doc([CONTROL, "B"],
                {"id": "a" + CONTROL, "lifeline": CONTROL, "kind": "act",
                 "set": {"v" + CONTROL: CONTROL}, "label": CONTROL},
                {"id": "s", "lifeline": CONTROL, "kind": "send", "to": "B", "msg": CONTROL,
                 "label": CONTROL, "payload": {CONTROL: [CONTROL]}},
                {"id": "r", "lifeline": "B", "kind": "recv", "msg": CONTROL},
                {"id": "c", "lifeline": "B", "kind": "choice", "guard": "true",
                 "outcome": True, "label": CONTROL},
                meta={"status": "failed", "error": CONTROL, "choreography": CONTROL})


ACCEPTED = {
    "control characters in every name, label and value": _control_everywhere(),
    "an integer of 401 digits in a value": _doc(["A"], {"id": "c", "lifeline": "A",
                                                       "kind": "choice", "set": None,
                                                       "payload": 10 ** 400}),
    "a NUL in a lifeline name": _doc(["A\x00B"], {"id": "c", "lifeline": "A\x00B",
                                                  "kind": "choice"}),
}
ACCEPTED["an integer of 401 digits in a value"]["events"][0].pop("set")

# (the document, the text the refusal must hold: the event and the field)
REFUSED = {
    "a time of 401 digits": (_doc(["A"], {"id": "c", "lifeline": "A", "kind": "act",
                                          "time": 10 ** 400}),
                             "event #0 'c' (A): \"time\" must be a number of seconds"),
    "a lone surrogate naming a lifeline": (_doc(["\ud800"], {"id": "c", "lifeline": "\ud800",
                                                             "kind": "act"}),
                                           "\"lifelines\" holds '\\ud800', a lone surrogate"),
    "a lone surrogate as an id": (_doc(["A"], {"id": "\udfff", "lifeline": "A", "kind": "act"}),
                                  "event #0 '\\udfff': \"id\" holds"),
    "a lone surrogate naming a variable": (
        _doc(["A"], {"id": "c", "lifeline": "A", "kind": "act", "set": {"\udc00": 1}}),
        "event #0 'c': \"set\" holds '\\udc00'"),
    "a lone surrogate in a value": (
        _doc(["A"], {"id": "c", "lifeline": "A", "kind": "act", "set": {"x": "a\ud800"}}),
        "event #0 'c': \"set\" holds 'a\\ud800'"),
    "a lone surrogate in a message label": (
        _doc(["A", "B"], {"id": "s", "lifeline": "A", "kind": "send", "to": "B", "msg": "m",
                          "label": "\ud800"}),
        "event #0 's': \"label\" holds"),
    "a lone surrogate in a guard": (
        _doc(["A"], {"id": "c", "lifeline": "A", "kind": "choice", "guard": "x == \"\ud800\"",
                     "outcome": True}),
        "event #0 'c': \"guard\" holds"),
    "a lone surrogate in meta": (_doc(["A"], meta={"error": "\udbff"}), '"meta"'),
}

COMMANDS = [  # PNG (graphviz's dot draws it from the DOT text) apart: test_..._through_png
    ("eval",), ("eval", "true"), ("eval", "true", "--format", "jsonl"),
    ("explain", "c", "true"), ("explain", "c", "true", "--format", "json"),
    ("render", "-o", "OUT.dot"), ("render", "-o", "OUT.svg"),
    ("render", "-o", "OUT.html"), ("render", "-o", "OUT.log"),
]
PNG = ("render", "-o", "OUT.png")


def _cpl(capsys, tmp_path, trace_path, command) -> tuple[int, str, str]:
    from cpl_cli import main
    args = [command[0], str(trace_path),
            *(str(tmp_path / a) if a.startswith("OUT") else a for a in command[1:])]
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _written(tmp_path, form: str, document: dict) -> object:
    """The document in ``form``: a JSON document, or a .jsonl stream (json.dumps escapes
    every odd character, so a surrogate arrives as the ``\\ud800`` escape a hostile file
    would hold)."""
    if form == "json":
        path = tmp_path / "t.json"
        path.write_text(json.dumps(document), encoding="ascii")
        return path
    header = {key: value for key, value in document.items() if key not in ("events", "meta")}
    lines = [header, *document["events"], {"end": document.get("meta", {})}]
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="ascii")
    return path


@pytest.mark.parametrize("form", ["json", "jsonl"])
@pytest.mark.parametrize("name", list(ACCEPTED))
def test_hostile_traces_are_shown_escaped_by_every_command(capsys, tmp_path, name, form):
    path = _written(tmp_path, form, ACCEPTED[name])
    for command in COMMANDS:
        code, out, err = _cpl(capsys, tmp_path, path, command)
        assert code == 0, (command, err)
        assert "internal error" not in err and "Traceback" not in err
        if command[0] != "render":  # what a terminal shows obeys no control character
            assert not any(char in out + err for char in UNSAFE_ON_A_TERMINAL), command
    svg = (tmp_path / "OUT.svg").read_text(encoding="utf-8")
    ET.fromstring(svg)  # well-formed XML: no control character left in it
    assert not any(char in (tmp_path / "OUT.dot").read_text(encoding="utf-8")
                   for char in UNSAFE_ON_A_TERMINAL)
    if name.startswith("control"):
        assert "A\\x00\\x1b[2J\\r\\n\\x07\\u2028\\x7f\\x85\\u202eZ" in svg  # shown, escaped
    html = (tmp_path / "OUT.html").read_text(encoding="utf-8")
    assert "\x00" not in html and "\x1b" not in html


@pytest.mark.parametrize("form", ["json", "jsonl"])
@pytest.mark.parametrize("name", list(REFUSED))
def test_hostile_traces_are_refused_naming_the_event_and_field(capsys, tmp_path, name, form):
    document, expected = REFUSED[name]
    path = _written(tmp_path, form, document)
    for command in COMMANDS:
        code, out, err = _cpl(capsys, tmp_path, path, command)
        assert code == 1 and out == "", (command, err)
        if form == "jsonl":  # a line is read before its event's index is known
            assert f"{path}: line " in err
            expected = expected if "time" in expected else expected.replace("#0 ", "")
        assert expected in err and err.count("\n") == 1, (command, err)
        assert "internal error" not in err and "Traceback" not in err


NUL_GUARD = _doc(["A"], {"id": "c", "lifeline": "A", "kind": "choice", "guard": "x\x00",
                         "outcome": True})


def test_a_nul_in_a_recorded_guard_is_drawn_and_refused_as_a_guard(capsys, tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(NUL_GUARD))
    for command in COMMANDS:
        code, out, err = _cpl(capsys, tmp_path, path, command)
        assert "internal error" not in err and "\x00" not in out + err
        assert code == (0 if command[0] == "render" or "true" in command else 2), (command, err)
    assert "x\\x00" in (tmp_path / "OUT.svg").read_text(encoding="utf-8")


@needs_dot
@pytest.mark.parametrize("form", ["json", "jsonl"])
def test_hostile_traces_through_png(capsys, tmp_path, form):
    """What the other commands accept graphviz draws; what they refuse PNG refuses alike."""
    accepted = {**ACCEPTED, "a NUL in a recorded guard": NUL_GUARD}
    for name, document in accepted.items():
        code, out, err = _cpl(capsys, tmp_path, _written(tmp_path, form, document), PNG)
        assert code == 0 and out == "" and "Traceback" not in err, (name, err)
        assert (tmp_path / "OUT.png").read_bytes().startswith(b"\x89PNG"), name
        (tmp_path / "OUT.png").unlink()
    for name, (document, expected) in REFUSED.items():
        path = _written(tmp_path, form, document)
        code, out, err = _cpl(capsys, tmp_path, path, PNG)
        if form == "jsonl":
            assert f"{path}: line " in err, (name, err)
            expected = expected if "time" in expected else expected.replace("#0 ", "")
        assert code == 1 and out == "" and expected in err and err.count("\n") == 1, (name, err)
        assert not (tmp_path / "OUT.png").exists(), name


@pytest.mark.parametrize("guard", ['x == "a\\u0000\\u001b[2J"', 'x == "\\ud800"',
                                   'x == "\udcff"', "x == " + "9" * 401, "x\x00", "x\x1b"])
def test_cpl_check_shows_hostile_guards_escaped(capsys, guard):
    from cpl_cli import main
    for form in ("text", "json"):
        code = main(["check", guard, "--format", form])
        out, err = capsys.readouterr()
        assert code in (0, 2) and (code == 0) == (out != ""), err
        assert "internal error" not in err
        assert not any(char in out + err for char in UNSAFE_ON_A_TERMINAL)


def test_cpl_show_escapes_control_characters_in_labels(capsys, tmp_path):
    from cpl_cli import main
    path = tmp_path / "choreo.py"
    path.write_text("from choreo import Choreography\n"
                    "c = Choreography('h')\n"
                    "A, B = c.lifelines('A', 'B')\n"
                    "x = c.var('x', int)\n"
                    "c.set(A, x=1)\n"
                    "c.send(A, B, x, label='m\\x00\\x1b[2J')\n")
    assert main(["show", str(path)]) == 0
    out, err = capsys.readouterr()
    assert '"m\\x00\\x1b[2J"' in out and err == ""
