"""Golden error messages: what a person sees when a guard does not parse.

Each row is the guard text and the exact ``str(GuardError)``: where (line and
column), what was expected in words, the source line and a caret under the
offending text, and sometimes a hint.  Then the root every error of ours that
reaches a user derives from, ``cpl.CplError``: its exit code is what ``cpl`` exits with.
"""

import pytest
from hypothesis import given, strategies as st

import cpl
from cpl import GuardError, parse
from cpl.lang.parser import MAX_DEPTH
from strategies import guard_texts, mutated

GOLDEN = [
    pytest.param('x ==', [
        "guard:1:5: error: expected a term after '==', but the guard ends",
        '  x ==',
        '      ^',
    ], id='missing term after =='),
    pytest.param('x == && y', [
        "guard:1:6: error: expected a term after '==', but found '&&'",
        '  x == && y',
        '       ^^',
    ], id='missing term before &&'),
    pytest.param('x &&', [
        "guard:1:5: error: expected a formula after '&&', but the guard ends",
        '  x &&',
        '      ^',
    ], id='missing formula after &&'),
    pytest.param('x S', [
        "guard:1:4: error: expected a formula after 'S', but the guard ends",
        '  x S',
        '     ^',
    ], id='missing formula after S'),
    pytest.param('x since', [
        "guard:1:8: error: expected a formula after 'since', but the guard ends",
        '  x since',
        '         ^',
    ], id='missing formula after since'),
    pytest.param('x S && y', [
        "guard:1:5: error: expected a formula after 'S', but found '&&'",
        '  x S && y',
        '      ^^',
    ], id='operator after S'),
    pytest.param('x ||', [
        "guard:1:5: error: expected a formula after '||', but the guard ends",
        '  x ||',
        '      ^',
    ], id='missing formula after ||'),
    pytest.param('x ->', [
        "guard:1:5: error: expected a formula after '->', but the guard ends",
        '  x ->',
        '      ^',
    ], id='missing formula after ->'),
    pytest.param('!', [
        "guard:1:2: error: expected a formula after '!', but the guard ends",
        '  !',
        '   ^',
    ], id='missing formula after !'),
    pytest.param('Y', [
        "guard:1:2: error: expected a formula after 'Y', but the guard ends",
        '  Y',
        '   ^',
    ], id='missing formula after Y'),
    pytest.param('()', [
        "guard:1:2: error: expected a formula after '(', but found ')'",
        '  ()',
        '   ^',
        "  hint: the '(' at line 1, column 1 is still open",
    ], id='empty parentheses'),
    pytest.param('(x', [
        "guard:1:3: error: unclosed '(' (opened at line 1, column 1)",
        '  (x',
        '    ^',
    ], id='unclosed ('),
    pytest.param('@A(x S y', [
        "guard:1:9: error: unclosed '(' (opened at line 1, column 3)",
        '  @A(x S y',
        '          ^',
    ], id='unclosed @A('),
    pytest.param('(x && (y)', [
        "guard:1:10: error: unclosed '(' (opened at line 1, column 1)",
        '  (x && (y)',
        '           ^',
    ], id='unclosed outer ('),
    pytest.param('x)', [
        "guard:1:2: error: unmatched ')'",
        '  x)',
        '   ^',
    ], id='unmatched )'),
    pytest.param('x && y))', [
        "guard:1:7: error: unmatched ')'",
        '  x && y))',
        '        ^',
    ], id='second unmatched )'),
    pytest.param('x y', [
        "guard:1:3: error: unexpected 'y' after 'x'; "
        "expected an operator such as '&&', '||', 'S' or '->'",
        '  x y',
        '    ^',
    ], id='two terms in a row'),
    pytest.param('(x y)', [
        "guard:1:4: error: unexpected 'y' after 'x'; "
        "expected an operator such as '&&', '||', 'S', '->' or ')'",
        '  (x y)',
        '     ^',
        "  hint: the '(' at line 1, column 1 is still open",
    ], id='two terms in parentheses'),
    pytest.param('true false', [
        "guard:1:6: error: unexpected 'false' after 'true'; "
        "expected an operator such as '&&', '||', 'S' or '->'",
        '  true false',
        '       ^^^^^',
    ], id='two literals'),
    pytest.param('x == y == z', [
        "guard:1:8: error: unexpected '==' after 'y'; "
        "expected an operator such as '&&', '||', 'S' or '->'",
        '  x == y == z',
        '         ^^',
    ], id='chained comparison'),
    pytest.param('x = 1', [
        "guard:1:3: error: unexpected '='; did you mean '=='?",
        '  x = 1',
        '    ^',
    ], id='= instead of =='),
    pytest.param('x === 1', [
        "guard:1:5: error: unexpected '='; did you mean '=='?",
        '  x === 1',
        '      ^',
    ], id='=== instead of =='),
    pytest.param('x =! 1', [
        "guard:1:3: error: unexpected '='; did you mean '!='?",
        '  x =! 1',
        '    ^',
    ], id='=! instead of !='),
    pytest.param('x => y', [
        "guard:1:3: error: unexpected '='; did you mean '->' or '>='?",
        '  x => y',
        '    ^',
    ], id='=> instead of ->'),
    pytest.param('x == 1 & y', [
        "guard:1:8: error: unexpected '&'; did you mean '&&'?",
        '  x == 1 & y',
        '         ^',
    ], id='single &'),
    pytest.param('x | y', [
        "guard:1:3: error: unexpected '|'; did you mean '||'?",
        '  x | y',
        '    ^',
    ], id='single |'),
    pytest.param('"abc', [
        'guard:1:1: error: unterminated string',
        '  "abc',
        '  ^',
        '  hint: close it with " on the same line',
    ], id='unterminated string'),
    pytest.param("x == 'abc", [
        'guard:1:6: error: unterminated string',
        "  x == 'abc",
        '       ^',
        "  hint: close it with ' on the same line",
    ], id='unterminated single-quoted string'),
    pytest.param('x == "a\nb"', [
        'guard:1:6: error: unterminated string',
        '  x == "a',
        '       ^',
        '  hint: close it with " on the same line',
    ], id='string across lines'),
    pytest.param('x == "a\\q"', [
        "guard:1:8: error: unknown escape '\\q' in a string",
        '  x == "a\\q"',
        '         ^^',
        '  hint: escapes are \\\\ \\" \\\' \\n \\t \\r \\0 and \\uXXXX',
    ], id='bad escape'),
    pytest.param('x == "\\u00"', [
        "guard:1:7: error: unknown escape '\\u' in a string",
        '  x == "\\u00"',
        '        ^^',
        '  hint: escapes are \\\\ \\" \\\' \\n \\t \\r \\0 and \\uXXXX',
    ], id='short unicode escape'),
    pytest.param('@S(x)', [
        "guard:1:2: error: expected a lifeline name after '@', but found 'S'",
        '  @S(x)',
        '   ^',
        "  hint: 'S' is a keyword and cannot be used as a name",
    ], id='@ followed by keyword'),
    pytest.param('@true.x', [
        "guard:1:2: error: expected a lifeline name after '@', but found 'true'",
        '  @true.x',
        '   ^^^^',
        "  hint: 'true' is a keyword and cannot be used as a name",
    ], id='@ followed by literal keyword'),
    pytest.param('@A', [
        "guard:1:3: error: expected '(' or '.' after 'A', but the guard ends",
        '  @A',
        '    ^',
    ], id='@A with nothing after'),
    pytest.param('@A.', [
        "guard:1:4: error: expected a variable name after '.', but the guard ends",
        '  @A.',
        '     ^',
    ], id='@A. with nothing after'),
    pytest.param('@A.since', [
        "guard:1:4: error: expected a variable name after '.', but found 'since'",
        '  @A.since',
        '     ^^^^^',
        "  hint: 'since' is a keyword and cannot be used as a name",
    ], id='keyword after @A.'),
    pytest.param('@', [
        "guard:1:2: error: expected a lifeline name after '@', but the guard ends",
        '  @',
        '   ^',
    ], id='lone @'),
    pytest.param('x == S', [
        "guard:1:6: error: expected a term after '==', but found 'S'",
        '  x == S',
        '       ^',
        "  hint: 'S' is a keyword and cannot be used as a name",
    ], id='keyword as a term'),
    pytest.param('S', [
        "guard:1:1: error: expected a formula, but found 'S'",
        '  S',
        '  ^',
        "  hint: 'S' is a keyword and cannot be used as a name",
    ], id='keyword as a formula'),
    pytest.param('Seen()', [
        "guard:1:6: error: expected a lifeline name after 'Seen(', but found ')'",
        '  Seen()',
        '       ^',
        "  hint: the '(' at line 1, column 5 is still open",
    ], id='Seen of nothing'),
    pytest.param('Seen(S)', [
        "guard:1:6: error: expected a lifeline name after 'Seen(', but found 'S'",
        '  Seen(S)',
        '       ^',
        "  hint: 'S' is a keyword and cannot be used as a name",
    ], id='Seen of a keyword'),
    pytest.param('f(x,)', [
        "guard:1:5: error: expected a term after ',', but found ')'",
        '  f(x,)',
        '      ^',
        "  hint: the '(' at line 1, column 2 is still open",
    ], id='trailing comma'),
    pytest.param('x.y', [
        "guard:1:2: error: unexpected '.' after 'x'; "
        "expected an operator such as '&&', '||', 'S' or '->'",
        '  x.y',
        '   ^',
    ], id='dotted variable'),
    pytest.param('x #', [
        "guard:1:3: error: unexpected character '#'",
        '  x #',
        '    ^',
    ], id='unexpected character'),
    pytest.param('x\x0cy', [
        'guard:1:2: error: unexpected character U+000C',
        '  x y',
        '   ^',
    ], id='control character'),
    pytest.param('x < 1e999', [
        'guard:1:5: error: number 1e999 is out of range',
        '  x < 1e999',
        '      ^^^^^',
    ], id='number out of range'),
    pytest.param('', [
        'guard:1:1: error: the guard is empty; expected a formula',
        '  ',
        '  ^',
    ], id='empty guard'),
    pytest.param('  \n ', [
        'guard:1:1: error: the guard is empty; expected a formula',
        '    ',
        '  ^',
    ], id='blank guard'),
]


@pytest.mark.parametrize(("text", "lines"), GOLDEN)
def test_golden_error_message(text, lines):
    with pytest.raises(GuardError) as caught:
        parse(text)
    assert str(caught.value) == "\n".join(lines)


@pytest.mark.parametrize(("text", "lines"), GOLDEN)
def test_check_reports_the_same_parse_errors(text, lines):
    with pytest.raises(GuardError) as caught:
        cpl.check(text)
    assert str(caught.value) == "\n".join(lines)


def _assert_located(error: GuardError, text: str) -> None:
    assert error.line >= 1 and error.column >= 1
    assert error.line <= text.count("\n") + 1
    assert error.column <= len(text.split("\n")[error.line - 1]) + 1
    header, shown, caret = str(error).split("\n")[:3]
    assert header.startswith(f"guard:{error.line}:{error.column}: error: ")
    assert shown.startswith("  ") and caret.startswith("  ")
    assert caret.strip(" ") and set(caret.strip(" ")) == {"^"}
    assert caret.index("^") == error.column + 1


@pytest.mark.parametrize(("text", "lines"), GOLDEN)
def test_golden_errors_are_located(text, lines):
    with pytest.raises(GuardError) as caught:
        parse(text)
    _assert_located(caught.value, text)


@given(mutated(guard_texts(max_leaves=6)))
def test_every_parse_error_has_a_line_a_column_and_a_caret(text):
    try:
        parse(text)
    except GuardError as error:
        _assert_located(error, text)


# ----------------------------------------------------------- multi-line


MULTI_LINE = """\
@TestRunner.candidate == candidate &&
  @Security(status != critical S
            status == cleared) &&
  @TestRunner(status != failed S status == = passed)"""


def test_multi_line_guard_reports_line_and_column():
    with pytest.raises(GuardError) as caught:
        parse(MULTI_LINE)
    error = caught.value
    assert (error.line, error.column) == (4, 44)
    assert error.source_line == "  @TestRunner(status != failed S status == = passed)"
    assert str(error) == "\n".join([
        "guard:4:44: error: unexpected '='; did you mean '=='?",
        "    @TestRunner(status != failed S status == = passed)",
        "                                             ^",
    ])


def test_unclosed_parenthesis_across_lines_names_where_it_opened():
    text = "x &&\n  (y ||\n   z"
    with pytest.raises(GuardError) as caught:
        parse(text)
    assert str(caught.value) == "\n".join([
        "guard:3:5: error: unclosed '(' (opened at line 2, column 3)",
        "     z",
        "      ^",
    ])


def test_missing_formula_at_the_end_of_a_line_points_after_the_operator():
    with pytest.raises(GuardError) as caught:
        parse("x &&\n\n")
    assert (caught.value.line, caught.value.column) == (1, 5)


@pytest.mark.parametrize(("text", "line", "column", "shown"), [
    ("a\r\n&& b c", 2, 6, "&& b c"),          # CRLF: the line is shown without its \r
    ("a &&\n\tb c", 2, 4, " b c"),           # a tab counts (and shows) as one column
    ("a\u2028 && b c", 1, 2, "a  && b c"),    # U+2028 is no line break for CPL
    ("'é' ==\n  'ü' x", 2, 7, "  'ü' x"),
])
def test_lines_end_at_newline_only(text, line, column, shown):
    with pytest.raises(GuardError) as caught:
        parse(text)
    error = caught.value
    assert (error.line, error.column) == (line, column)
    assert str(error).split("\n")[1] == "  " + shown
    assert str(error).split("\n")[2] == "  " + " " * (column - 1) + "^"


# ---------------------------------------------------------- deep nesting


@pytest.mark.parametrize(("text", "column"), [
    ("!" * (MAX_DEPTH + 1) + "x", MAX_DEPTH + 1),
    ("Y " * (MAX_DEPTH + 1) + "x", 2 * MAX_DEPTH + 1),
    ("@A(" * (MAX_DEPTH + 1) + "x" + ")" * (MAX_DEPTH + 1), 3 * MAX_DEPTH + 1),
    ("(x && (x || " * (MAX_DEPTH // 2 + 1) + "x" + "))" * (MAX_DEPTH // 2 + 1), 6 * MAX_DEPTH + 2),
    ("x S " * (MAX_DEPTH + 1) + "x", 4 * MAX_DEPTH + 1),
    ("(" * 5000 + "!" * 5000 + "x" + ")" * 5000, 5000 + MAX_DEPTH + 1),
    ("x -> " * 2000 + "x", 5 * MAX_DEPTH + 1),
    ("O H " * 150 + "x", 2 * MAX_DEPTH + 1),  # once crashed check() with RecursionError
], ids=["not", "Y", "at", "and-or", "since", "parenthesised", "implies", "sugar"])
def test_deep_nesting_is_a_located_error(text, column):
    with pytest.raises(GuardError) as caught:
        parse(text)
    error = caught.value
    assert error.message == f"the guard nests operators more than {MAX_DEPTH} deep"
    assert (error.line, error.column) == (1, column)
    assert error.hint == "split it into several smaller guards"
    with pytest.raises(GuardError):
        cpl.check(text).to_json()


@pytest.mark.parametrize("text", [
    "!" * MAX_DEPTH + "x",
    "H " * MAX_DEPTH + "x",      # desugars three levels deep per H
    "x && " * MAX_DEPTH + "x",
    "x && " * 10 * MAX_DEPTH + "x",  # a chain of && is long, not deep
    "(" * 5000 + "x" + ")" * 5000,  # parentheses alone do not nest operators
], ids=["not", "H", "and", "chain", "parentheses"])
def test_nesting_up_to_the_limit_is_fine_everywhere(text):
    guard = cpl.check(text, cpl.Schema(lifelines=("A", "B")))
    assert cpl.parse(guard.canonical) == guard.formula
    assert guard.to_json()["subformulas"] >= 1


# ------------------------------------------------------- the error object


def test_error_fields_and_render_origin():
    with pytest.raises(GuardError) as caught:
        parse("x ==\n  && y")
    error = caught.value
    assert error.message == "expected a term after '==', but found '&&'"
    assert (error.line, error.column, error.width) == (2, 3, 2)
    assert error.source == "x ==\n  && y"
    assert error.render("rules.cpl").startswith("rules.cpl:2:3: error: expected a term")
    assert str(error) == error.render() == error.render("guard")


def test_unlocated_error_renders_without_a_caret():
    error = GuardError("something is wrong", hint="fix it")
    assert str(error) == "guard: error: something is wrong\n  hint: fix it"


def test_caret_is_never_wider_than_the_rest_of_the_line():
    error = GuardError("x", "abc", 1, 3, width=10)
    assert str(error).split("\n")[2] == "    ^"


@given(st.text(max_size=40), st.integers(0, 45))
def test_line_column_agrees_with_the_text(text, offset):
    error = GuardError.at_offset("m", text, offset)
    before = text[:min(offset, len(text))]
    assert error.line == before.count("\n") + 1
    assert error.column == len(before.split("\n")[-1]) + 1


def test_non_text_guard():
    with pytest.raises(GuardError, match="must be text, not int"):
        parse(42)  # type: ignore[arg-type]


# ------------------------------------------------------------------ one root: cpl.CplError

# Packages whose exceptions are ours (the CLI's too, where it lives).
OUR_PACKAGES = ("cpl", "choreo", "runtime", "causal_guards", "cpl_cli")

# Exceptions of ours that never reach a user, by class name, each with why (a subclass of one
# is internal too).  Besides these, by rule: private ones (a leading underscore: raised and
# caught in their own module), those that are no ``Exception`` (``DeadlinePassed``, a
# ``KeyboardInterrupt``: they must pass every ``except Exception``), and warnings.
INTERNAL = {
    "Declined": "the fast trace reader declining: the exact reader reads the trace instead",
    "BeyondSlice": "asks its caller for more of the trace (Recent, explain, the HTML view)",
    "UnexpectedInput": "the generated parser's: cpl.lang.parser words each as a GuardError",
    "Undeliverable": "a duplicate message: its lifeline counts it as a refused frame",
    "FrameRejected": "a refused frame: its lifeline counts it, warns, and the run goes on",
    "FrameTooLarge": "its lifeline words it as the RunFailure that ends it",
    "Taken": "cpl run words it as a usage error naming the run that holds the folder",
    "Unlaunched": "the supervisor ends the run `not joined` or `died` with it",
    "Blocked": "cpl verify abandons the run (its MSC was run already) and counts it",
}


def _our_exceptions() -> list[type]:
    """Every exception class defined in a module of ours (found by importing them all)."""
    import importlib
    import importlib.util
    import pkgutil
    found: dict[type, None] = {}
    for package in OUR_PACKAGES:
        if importlib.util.find_spec(package) is None:  # the CLI is in one place or the other
            continue
        path = importlib.import_module(package).__path__
        names = [package, *(module.name for module in pkgutil.walk_packages(path, f"{package}."))]
        for name in names:
            if name.rpartition(".")[2] == "__main__":  # running it is its import
                continue
            module = importlib.import_module(name)
            for value in vars(module).values():
                if (isinstance(value, type) and issubclass(value, BaseException)
                        and value.__module__ == name):
                    found[value] = None
    return list(found)


def _internal(error: type) -> str | None:
    """Why ``error`` never reaches a user, or None if it may."""
    if not issubclass(error, Exception):
        return "not an Exception: a signal that must pass `except Exception`"
    if issubclass(error, Warning):
        return "a warning"
    if error.__name__.startswith("_"):
        return "private to its module"
    return next((INTERNAL[base.__name__] for base in error.__mro__ if base.__name__ in INTERNAL
                 and base.__module__.split(".")[0] in OUR_PACKAGES), None)


def test_every_error_of_ours_that_reaches_a_user_is_a_cpl_error_with_an_exit_code():
    errors = _our_exceptions()
    assert len(errors) > 40 and cpl.CplError in errors  # the walk found them
    outside = [f"{error.__module__}.{error.__qualname__}" for error in errors
               if _internal(error) is None and not issubclass(error, cpl.CplError)]
    assert outside == []  # derive it from cpl.CplError (or list it in INTERNAL, with why)
    codes = {error.__qualname__: error.exit_code for error in errors
             if issubclass(error, cpl.CplError)}
    assert set(codes.values()) == {1, 2}  # cli.md: 1 the work failed, 2 usage
    named = {name: [e for e in errors if e.__name__ == name] for name in INTERNAL}
    assert {name: len(found) for name, found in named.items()} == dict.fromkeys(INTERNAL, 1)
    assert not any(issubclass(error, cpl.CplError) for found in named.values()
                   for error in found)  # INTERNAL names only errors outside the root


def test_the_families_map_to_the_exit_codes_of_cli_md():
    from choreo.authoring.errors import ChoreographyError, ChoreographyErrors
    from choreo.execution.status import RunFailure
    from cpl.errors import TraceError
    from cpl_cli.usage import UsageError
    from runtime.frames.ticket import JoinError
    usage = (GuardError, cpl.ResolveError, ChoreographyError, ChoreographyErrors, UsageError,
             JoinError)
    assert [error.exit_code for error in usage] == [2] * len(usage)
    failed = (TraceError, cpl.EvaluationError, RunFailure, cpl.CplError)
    assert [error.exit_code for error in failed] == [1] * len(failed)
    # JoinError and RunFailure are no ChoreographyError (they were, for exit code 2 only)
    assert not issubclass(JoinError, ChoreographyError)
    assert not issubclass(RunFailure, ChoreographyError)


def test_what_the_cli_prints_for_each_family():
    from choreo.authoring.errors import ChoreographyError, Where
    from choreo.execution.status import RunFailure
    from cpl.errors import TraceError
    from runtime.frames.ticket import JoinError
    assert cpl.CplError("boom").for_cli("run") == "cpl run: boom"
    assert (GuardError.at_offset("bad", "x ==", 4).for_cli("check")
            == "guard:1:5: error: bad\n  x ==\n      ^")
    assert TraceError("no events", "t.json").for_cli("eval") == "error: t.json: no events"
    assert (ChoreographyError("no", Where("c.py", 3), "  fix: yes").for_cli("run")
            == "c.py:3: error: no\n  fix: yes")
    assert JoinError("c.json: not text").for_cli("lifeline") == "error: c.json: not text"
    assert (RunFailure("A", "A.2", "it broke").for_cli("run")
            == "error: A, after A.2: it broke")


class _Odd(cpl.CplError):
    """An error no family has: its own exit code and words, as a new one would bring."""

    exit_code = 7

    def for_cli(self, command: str) -> str:
        return f"odd, in cpl {command}"


def test_the_cli_exits_with_the_code_of_the_error_it_caught(monkeypatch, capsys):
    import cpl_cli.check
    from cpl_cli import main

    def fails(args):
        raise _Odd("the message")

    monkeypatch.setattr(cpl_cli.check, "cmd_check", fails)
    assert main(["check", "x"]) == 7
    assert capsys.readouterr().err == "odd, in cpl check\n"


def test_a_lifeline_forked_by_its_supervisor_answers_as_cpl_lifeline(capsys):
    from runtime.frames.ticket import JoinError
    from runtime.supervisor.zygote import _internal as answer
    assert answer("A", JoinError("c.json: no connection for lifeline 'A'")) == 2
    assert answer("A", _Odd("x")) == 7
    assert capsys.readouterr().err == ("error: c.json: no connection for lifeline 'A'\n"
                                       "odd, in cpl lifeline\n")


def test_a_connection_file_that_cannot_be_used_is_exit_2(tmp_path):
    from choreo_util import cpl as run_cpl
    connection = tmp_path / "c.json"
    connection.write_text("x")
    connection.chmod(0o600)
    result = run_cpl("lifeline", "A", "--connection", str(connection))
    said = f"error: {connection}: not a cpl connection file (Expecting value: line 1 column 1"
    assert (result.returncode, result.stderr) == (2, f"{said} (char 0))\n")
