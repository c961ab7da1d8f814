"""The examples' docstrings show real ``cpl verify`` sessions.

Each ``$ cpl verify`` a docstring shows is a session of docs/anomalies.md or
docs/cli.md: the same command, and the first lines of what it prints there.
tests/test_readme.py runs those sessions and compares their output, so a
docstring cannot drift from what verify prints, without a search of its own
here (the suite's time is spent once).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ("docs/anomalies.md", "docs/cli.md")
TWINS = ["anomalies/stale_generation.py", "anomalies/phantom_tool.py",
         "anomalies/causal_cascade.py", "anomalies/tool_reordering.py",
         "anomalies/lost_update.py", "stale_publish.py"]
EXAMPLES = TWINS + ["code_review.py"]
PROMPT = "$ cpl verify "


def doc_sessions() -> dict[str, list[str]]:
    """command -> the lines it prints, for every ``$ cpl verify`` in a fenced block of DOCS."""
    found: dict[str, list[str]] = {}
    for doc in DOCS:
        fenced, current = False, None
        for line in (ROOT / doc).read_text(encoding="utf-8").splitlines():
            if line.startswith("```"):
                fenced, current = not fenced, None
            elif fenced and line.startswith("$ "):
                current = found.setdefault(line, []) if line.startswith(PROMPT) else None
            elif fenced and current is not None:
                current.append(line)
    return found


def docstring_sessions(example: str) -> list[tuple[str, list[str]]]:
    """(command, shown lines) for every ``$ cpl verify`` of the example's docstring: its
    indented lines up to a blank line or the next command."""
    text = ast.get_docstring(ast.parse((ROOT / "examples" / example).read_text()))
    sessions: list[tuple[str, list[str]]] = []
    shown = None
    for line in text.splitlines():
        if line.startswith("    $ "):
            shown = [] if line.startswith("    " + PROMPT) else None
            if shown is not None:
                sessions.append((line[4:], shown))
        elif shown is not None and line.startswith("    "):
            shown.append(line[4:])
        else:
            shown = None
    return sessions


@pytest.mark.parametrize("example", EXAMPLES)
def test_every_verify_session_of_the_docstring_is_one_the_docs_run(example):
    sessions = docstring_sessions(example)
    assert sessions, f"{example}'s docstring shows no `cpl verify`"
    documented = doc_sessions()
    for command, shown in sessions:
        assert command.startswith(f"$ cpl verify examples/{example} "), command
        assert command in documented, f"{command!r} is in no session of {', '.join(DOCS)}"
        assert shown, f"{command!r} shows no output"
        assert documented[command][:len(shown)] == shown, command


@pytest.mark.parametrize("example", TWINS)
def test_both_twins_are_verified(example):
    commands = [command for command, _ in docstring_sessions(example)]
    for twin in ("unguarded", "guarded"):
        assert any(f" --name {twin}" in command for command in commands), (example, twin)


def test_a_shown_session_that_differs_is_caught():
    """The comparison can fail: a line changed is not a prefix of the doc's output."""
    documented = doc_sessions()
    command, shown = docstring_sessions("anomalies/phantom_tool.py")[0]
    changed = shown[:1] + [shown[1].replace("10", "11")]
    assert documented[command][:len(shown)] == shown
    assert documented[command][:len(changed)] != changed
