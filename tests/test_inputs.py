"""``--arg`` values are hostile text: non-finite numbers and deep JSON are clear errors."""

import pytest

from choreo import ChoreographyError, Choreography
from choreo.inputs import MAX_DEPTH, parse_args
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
