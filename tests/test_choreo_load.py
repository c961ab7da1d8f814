"""Loading a CHOREO.py: every failure is one message at the user's file and line, exit 2."""

import pytest

import choreo
from choreo import ChoreographyError
from choreo_util import cpl, marked, write


def load_error(path) -> ChoreographyError:
    with pytest.raises(ChoreographyError) as caught:
        choreo.load_one(str(path))
    return caught.value


def test_syntax_error_points_at_the_line_with_a_caret(tmp_path):
    path = write(tmp_path, """
c = Choreography("x")
A = c.lifeline("A"  # <-
""")
    error = load_error(path)
    assert error.where.path == str(path)
    assert error.message.startswith("syntax error:")
    assert "^" in error.detail


def test_exception_while_loading_points_at_the_users_line(tmp_path):
    path = write(tmp_path, """
c = Choreography("x")
A = c.lifeline("A")
c.send(A, Bee, "x")  # <-
""")
    error = load_error(path)
    assert (error.where.path, error.where.line) == (str(path), marked(path))
    assert error.message == "NameError: name 'Bee' is not defined"


def test_exception_inside_a_helper_function_reports_the_innermost_user_line(tmp_path):
    path = write(tmp_path, """
c = Choreography("x")
def broken():
    return 1 / 0  # <-
broken()
""")
    error = load_error(path)
    assert error.where.line == marked(path)
    assert error.message == "ZeroDivisionError: division by zero"


def test_misused_dsl_raises_at_the_users_line(tmp_path):
    path = write(tmp_path, """
c = Choreography("x")
A = c.lifeline("A")
with c.else_():  # <-
    pass
""")
    error = load_error(path)
    assert error.where.line == marked(path)
    assert error.message == "c.else_() must directly follow a `with c.if_(...)` block"


def test_statements_directly_inside_parallel(tmp_path):
    path = write(tmp_path, """
c = Choreography("x")
A = c.lifeline("A")
x = c.var("x", int)
with c.parallel():
    c.set(A, x=1)  # <-
""")
    error = load_error(path)
    assert error.where.line == marked(path)
    assert "put statements in `with c.thread():` blocks" in error.message


def test_sys_exit_in_the_file(tmp_path):
    path = write(tmp_path, """
import sys
sys.exit(3)  # <-
""")
    error = load_error(path)
    assert error.where.line == marked(path)
    assert error.message == "the file called sys.exit"


def test_no_choreography_in_the_file(tmp_path):
    path = write(tmp_path, "x = 1\n")
    error = load_error(path)
    assert error.message == "the file defines no Choreography at module level"
    assert error.render().startswith(f"{path}: error:")


def test_several_choreographies_need_a_name(tmp_path):
    path = write(tmp_path, """
one = Choreography("one")
two = Choreography("two")
""")
    error = load_error(path)
    assert error.message == "the file defines several choreographies: one, two"
    assert "--name" in error.detail
    assert choreo.load_one(str(path), "two").name == "two"
    with pytest.raises(ChoreographyError, match="no choreography named 'three'"):
        choreo.load_one(str(path), "three")


def test_missing_file(tmp_path):
    error = load_error(tmp_path / "nope.py")
    assert error.message == "no such choreography file"


def test_the_file_may_import_its_neighbours(tmp_path):
    (tmp_path / "helpers.py").write_text("ROUNDS = 4\n")
    path = write(tmp_path, """
from helpers import ROUNDS
c = Choreography("x")
A = c.lifeline("A")
n = c.input("n", int, default=ROUNDS)
""")
    assert choreo.load_one(str(path)).inputs["n"].default == 4


@pytest.mark.parametrize("body", [
    'c = Choreography("x")\nA = c.lifeline("A"\n',
    'c = Choreography("x")\nundefined_name\n',
    'c = Choreography("x")\nwith c.thread():\n    pass\n',
])
def test_cli_reports_load_errors_without_traceback(tmp_path, body):
    path = write(tmp_path, body)
    for command in ("validate", "show"):
        result = cpl(command, path)
        assert result.returncode == 2
        assert result.stderr.startswith(f"{path}:")
        assert "Traceback" not in result.stderr


def test_cli_name_option(tmp_path):
    path = write(tmp_path, """
one = Choreography("one")
A = one.lifeline("A")
two = Choreography("two")
B = two.lifeline("B")
""")
    assert cpl("validate", path).returncode == 2
    result = cpl("show", path, "--name", "two")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "B:\n  (nothing)\n"


def test_a_file_with_a_sub_choreography_picks_the_one_that_includes_it(tmp_path):
    path = write(tmp_path, """
ask = Choreography("ask")
Asker, Answerer = ask.lifelines("Asker", "Answerer")
q = ask.var("q", int, init=1)
ask.send(Asker, Answerer, q)

main = Choreography("main")
A, B = main.lifelines("A", "B")
main.include(ask, lifelines={Asker: A, Answerer: B})
main.include(ask, lifelines={Asker: B, Answerer: A})
""")
    assert choreo.load_one(str(path)).name == "main"
    assert choreo.load_one(str(path), "ask").name == "ask"
    result = cpl("show", path, "--lifeline", "A")
    assert result.stdout == "A:\n  send q → B\n  recv q ← B\n"


def test_a_guard_keyword_cannot_name_a_lifeline(tmp_path):
    path = write(tmp_path, """
c = Choreography("x")
A, O = c.lifelines("A", "O")  # <-
""")
    error = load_error(path)
    assert error.where.line == marked(path)
    assert error.message.startswith("'O' cannot name a lifeline: use an identifier that is not a "
                                    "guard keyword")
