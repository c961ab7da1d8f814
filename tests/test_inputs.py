"""``--arg`` values are hostile text: non-finite numbers and deep JSON are clear errors; so
are paths that are not what they should be, and values an action gives that no trace holds."""

import subprocess
import sys

import pytest

from choreo import ChoreographyError, Choreography
from choreo.authoring.inputs import MAX_DEPTH, parse_args
from choreo_util import cpl, write


def choreography():
    c = Choreography("inputs")
    A, B = c.lifelines("A", "B")
    c.input("ratio", float, default=1.0, at=A)
    c.input("data", object, default=None, at=A)
    c.input("count", int, default=0, at=A)
    return c


@pytest.mark.parametrize("text", ["NaN", "nan", "inf", "-Infinity", "1e999", "-1e400"])
def test_a_float_must_be_finite(text):
    with pytest.raises(ChoreographyError, match="is not a finite number") as caught:
        parse_args(choreography(), [f"ratio={text}"])
    assert caught.value.message.startswith(f"input 'ratio': {text!r} is not a finite number")


@pytest.mark.parametrize("text", ["NaN", "[1, Infinity]", '{"a": -Infinity}', "[1e999]"])
def test_json_must_hold_finite_numbers(text):
    with pytest.raises(ChoreographyError, match="input 'data': .*finite|too large"):
        parse_args(choreography(), [f"data={text}"])


@pytest.mark.parametrize("opening", ["[", "{\"a\": "])
def test_deeply_nested_json_is_refused_before_decoding(opening):
    text = opening * 100_000
    with pytest.raises(ChoreographyError, match="nested 100000 levels deep; at most 100"):
        parse_args(choreography(), [f"data={text}"])


def test_nesting_up_to_the_limit_and_brackets_inside_strings_are_fine():
    deep = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    nested = []
    for _ in range(MAX_DEPTH - 1):
        nested = [nested]
    assert parse_args(choreography(), [f"data={deep}"])["data"] == nested  # JSON, not text
    text = '["' + "[" * 1000 + '\\"[{"]'
    assert parse_args(choreography(), [f"data={text}"])["data"] == ["[" * 1000 + '"[{']


def test_ordinary_values_still_parse():
    values = parse_args(choreography(), ["ratio=0.5", 'data={"k": [1, 2.5]}', "count=3"])
    assert values == {"ratio": 0.5, "data": {"k": [1, 2.5]}, "count": 3}
    assert parse_args(choreography(), ["data=plain text"])["data"] == "plain text"


def test_a_huge_value_is_quoted_short():
    with pytest.raises(ChoreographyError) as caught:
        parse_args(choreography(), ["count=" + "x" * 1_000_000])
    assert len(caught.value.render()) < 300


def test_typed_values_must_be_finite_too():
    with pytest.raises(ChoreographyError, match="finite"):
        parse_args(choreography(), given={"ratio": float("nan")})


@pytest.mark.parametrize("arg", ["ratio=NaN", "data=" + "[" * 100_000, "ratio=1e999"])
def test_cli_run_exits_2_without_a_traceback(tmp_path, arg):
    path = write(tmp_path, """
c = Choreography("inputs")
A, B = c.lifelines("A", "B")
ratio = c.input("ratio", float, default=1.0, at=A)
data = c.input("data", object, default=None, at=A)
c.send(A, B, ratio)
""")
    result = cpl("run", path, "--sim", "--arg", arg)
    assert result.returncode == 2, result.stderr
    assert "error: input '" in result.stderr
    assert "Traceback" not in result.stderr


def test_an_unknown_input_suggests_the_closest():
    with pytest.raises(ChoreographyError) as caught:
        parse_args(choreography(), ["ration=2"])
    assert caught.value.message == "unknown input 'ration'; did you mean 'ratio'?"
    assert "the inputs are ratio, data, count" in caught.value.detail


def _relay(tmp_path):
    return write(tmp_path, """
c = Choreography("relay")
A, B = c.lifelines("A", "B")
x = c.var("x", int)
c.set(A, x=1)
c.send(A, B, x)
""")


@pytest.mark.parametrize(("target", "expected"), [
    ("/proc/t.jsonl", "--trace: /proc/t.jsonl: cannot write the trace: the directory '/proc' "
                      "is not writable (No such file or directory)"),  # found by opening it
    ("/nonexistent/t.jsonl", "--trace /nonexistent/t.jsonl: the directory '/nonexistent' does "
                             "not exist"),  # found by looking at it (cpl_cli.outputs)
    ("/etc/hostname/t.jsonl", "--trace /etc/hostname/t.jsonl: '/etc/hostname' is not a "
                              "directory"),
    (".", "--trace .: it is a directory; name a file in it"),
])
def test_an_unusable_trace_path_says_what_is_wrong_with_it(tmp_path, target, expected):
    result = cpl("run", _relay(tmp_path), "--sim", "--trace", target, cwd=tmp_path)
    assert result.returncode == 2
    assert result.stderr == f"cpl run: {expected}\n"


def test_render_says_why_it_cannot_write_its_output(tmp_path):
    """Before the picture is drawn: a usage error (cpl_cli.outputs)."""
    trace = tmp_path / "t.json"
    assert cpl("run", _relay(tmp_path), "--sim", "--trace", trace).returncode == 0
    result = cpl("render", trace, "-o", "/proc/t.dot")
    assert result.returncode == 2
    assert result.stderr == ("cpl render: -o /proc/t.dot: cannot write it: the directory "
                             "'/proc' is not writable (No such file or directory)\n")


@pytest.mark.parametrize("command", [("run",), ("validate",), ("show",), ("run", "--sim")])
def test_a_directory_is_not_a_choreography_file(tmp_path, command):
    result = cpl(command[0], tmp_path, *command[1:])
    assert result.returncode == 2
    assert result.stderr.startswith(f"{tmp_path}: error: a directory, not a choreography file")


@pytest.mark.parametrize(("value", "expected"), [
    ('"\\ud800"', "gave x = '\\ud800', which a trace cannot hold: it holds '\\ud800', a lone "
                   "surrogate, which UTF-8 cannot encode"),
    ("[1, {'k': '\\udc00'}]", "it holds '\\udc00', a lone surrogate"),
    ("10 ** 30", "it holds an integer outside the 64 bits a run records (-2**63 to 2**64-1)"),
    ("[-2 ** 63 - 1]", "it holds an integer outside the 64 bits"),
])
@pytest.mark.parametrize("mode", [("--sim",), ()])
@pytest.mark.parametrize("name", ["t.jsonl", "t.msgpack"])
def test_a_value_no_trace_holds_is_the_actions_named_error(tmp_path, value, expected, mode,
                                                          name):
    path = write(tmp_path, f"""
c = Choreography("odd")
A, B = c.lifelines("A", "B")
x = c.var("x", object)
c.act(A, lambda variables, rng: {value}, assigns=[x], label="make")
c.send(A, B, x)
""")
    result = cpl("run", path, *mode, "--trace", tmp_path / name)
    assert result.returncode == 1, result.stderr
    assert "action 'make' gave x = " in result.stderr and expected in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr
    assert cpl("eval", tmp_path / name).returncode == 0  # the trace up to it is whole


def test_a_hosts_file_that_is_no_file_or_too_long_is_refused_at_once(tmp_path):
    import os
    fifo, zero, long = tmp_path / "fifo.json", tmp_path / "zero.json", tmp_path / "long.json"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    long.write_text(" " * (2**20 + 1))
    for path, expected in ((fifo, "is not a regular file"), (zero, "is not a regular file"),
                           (long, "is longer than 1 MiB")):
        result = subprocess.run([sys.executable, "-m", "cpl_cli", "run", _relay(tmp_path),
                                 "--hosts", path], capture_output=True, text=True, timeout=30)
        assert result.returncode == 2
        assert result.stderr == f"cpl run: --hosts: {path} {expected}\n"


@pytest.mark.parametrize(("body", "expected"), [
    ('c = Choreography("s\\ud800")', "the choreography's name holds 's\\ud800', a lone "
                                     "surrogate"),
    ('c.send(A, B, x, label="m\\ud800")', "the label holds 'm\\ud800', a lone surrogate"),
    ('c.set(A, x="v\\udfff")', "c.set gives x a value that holds 'v\\udfff', a lone surrogate"),
    ('c.set(A, x=2 ** 70)', "c.set gives x a value that holds an integer outside the 64 bits"),
    ('c.input("n", object, default="q\\ud800")', "input 'n' holds 'q\\ud800', a lone surrogate"),
])
@pytest.mark.parametrize("mode", [("--sim",), ()])
def test_a_choreography_text_no_trace_holds_is_refused_before_the_run(tmp_path, body, expected,
                                                                    mode):
    """Names, labels, constants and defaults reach every trace: refused as the choreography's
    error (exit 2), where the run used to end in an internal error of the trace writer."""
    lines = ['c = Choreography("s")', 'A, B = c.lifelines("A", "B")',
             'x = c.var("x", object, init=0)', 'c.send(A, B, x)']
    lines.insert(0 if body.startswith("c = ") else 3, body)
    if body.startswith("c = "):
        del lines[1]
    path = write(tmp_path, "\n".join(lines) + "\n")
    result = cpl("run", path, *mode, "--trace", tmp_path / "t.jsonl")
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert "internal error" not in result.stderr and "Traceback" not in result.stderr


def test_an_argument_of_bytes_no_utf8_decodes_is_refused(tmp_path):
    """A shell passes bytes; Python reads undecodable ones as lone surrogates."""
    path = write(tmp_path, """
c = Choreography("seen")
A, B = c.lifelines("A", "B")
seen = c.input("seen", str, at=A)
c.send(A, B, seen)
""")
    result = subprocess.run([sys.executable, "-m", "cpl_cli", "run", path, "--sim",
                             "--arg", b"seen=\xed\xa0\x80"], capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2, result.stderr
    assert "input 'seen' holds '\\udced\\udca0\\udc80', a lone surrogate" in result.stderr


@pytest.mark.parametrize("command", [["check", "x == 1", "--schema"],
                                     ["lifeline", "A", "--connection"]])
def test_schema_and_connection_files_are_regular_and_bounded(tmp_path, command):
    import os
    fifo, zero, long = tmp_path / "fifo.json", tmp_path / "zero.json", tmp_path / "long.json"
    os.mkfifo(fifo, 0o600)
    zero.symlink_to("/dev/zero")
    with open(long, "w") as handle:
        handle.truncate((16 << 20) + 1)
    long.chmod(0o600)
    for path, expected in ((fifo, "regular file"), (zero, "regular file"), (long, "16 MiB")):
        result = subprocess.run([sys.executable, "-m", "cpl_cli", *command, path],
                                capture_output=True, text=True, timeout=30)
        assert result.returncode == 2, result.stderr
        assert expected in result.stderr and "Traceback" not in result.stderr
