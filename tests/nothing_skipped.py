"""A pytest plugin for CI: a run that skipped any test fails, naming each skip and its reason.

On a developer's machine a test that needs something not installed (graphviz's
``dot``, Chromium, an optional framework) skips and says why (``-rs``).  CI
installs all of it (``.ci/run``), so there a skip means a test silently did not
run: with the environment variable ``CI`` set (``true``, ``1``, …; not ``0`` or
``false``) the session's exit status becomes 1 and the summary lists the skips.
``tests/conftest.py`` loads it; ``tests/test_ci_skips.py`` runs it on a tiny suite.
"""

from __future__ import annotations

import os

import pytest


def in_ci() -> bool:
    """Whether ``CI`` asks for a run that skips nothing."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def _skips(config) -> list:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return [] if reporter is None else list(reporter.stats.get("skipped", ()))


def _why(report) -> str:
    """A skip report's reason, without pytest's ``Skipped: `` prefix."""
    longrepr = report.longrepr
    reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return reason.removeprefix("Skipped: ")


def pytest_sessionfinish(session, exitstatus) -> None:
    """In CI, skips turn a passing run into a failing one (an xdist worker leaves it to
    the controller, which sees every worker's reports)."""
    if hasattr(session.config, "workerinput") or not in_ci():
        return
    if _skips(session.config) and exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    skips = _skips(config) if in_ci() else []
    if not skips:
        return
    terminalreporter.section("skipped in CI", sep="=", red=True)
    terminalreporter.write_line(f"CI (the environment variable CI is set) skips nothing, and "
                                f"{len(skips)} test(s) skipped: the run fails.", red=True)
    for report in skips:
        terminalreporter.write_line(f"SKIPPED in CI: {report.nodeid}: {_why(report)}")
