"""What an adapter's message is labelled with: what it carries, so that a picture of the
run (``cpl render``) says more than which node sent it.  Labels are text an agent records
(at most 1,000 characters): state keys are named, cut and counted, never their values.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_KEYS = 8  # state keys named in a message's label, at most
MAX_KEY = 40  # characters of each


def _keys(values: Any, channel: str) -> str:
    """The state keys of an update or a Send's payload, as a message's label names them:
    ``{patch, candidate}`` (the token channel left out; a long list ends in …)."""
    keys = [k if isinstance(k, str) else _shown(k) for k in values
            if not (isinstance(k, str) and k == channel)] if isinstance(values, Mapping) else []
    shown = [k if len(k) <= MAX_KEY else k[:MAX_KEY - 1] + "…" for k in keys[:MAX_KEYS]]
    return "{" + ", ".join(shown + ["…"] * (len(keys) > MAX_KEYS)) + "}"


def update_label(node: str, update: Any, channel: str) -> str:
    """A node's message: its name and the state keys its update wrote, which travel with
    the token (``author {patch, candidate}``); the name alone for an empty update."""
    keys, node = _keys(update, channel), node[:200]
    return node if keys == "{}" else f"{node} {keys}"


def send_label(node: str, payload: Mapping, channel: str) -> str:
    """A fan-out's message: the ``Send`` it rides, its target node and payload keys
    (``Send(worker, {item})``)."""
    return f"Send({node[:MAX_KEY]}, {_keys(payload, channel)})"


def _shown(key: Any) -> str:
    try:
        return repr(key)[:MAX_KEY]
    except Exception:  # a hostile key's own __repr__ may raise anything
        return type(key).__name__


__all__ = ["send_label", "update_label"]
