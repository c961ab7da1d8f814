"""Every validation error: one small faulty choreography each, checked for message, file
and line."""

import pytest

import choreo
from choreo_util import cpl, marked, write

PRELUDE = """
c = Choreography("case")
A, B, C = c.lifelines("A", "B", "C")
Status = c.symbols("Status", "passed", "failed")
x = c.var("x", int)
flag = c.var("flag", bool)
status = c.var("status", Status)
"""


def errors_of(tmp_path, body, control=None):
    prelude = PRELUDE if control is None else PRELUDE.replace(
        'Choreography("case")', f'Choreography("case", control="{control}")')
    path = write(tmp_path, prelude + body)
    report = choreo.analysis.validate(choreo.load_one(str(path)))
    return path, list(report.errors)


def one(tmp_path, body, kind, control=None):
    """The single error of ``kind``; it must sit on the marked line of the file."""
    path, errors = errors_of(tmp_path, body, control)
    assert [e.kind for e in errors] == [kind], "\n".join(e.render() for e in errors)
    error = errors[0]
    assert error.where.path == str(path)
    assert error.where.line == marked(path)
    assert error.render().startswith(f"{path}:{marked(path)}: error: ")
    return error


# ----------------------------------------------------------------- names and guards

def test_guard_syntax_error_points_at_the_if_line_with_a_caret(tmp_path):
    error = one(tmp_path, """
with c.if_("@A(x == 1 S", at=B):  # <-
    c.set(B, x=1)
""", "guard")
    assert "expected a formula after 'S'" in error.message
    lines = error.render().splitlines()
    assert lines[1] == "  @A(x == 1 S" and lines[2].strip() == "^"


def test_unknown_lifeline_in_guard_suggests_the_closest(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
c.send(A, B, x)
with c.if_("@Aa.x == 1", at=B, label="go?"):  # <-
    c.set(B, x=2)
""", "guard")
    assert error.message == "in the guard of 'go?': unknown lifeline 'Aa'; did you mean 'A'?"
    assert "^^" in error.render()


def test_misspelt_symbol_is_an_unknown_name(tmp_path):
    error = one(tmp_path, """
c.set(B, status="passed")
with c.if_("status != faild", at=B):  # <-
    c.set(B, x=2)
""", "guard")
    assert "unknown name 'faild'" in error.message and "did you mean 'failed'" in error.message


def test_unknown_lifeline_in_message(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
c.send(A, "Bee", x)  # <-
""", "unknown-lifeline")
    assert error.message == "unknown lifeline 'Bee' in message"
    assert "known lifelines: A, B, C" in error.detail


def test_unknown_variable_in_message(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
c.send(A, B, "xx")  # <-
""", "unknown-variable")
    assert error.message == "unknown variable 'xx' in message; did you mean 'x'?"


def test_message_to_self(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
c.send(A, A, x)  # <-
""", "self-message")
    assert error.message == "A sends a message to itself"


def test_non_boolean_variable_as_guard(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
with c.if_(x, at=A):  # <-
    c.set(A, x=2)
""", "guard")
    assert "variable 'x' is int" in error.message


def test_constant_of_the_wrong_type(tmp_path):
    error = one(tmp_path, """
c.set(A, status="pased")  # <-
""", "type")
    assert error.message == "status is Status {passed, failed}, but c.set gives it 'pased'"


def test_parallel_without_threads(tmp_path):
    one(tmp_path, """
with c.parallel():  # <-
    pass
""", "empty-parallel")


# ---------------------------------------------------------------- knowledge of choice

def test_uninformed_lifeline_in_an_if_names_lifeline_choice_branches_and_fix(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
with c.if_("x > 0", at=A, label="big?"):  # <-
    c.set(B, x=1)
with c.else_():
    pass
""", "knowledge-of-choice", control="none")
    assert error.message == ("knowledge of choice: B behaves differently in the branches of "
                             "'big?' (decided by A) but is never told which was taken")
    assert "then: set x=1" in error.detail and "else: (nothing)" in error.detail
    assert "add B to tell=[...]" in error.detail


def test_explicit_tell_that_forgets_a_lifeline(tmp_path):
    path, errors = errors_of(tmp_path, """
c.set(A, x=1)
with c.if_("x > 0", at=A, label="big?", tell=[B]):  # <-
    c.set(B, x=1)
    c.set(C, x=1)
""")
    assert [e.kind for e in errors] == ["knowledge-of-choice"]
    assert errors[0].message.startswith("knowledge of choice: C behaves differently")
    assert errors[0].where.line == marked(path)


def test_loop_whose_exit_a_lifeline_never_learns(tmp_path):
    error = one(tmp_path, """
c.set(A, x=0)
with c.while_("x < 3", at=A, label="again?", tell=[]):  # <-
    c.act(A, lambda v, rng: v["x"] + 1, assigns=[x], reads=[x])
    c.send(A, B, x)
""", "knowledge-of-choice")
    assert "B takes part in the loop 'again?' (decided by A) but is never told" in error.message
    assert "in the loop: recv x ← A" in error.detail


def test_learning_from_the_first_message_needs_no_control(tmp_path):
    path, errors = errors_of(tmp_path, """
c.set(A, x=1)
with c.if_("x > 0", at=A, label="big?"):
    c.send(A, B, x, label="yes")
with c.else_():
    c.send(A, B, x, label="no")
""", control="none")
    assert errors == []


# ----------------------------------------------------------------- reads before writes

def test_message_carrying_a_variable_never_set_at_the_sender(tmp_path):
    error = one(tmp_path, """
c.send(A, B, x)  # <-
""", "read-before-set")
    assert error.message == "message 'x' from A to B carries x, which A cannot have set here"


def test_set_only_in_one_branch_is_enough_for_a_may_analysis(tmp_path):
    _, errors = errors_of(tmp_path, """
c.set(A, flag=True)
with c.if_("flag", at=A):
    c.set(A, x=1)
c.send(A, B, x)
""")
    assert errors == []


def test_guard_reading_a_local_variable_never_set(tmp_path):
    error = one(tmp_path, """
c.set(A, flag=True)
c.send(A, B, flag)
with c.if_("x > 1", at=B, label="big?"):  # <-
    c.set(B, flag=False)
""", "read-before-set")
    assert error.message == ("the guard of 'big?' reads x, "
                             "which B cannot have set before this decision")


def test_guard_reading_a_remote_variable_the_other_lifeline_never_sets(tmp_path):
    error = one(tmp_path, """
c.set(A, flag=True)
c.send(A, B, flag)
with c.if_("@A.x == 1", at=B, label="one?"):  # <-
    c.set(B, flag=False)
""", "read-before-set")
    assert "reads x at A, which A cannot have set" in error.message


def test_read_in_a_loop_set_later_in_the_body_is_fine(tmp_path):
    _, errors = errors_of(tmp_path, """
c.set(A, flag=True)
with c.while_("flag", at=A):
    with c.if_("x > 3", at=A):
        c.set(A, flag=False)
    c.act(A, lambda v, rng: 5, assigns=[x])
""")
    assert [e.kind for e in errors] == []


# ------------------------------------------------------ what a guard can see; owners

def test_guard_reading_a_lifeline_that_never_reaches_the_owner(tmp_path):
    error = one(tmp_path, """
c.set(C, x=1)
c.set(A, flag=True)
c.send(A, B, flag)
with c.if_("@C.x == 1", at=B, label="c?"):  # <-
    c.set(B, flag=False)
""", "not-visible")
    assert error.message.startswith("the guard of 'c?' reads C, but no message chain from C "
                                    "can reach B before this decision")


def test_a_chain_through_a_third_lifeline_makes_it_visible(tmp_path):
    _, errors = errors_of(tmp_path, """
c.set(C, x=1)
c.send(C, A, x)
c.send(A, B, x)
with c.if_("@C.x == 1", at=B):
    c.set(B, x=2)
""")
    assert errors == []


def test_owner_not_involved(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
c.send(A, B, x)
with c.if_("@A.x == 1", at=C, label="one?"):  # <-
    c.set(B, x=2)
""", "owner-not-involved")
    assert error.message.startswith("the owner of 'one?', C, is not involved")


# -------------------------------------------------------------------- unreachable code

def test_statement_after_while_true(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
with c.while_("true", at=A, label="forever"):
    c.send(A, B, x)
c.set(B, x=2)  # <-
""", "unreachable")
    assert "after the while at line" in error.message and "its guard is true" in error.message


def test_branch_a_constant_guard_never_takes(tmp_path):
    error = one(tmp_path, """
c.set(A, x=1)
with c.if_("false", at=A, label="never"):
    c.set(A, x=2)  # <-
""", "unreachable")
    assert error.message == ("unreachable: the then-branch of 'never' (line 10) never runs: "
                             "its guard is false")


# ------------------------------------------------------------------------- CLI

def test_cli_validate_lists_inputs_and_exits_0(tmp_path):
    path = write(tmp_path, PRELUDE + """
n = c.input("n", int, default=2, at=A)
mode = c.input("mode", Status)
c.set(A, x=1)
c.send(A, B, x)
""")
    result = cpl("validate", path)
    assert result.returncode == 0, result.stderr
    assert "case: valid" in result.stdout
    assert "  n: int = 2  (at A)" in result.stdout
    assert "  mode: Status {passed, failed} required  (at A, B, C)" in result.stdout


def test_cli_validate_reports_all_errors_with_file_and_line_and_exits_2(tmp_path):
    path = write(tmp_path, PRELUDE + """
c.send(A, B, x)  # <-
""")
    result = cpl("validate", path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"{path}:{marked(path)}: error: message 'x' from A to B")
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("example", ["code_review", "relay", "parallel_tools"])
def test_examples_validate(example):
    report = choreo.analysis.validate(choreo.load_one(f"examples/{example}.py"))
    assert report.ok, report.render_errors()


# ------------------------------------------------------ races between threads


RACE_PRELUDE = """
def compute(variables, rng):
    return 1
"""


def race(tmp_path, body):
    return one(tmp_path, RACE_PRELUDE + body, "thread-race")


def no_race(tmp_path, body):
    _, errors = errors_of(tmp_path, RACE_PRELUDE + body)
    assert not errors, "\n".join(e.render() for e in errors)


def test_a_send_racing_an_action_of_another_thread_of_the_same_lifeline(tmp_path):
    error = race(tmp_path, """
with c.parallel():
    with c.thread():
        c.act(A, compute, assigns=[x])
    with c.thread():
        c.send(A, B, x)  # <-
""")
    line = error.where.line
    assert error.message == (f"race on x at A: message 'x' from A to B carries x while action "
                             f"'compute' assigns it (line {line - 2}) in a concurrent thread of "
                             f"A (the c.parallel() at line {line - 4}): which comes first is up "
                             "to the scheduler")


def test_a_guard_racing_a_set(tmp_path):
    race(tmp_path, """
c.set(A, flag=False)
with c.parallel():
    with c.thread():
        c.set(A, flag=True)
    with c.thread():
        with c.if_(flag, at=A):  # <-
            c.send(A, B)
""")


def test_a_receive_racing_a_declared_read_inside_a_loop(tmp_path):
    race(tmp_path, """
c.set(A, x=0)
c.set(C, x=0)
with c.parallel():
    with c.thread():
        with c.while_("x < 3", at=C, label="again?"):
            c.act(C, compute, assigns=[flag], reads=[x])
    with c.thread():
        c.send(A, C, x)  # <-
""")


def test_two_actions_assigning_one_variable(tmp_path):
    race(tmp_path, """
with c.parallel():
    with c.thread():
        c.set(B, x=1)
    with c.thread():
        c.act(B, compute, assigns=[x])  # <-
""")


def test_no_race_between_different_lifelines(tmp_path):
    no_race(tmp_path, """
with c.parallel():
    with c.thread():
        c.act(A, compute, assigns=[x])
        c.send(A, C, x)
    with c.thread():
        c.act(B, compute, assigns=[x])
        c.send(B, C, x, label="from B")
""")


def test_no_race_between_blocks_one_after_the_other_or_within_a_thread(tmp_path):
    no_race(tmp_path, """
with c.parallel():
    with c.thread():
        c.act(A, compute, assigns=[x])
        c.send(A, B, x)
    with c.thread():
        c.send(A, C)
with c.parallel():
    with c.thread():
        c.send(A, B, x, label="again")
    with c.thread():
        c.set(B, flag=True)
""")


def test_no_race_on_different_variables_or_between_reads(tmp_path):
    no_race(tmp_path, """
c.set(A, x=0)
with c.parallel():
    with c.thread():
        c.set(A, flag=True)
        c.send(A, B, x)
    with c.thread():
        c.send(A, C, x)
        with c.if_("x > 0", at=A):
            c.set(A, status=Status.passed)
""")


def test_two_messages_received_into_one_variable_are_not_a_race(tmp_path):
    no_race(tmp_path, """
c.set(A, x=1)
c.set(B, x=2)
with c.parallel():
    with c.thread():
        c.send(A, C, x)
    with c.thread():
        c.send(B, C, x, label="from B")
""")


def test_cli_validate_reports_the_race_that_used_to_fail_some_seeds(tmp_path):
    path = write(tmp_path, PRELUDE + RACE_PRELUDE + """
with c.parallel():
    with c.thread():
        c.act(A, compute, assigns=[x])
    with c.thread():
        c.send(A, B, x)  # <-
""")
    result = cpl("validate", path)
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"{path}:{marked(path)}: error: race on x at A")
    assert "Traceback" not in result.stderr
