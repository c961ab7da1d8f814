"""Local programs as indented text: what ``cpl show`` prints.

One line per statement, blocks indented two spaces, arrows pointing the way
messages travel (``send candidate → TestRunner``, ``recv candidate ←
Orchestrator``); decisions say who decides, by which guard, and whom the
owner tells.  The text is stable, so tests keep it as golden files.
"""

from __future__ import annotations

from .local import LAct, LAtomic, LBranch, LChoose, LLoop, LPar, LRecv, LSend, LWhile
from .project import Projection


def show(projection: Projection, lifeline: str | None = None, results: dict | None = None) -> str:
    names = [lifeline] if lifeline else list(projection.lifelines)
    parts = []
    for name in names:
        lines = [f"{name}:"]
        body = projection.program(name).body
        lines += _block(body, 1) if body else ["  (nothing)"]
        if results and results.get(name):
            lines.append(f"  result: {', '.join(results[name])}")
        parts.append("\n".join(lines))
    return "\n\n".join(parts) + "\n"


def _block(statements, depth: int) -> list[str]:
    lines: list[str] = []
    for statement in statements:
        lines += _statement(statement, depth)
    return lines


def _nested(title: str, statements, depth: int) -> list[str]:
    pad = "  " * depth
    return [f"{pad}{title}"] + (_block(statements, depth + 1) or [f"{pad}  (nothing)"])


def _label(label: str, default: str) -> str:
    return "" if label == default else f"  \"{label}\""


def _decided(label: str, guard) -> str:
    text = guard.canonical
    if label == " ".join(guard.text.split()):
        return f"by guard {text}"
    return f"{label} by guard {text}"


def _tell(tell) -> str:
    return f" → tell {', '.join(tell)}" if tell else ""


def _statement(s, depth: int) -> list[str]:
    pad = "  " * depth
    if isinstance(s, (LSend, LRecv)):
        default = ", ".join(s.vars) or "signal"
        what = ", ".join(v if v == i else f"{v} as {i}" for v, i in zip(s.vars, s.into)) \
            or "signal"
        arrow = f"send {what} → {s.to}" if isinstance(s, LSend) else f"recv {what} ← {s.frm}"
        return [f"{pad}{arrow}{_label(s.label, default)}"]
    if isinstance(s, LAct):
        if s.fn is None:
            return [f"{pad}{s.label}"]
        target = f" → {', '.join(s.assigns)}" if s.assigns else ""
        return [f"{pad}act {s.label}{target}"]
    if isinstance(s, LChoose):
        lines = [f"{pad}choose {_decided(s.label, s.guard)}{_tell(s.tell)}"]
        lines += _nested("then:", s.then, depth + 1)
        if s.else_:
            lines += _nested("else:", s.else_, depth + 1)
        return lines
    if isinstance(s, LBranch):
        how = {"control": f"branch on control from {s.owner}",
               "message": "branch on the first message",
               "unknown": "branch (never told the outcome!)"}[s.via]
        lines = [f"{pad}{how} [{s.label}]"]
        return lines + _nested("then:", s.then, depth + 1) + _nested("else:", s.else_, depth + 1)
    if isinstance(s, LWhile):
        return [f"{pad}while {_decided(s.label, s.guard)}{_tell(s.tell)}"] + \
            (_block(s.body, depth + 1) or [f"{pad}  (nothing)"])
    if isinstance(s, LLoop):
        how = f"loop on control from {s.owner}" if s.via == "control" else \
            "loop (never told when it ends!)"
        return [f"{pad}{how} [{s.label}]"] + (_block(s.body, depth + 1) or [f"{pad}  (nothing)"])
    if isinstance(s, LPar):
        lines = [f"{pad}parallel"]
        for number, thread in enumerate(s.threads, 1):
            lines += _nested(f"thread {number}:", thread, depth + 1)
        return lines
    if isinstance(s, LAtomic):  # its body, served without another thread's events between
        return [f"{pad}atomic"] + _block(s.body, depth + 1)
    raise TypeError(f"not a local statement: {s!r}")
