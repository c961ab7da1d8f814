"""DSL calls that used to do nothing silently: block openers never entered with ``with``."""

import pytest

import choreo
from choreo_util import cpl, marked, write

PRELUDE = """
c = Choreography("case")
A, B = c.lifelines("A", "B")
x = c.var("x", int, init=0)
"""


def load_error(tmp_path, body):
    path = write(tmp_path, PRELUDE + body)
    with pytest.raises(choreo.ChoreographyError) as caught:
        choreo.analysis.validate(choreo.load_one(str(path)))
    error = caught.value
    assert error.kind == "never-entered", error.render()
    assert error.where.path == str(path) and error.where.line == marked(path), error.render()
    return error


@pytest.mark.parametrize("opener, call", [
    ('c.if_("x > 0", at=A)', "c.if_(...)"),
    ('c.while_("x < 3", at=A)', "c.while_(...)"),
    ("c.parallel()", "c.parallel()"),
])
def test_opener_followed_by_a_statement(tmp_path, opener, call):
    error = load_error(tmp_path, f"""
{opener}  # <-
c.set(A, x=1)
""")
    assert error.message == f"{call} was never entered: write `with {call}:`"


@pytest.mark.parametrize("opener", ['c.if_("x > 0", at=A)', "c.parallel()"])
def test_opener_at_the_end_of_the_file(tmp_path, opener):
    load_error(tmp_path, f"""
c.set(A, x=1)
{opener}  # <-
""")


def test_else_never_entered(tmp_path):
    error = load_error(tmp_path, """
with c.if_("x > 0", at=A):
    c.set(A, x=1)
c.else_()  # <-
c.send(A, B, x)
""")
    assert error.message == "c.else_() was never entered: write `with c.else_():`"


def test_thread_never_entered_inside_a_parallel(tmp_path):
    error = load_error(tmp_path, """
with c.parallel():
    with c.thread():
        c.set(A, x=1)
    c.thread()  # <-
""")
    assert "c.thread()" in error.message


def test_opener_never_entered_inside_a_block_is_reported_when_the_block_ends(tmp_path):
    load_error(tmp_path, """
with c.while_("x < 3", at=A):
    c.if_("x > 1", at=A)  # <-
""")


def test_opener_followed_by_another_opener(tmp_path):
    load_error(tmp_path, """
c.if_("x > 0", at=A)  # <-
with c.if_("x > 1", at=A):
    c.set(A, x=2)
""")


def test_an_opener_kept_and_entered_later_is_fine(tmp_path):
    path = write(tmp_path, PRELUDE + """
block = c.if_("x > 0", at=A)
with block:
    c.set(A, x=1)
c.send(A, B, x)
""")
    report = choreo.analysis.validate(choreo.load_one(str(path)))
    assert report.ok, report.render_errors()
    assert len(report.choreography.body) == 2


def test_entered_openers_still_build_the_same_statements(tmp_path):
    path = write(tmp_path, PRELUDE + """
with c.if_("x > 0", at=A):
    c.set(A, x=1)
with c.else_():
    c.set(A, x=2)
with c.parallel():
    with c.thread():
        c.set(A, x=3)
    with c.thread():
        c.set(B, x=4)
""")
    body = choreo.load_one(str(path)).body
    assert [type(s).__name__ for s in body] == ["If", "Parallel"]
    assert len(body[0].then) == len(body[0].else_) == 1 and len(body[1].threads) == 2


def test_cli_validate_reports_it_with_exit_2_and_no_traceback(tmp_path):
    path = write(tmp_path, PRELUDE + """
c.while_("x < 3", at=A)  # <-
c.set(A, x=1)
""")
    result = cpl("validate", path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"{path}:{marked(path)}: error: c.while_(...) was never "
                                    "entered: write `with c.while_(...):`")
    assert "Traceback" not in result.stderr
