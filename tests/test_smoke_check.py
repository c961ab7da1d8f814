import subprocess
import sys

import cpl


def test_canonical_form_of_paper_guard():
    assert cpl.check("@TestRunner(status!=failed S status==passed)").canonical == \
        "@TestRunner(status != failed S status == passed)"


def test_cli_check_reports_error_with_exit_2():
    unfinished = "@TestRunner(status!=failed S"
    result = subprocess.run([sys.executable, "-m", "cpl_cli", "check", unfinished],
                            capture_output=True, text=True)
    assert result.returncode == 2
    assert "expected a formula after 'S'" in result.stderr
