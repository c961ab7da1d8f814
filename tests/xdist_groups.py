"""``--dist loadgroup`` groups again under pytest ≥ 9.2 (pytest-xdist issue #1386).

pytest-xdist sends the tests of one ``xdist_group`` to one worker by appending
``@GROUP`` to their node ids; pytest 9.2 keeps a node's id in a structured field, so
that write no longer takes, and every group is silently spread over the workers:
the Ray tests then start a cluster on each worker, and the sub-second stop timings
run beside them (the "timing" group).  Here the id is set where pytest 9.2 keeps it,
after xdist's own hook, and only where xdist's did not take, so a fixed xdist, or
an older pytest, leaves nothing for this to do.  ``tests/conftest.py`` loads it;
``tests/test_ci_skips.py`` checks on a tiny suite that a group runs on one worker.
"""

from __future__ import annotations

import pytest


def _groups(item) -> list[str]:
    return sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                   for mark in item.iter_markers("xdist_group")})


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config, items) -> None:
    if not getattr(config.option, "loadgroup", False):  # set on xdist's workers only
        return
    try:
        from _pytest.nodeid import NodeId  # pytest >= 9.2
    except ImportError:
        return
    for item in items:
        groups = _groups(item)
        suffix = "@" + "_".join(groups)
        if groups and not item.nodeid.endswith(suffix) and hasattr(item, "_id"):
            item._id = NodeId.parse(item.nodeid + suffix)
