"""Golden error messages: what a person sees when a guard does not parse.

Each row is the guard text and the exact ``str(GuardError)``: where (line and
column), what was expected in words, the source line and a caret under the
offending text, and sometimes a hint.
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
        "guard:1:3: error: unexpected 'y' after 'x'; expected an operator such as '&&', '||', 'S' or '->'",
        '  x y',
        '    ^',
    ], id='two terms in a row'),
    pytest.param('(x y)', [
        "guard:1:4: error: unexpected 'y' after 'x'; expected an operator such as '&&', '||', 'S', '->' or ')'",
        '  (x y)',
        '     ^',
        "  hint: the '(' at line 1, column 1 is still open",
    ], id='two terms in parentheses'),
    pytest.param('true false', [
        "guard:1:6: error: unexpected 'false' after 'true'; expected an operator such as '&&', '||', 'S' or '->'",
        '  true false',
        '       ^^^^^',
    ], id='two literals'),
    pytest.param('x == y == z', [
        "guard:1:8: error: unexpected '==' after 'y'; expected an operator such as '&&', '||', 'S' or '->'",
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
        "guard:1:2: error: unexpected '.' after 'x'; expected an operator such as '&&', '||', 'S' or '->'",
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
