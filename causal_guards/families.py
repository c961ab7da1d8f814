"""Families of lifelines: one lifeline per concurrent task of a fan-out.

A guard has one owner, so a decision that every member of a fan-out takes is one label
per member. Nothing here depends on a framework: any adapter that fans out can use it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

__all__ = ["family", "family_guards", "member_label"]


def family(name: str, size: int) -> tuple[str, ...]:
    """The lifelines of a fan-out: ``name_0`` .. ``name_{size-1}``, one per concurrent task."""
    return tuple(f"{name}_{k}" for k in range(size))


def member_label(label: str, member: str) -> str:
    """The label a family member owns for a guard it shares with its siblings."""
    return f"{label} [{member}]"


def family_guards(label: str, members: Iterable[str],
                  guard: str | Callable[[str], str]) -> dict[str, tuple[str, str]]:
    """``System`` guards, one label per member (a label has one owner): text or guard(member)."""
    return {member_label(label, m): (m, guard(m) if callable(guard) else guard)
            for m in members}
