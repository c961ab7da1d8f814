"""A CPL guard as an OpenAI Agents SDK tool input guardrail.

The SDK's guardrails judge one call from its arguments; a CPL guard judges it from what the
calling lifeline has causally seen (``@FraudCheck(verdict == clear)``: the fraud check's latest
verdict that reached *this* agent).  So a guarded tool call is an event of its owner lifeline:

- tokens other lifelines sent it wait in the run context (a :class:`CausalContext`, the object
  given as ``Runner.run(..., context=...)``) and are received just before the guard is judged,
  so the decision sees them; a refused token is recorded as ``refused: <reason>`` and changes
  nothing else;
- the values the call is about (``bind(arguments)``, e.g. the order to refund) are set by an act
  event named after the tool;
- ``decide(label)`` records the choice; a false guard rejects the call with
  ``reject_content``, whose message (the guard's explanation) is what the model sees.

Whatever a model or a peer puts in the arguments or the context, the guardrail answers with
allow or a rejection, never an exception out of ``Runner.run``.  The tool's own effects are
recorded by its body with the lifeline's ``act``/``send``, as any other code of that agent.
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from agents import ToolGuardrailFunctionOutput, ToolInputGuardrail, ToolInputGuardrailData

from cpl.live import Agent, LiveError, Token, TokenRefused

MAX_WAITING_TOKENS = 256
"""Tokens that may wait for one lifeline; a peer flooding it is refused, not buffered forever."""

MAX_ARGUMENTS_CHARS = 65536
"""Tool arguments longer than this are not parsed to bind guard variables."""

MAX_REJECTION_CHARS = 4000
"""A rejection the model reads: the explanation is cut here so one call cannot flood the context."""

Bind = Callable[[Mapping[str, Any]], Mapping[str, Any]]


class CausalContext:
    """Run context whose tools are lifelines' events: the tokens waiting for each lifeline.

    Why in the context: the SDK hands the same context object to every tool and guardrail of
    a run (and callers may share it between runs), so a token delivered by another agent, a
    plain-Python lifeline or a request handler reaches the guarded call without globals.
    Subclass it to add your own fields.  Thread-safe.
    """

    def __init__(self) -> None:
        self._waiting: dict[str, deque[Token | str | bytes]] = {}
        self._lock = threading.Lock()

    def deliver(self, to: str, token: Token | str | bytes) -> None:
        """Leave ``token`` for lifeline ``to``; its next guarded tool call receives it."""
        if not isinstance(token, (Token, str, bytes)):
            raise TypeError(f"a token is a cpl.live.Token, its text or its bytes, "
                            f"not {type(token).__name__}")
        with self._lock:
            waiting = self._waiting.setdefault(to, deque())
            if len(waiting) >= MAX_WAITING_TOKENS:
                raise OverflowError(
                    f"{MAX_WAITING_TOKENS} tokens already wait for {to!r}: receive them "
                    "(a guarded tool call of that lifeline does) before delivering more")
            waiting.append(token)

    def take(self, lifeline: str) -> list[Token | str | bytes]:
        """Remove and return the tokens waiting for ``lifeline``, oldest first."""
        with self._lock:
            waiting = self._waiting.pop(lifeline, None)
        return list(waiting) if waiting else []


def receive_waiting(agent: Agent, context: object) -> list[str]:
    """Receive every token the run context holds for ``agent``; return the refusal reasons.

    A refused token is recorded as the act ``refused: <reason>`` (the caller must see it in the
    trace) and leaves the monitor as it was.
    """
    if not isinstance(context, CausalContext):
        return []
    refusals = []
    for token in context.take(agent.lifeline):
        try:
            agent.receive(token)
        except TokenRefused as refused:
            refusals.append(refused.reason)
            agent.refused(refused.reason)  # counted, not an act each (Agent.refused)
    return refusals


def causal_guardrail(agent: Agent, label: str, *, bind: Bind | None = None,
                     name: str | None = None) -> ToolInputGuardrail[Any]:
    """A tool input guardrail that lets a call run only when ``agent``'s guard ``label`` holds.

    ``agent`` is the owner of ``label`` (the lifeline that makes the call).  ``bind`` maps the
    call's arguments (a JSON object) to the variables it sets before the decision, e.g.
    ``lambda args: {"order": args["order"]}`` for a guard that compares ``order``.
    """
    agent.holds(label)  # misuse (unknown label, not the owner) is the programmer's: fail here
    name = name or f"cpl:{label}"

    def judge(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
        tool = data.context.tool_name
        refusals = receive_waiting(agent, data.context.context)
        try:
            updates = _bound_values(bind, data.context.tool_arguments)
            agent.act(tool, **updates)
        except (LiveError, _UnusableArguments) as unusable:
            agent.act(f"refused: arguments of {tool}")
            return _reject(f"{tool} refused: its arguments cannot be judged by guard "
                           f"{label!r}: {unusable}", refusals)
        if agent.decide(label):
            return ToolGuardrailFunctionOutput.allow({"label": label, "refused_tokens": refusals})
        explanation = agent.explain(label).to_text()
        return _reject(f"{tool} refused: guard {label!r} is false at {agent.lifeline}, "
                       f"from what it has seen so far:\n{explanation}", refusals)

    return ToolInputGuardrail(guardrail_function=judge, name=name)


class _UnusableArguments(ValueError):
    """Tool arguments that are not a JSON object ``bind`` can read."""


def _bound_values(bind: Bind | None, arguments: str) -> Mapping[str, Any]:
    if bind is None:
        return {}
    if len(arguments) > MAX_ARGUMENTS_CHARS:
        raise _UnusableArguments(f"{len(arguments)} characters, more than {MAX_ARGUMENTS_CHARS}")
    try:
        parsed = json.loads(arguments or "{}")
    except (ValueError, RecursionError) as bad:
        raise _UnusableArguments(f"not JSON ({bad})") from None
    if not isinstance(parsed, dict):
        raise _UnusableArguments(f"a JSON {type(parsed).__name__}, not an object")
    try:
        updates = bind(parsed)
    except (KeyError, TypeError, ValueError) as missing:
        raise _UnusableArguments(f"{type(missing).__name__}: {missing}") from None
    if not isinstance(updates, Mapping) or not all(isinstance(key, str) for key in updates):
        raise _UnusableArguments("bind must return a mapping of variable names to values")
    return updates


def _reject(message: str, refusals: list[str]) -> ToolGuardrailFunctionOutput:
    if refusals:
        message += f"\n(tokens refused before deciding: {', '.join(refusals)})"
    if len(message) > MAX_REJECTION_CHARS:
        message = message[:MAX_REJECTION_CHARS - 15] + "\n… (truncated)"
    return ToolGuardrailFunctionOutput.reject_content(message, {"refused_tokens": refusals})
