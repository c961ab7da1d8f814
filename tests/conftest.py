"""Hypothesis profiles: a quick one for development, a thorough one for CI (CI=true); in CI,
a run that skips any test fails (``nothing_skipped``); and ``--dist loadgroup`` groups
(``xdist_groups``)."""

import os

from hypothesis import HealthCheck, settings

from nothing_skipped import pytest_sessionfinish, pytest_terminal_summary  # noqa: F401 (hooks)
from xdist_groups import pytest_collection_modifyitems  # noqa: F401 (a hook)

settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile("ci", max_examples=300, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
default_profile = "ci" if os.environ.get("CI") else "dev"
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or default_profile)
