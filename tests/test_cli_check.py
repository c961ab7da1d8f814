"""``cpl check`` as a user runs it: a subprocess, its exit status, stdout and stderr."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

COMMITTER_GUARD = ("@TestRunner.candidate == candidate && @Security.candidate == candidate"
                   " && @TestRunner(status != failed S status == passed)"
                   " && @Security(status != critical S status == cleared)")


def cpl(*args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cpl_cli", *args], capture_output=True,
                          text=True, timeout=60, **kwargs)


@pytest.fixture
def schema_file(tmp_path):
    path = tmp_path / "schema.json"
    path.write_text(json.dumps({
        "lifelines": ["TestRunner", "Security", "Committer"],
        "vars": {"status": "str", "candidate": "str"},
        "symbols": ["failed", "passed", "critical", "cleared"],
    }), encoding="utf-8")
    return path


def test_canonical_output():
    result = cpl("check", "@TestRunner(status!=failed S status==passed)")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "@TestRunner(status != failed S status == passed)\n"
    assert result.stderr == ""


@pytest.mark.parametrize(("guard", "canonical"), [
    ("a and b since c", "a && b S c"),
    ("not (a or b)", "!(a || b)"),
    ("(a -> b) -> c", "(a -> b) -> c"),
    ("((x))", "x"),
    ("x=='it\\'s'", 'x == "it\'s"'),
    ("  Seen( A )\n", "Seen(A)"),
])
def test_canonical_forms(guard, canonical):
    result = cpl("check", guard)
    assert (result.returncode, result.stdout, result.stderr) == (0, canonical + "\n", "")
    again = cpl("check", canonical)
    assert again.stdout == canonical + "\n"


def test_parse_error_exit_2_with_location_and_caret():
    result = cpl("check", "@TestRunner(status!=failed S")
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == "\n".join([
        "guard:1:29: error: expected a formula after 'S', but the guard ends",
        "  @TestRunner(status!=failed S",
        "                              ^",
        "  hint: the '(' at line 1, column 12 is still open",
    ]) + "\n"


def test_schema_unknown_lifeline_suggests(schema_file):
    result = cpl("check", "@TestRuner(status != failed)", "--schema", str(schema_file))
    assert result.returncode == 2
    assert result.stdout == ""
    misspelt = "guard:1:2: error: unknown lifeline 'TestRuner'; did you mean 'TestRunner'?"
    assert misspelt in result.stderr
    assert "   ^^^^^^^^^\n" in result.stderr
    assert "Traceback" not in result.stderr


def test_schema_resolves_and_closes_symbols(schema_file):
    ok = cpl("check", "@TestRunner(status != failed S status == passed)",
             "--schema", str(schema_file))
    assert (ok.returncode, ok.stdout) == (0, "@TestRunner(status != failed S status == passed)\n")
    bad = cpl("check", "status == faild", "--schema", str(schema_file))
    assert bad.returncode == 2
    assert "did you mean 'failed'?" in bad.stderr


def test_json_output_of_the_committer_guard(schema_file):
    for extra in ([], ["--schema", str(schema_file)]):
        result = cpl("check", COMMITTER_GUARD, "--format", "json", *extra)
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        data = json.loads(result.stdout)  # only JSON on stdout
        assert set(data) == {"canonical", "lifelines", "subformulas", "remote"}
        assert data["canonical"] == COMMITTER_GUARD
        assert data["lifelines"] == ["TestRunner", "Security"]
        assert data["subformulas"] == 13
        assert data["remote"] == {
            "TestRunner": {"formulas": ["status != failed S status == passed"],
                           "vars": ["candidate"]},
            "Security": {"formulas": ["status != critical S status == cleared"],
                         "vars": ["candidate"]},
        }


def test_json_output_of_a_local_guard():
    result = cpl("check", "--format", "json", "x S Y y")
    assert json.loads(result.stdout) == {"canonical": "x S Y y", "lifelines": [], "subformulas": 4,
                                         "remote": {}}


def test_json_format_errors_still_go_to_stderr():
    result = cpl("check", "--format", "json", "x ==")
    assert result.returncode == 2
    assert result.stdout == ""
    assert "expected a term after '=='" in result.stderr


@pytest.mark.parametrize(("content", "message"), [
    (None, "cannot read the schema: No such file or directory"),
    ("{not json", "the schema is not JSON: "),
    ('["A"]', "expected a JSON object with lifelines, vars and symbols"),
    ('{"lifelines": "A"}', "'lifelines' must be a list (or object) of identifiers"),
])
def test_bad_schema_file_exit_2_with_a_clear_message(tmp_path, content, message):
    path = tmp_path / "schema.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    result = cpl("check", "x", "--schema", str(path))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"{path}: error: {message}")
    assert "Traceback" not in result.stderr


def test_help():
    for args in (["--help"], ["check", "--help"]):
        result = cpl(*args)
        assert result.returncode == 0
        assert result.stdout.startswith("usage: cpl")
    result = cpl("check", "--help")
    for option in ("GUARD", "--schema", "--format"):
        assert option in result.stdout


def test_usage_errors_exit_2():
    assert cpl("check").returncode == 2
    assert cpl("check", "x", "--format", "yaml").returncode == 2
    assert cpl().returncode == 2


def test_console_script_is_installed():
    script = shutil.which("cpl", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the cpl console script is not installed next to this python "
                    "(pip install -e .)")
    result = subprocess.run([script, "check", "x&&y"], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "x && y\n")


def test_file_and_standard_input_for_guards_too_long_for_a_command_line(tmp_path):
    chain = "x && " * 10_000 + "x"  # 50 kB: a chain, not nesting
    path = tmp_path / "guard.txt"
    path.write_text(chain + "\n", encoding="utf-8")
    result = cpl("check", "--file", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout == chain + "\n"
    result = cpl("check", "--file", "-", "--format", "json", input="a &&\n b")
    assert result.returncode == 0 and json.loads(result.stdout)["canonical"] == "a && b"


def test_file_errors_name_the_file_and_stop_at_the_length_limit(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_text("a &&\n  b ==", encoding="utf-8")
    result = cpl("check", "--file", str(path))
    assert result.returncode == 2 and result.stderr.startswith(f"{path}:2:7: error: expected")
    endless = tmp_path / "endless.txt"
    endless.symlink_to("/dev/zero")
    result = cpl("check", "--file", str(endless))
    assert result.returncode == 2 and "holds more than 100,000 characters" in result.stderr
    result = cpl("check", "--file", str(tmp_path / "missing.txt"))
    assert result.returncode == 2 and "cannot read" in result.stderr
    for arguments in (["x", "--file", str(path)], []):
        result = cpl("check", *arguments)
        assert result.returncode == 2 and "--file FILE" in result.stderr
        assert "Traceback" not in result.stderr
