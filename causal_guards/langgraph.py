"""LangGraph adapter: graph nodes as CPL lifelines, their tokens carried in graph state.

A superstep runs its tasks concurrently, each on the state of the previous barrier, so
what a node has *seen* is what reached it through state: the tokens travel there too,
and a guard judges the causal past LangGraph gave the node, not the order its threads
happened to finish in.

* **Channel**: ``cpl: Tokens`` in the state schema (see :mod:`causal_guards.graph_channel`).
* **Nodes**: ``guards.node(lifeline, fn, to=..., reads=...)`` receives the tokens for
  ``lifeline``, at most MAX_TAKEN a run (the rest wait in the state for its next run,
  ``guards.until_taken`` routes it back for them; a refused token is recorded as
  ``refused: <reason>``, counted as ``Agent.refused`` counts), the state keys in
  ``reads`` set by the first receive; at the end its update's guard variables are one act,
  and one token per lifeline in ``to`` goes out in it, labelled ``fn {the update's keys}``.
* **Send fan-out**: one lifeline per task, ``worker_k`` of ``family("worker", n)``, which
  ``guards.fan_out(sender, "worker", payloads)`` sends payload *k* to as ``Send(worker,
  {its keys})``; ``guards.tasks("worker", fn)`` runs each task as the member it names.
* **Conditional edge**: ``guards.route(label, if_true, if_false)`` decides at the owner.
* **ToolNode**: ``guards.tool_calls("tool", guarded=...)`` is a ``wrap_tool_call`` running
  call *k* of the AIMessage as ``tool_k``; a false guard returns an error ToolMessage
  naming it, with its explanation, instead of running the tool.
"""

from __future__ import annotations

import inspect
import os
import threading
from collections import OrderedDict
from itertools import count, islice, takewhile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Send

from causal_guards.families import family, family_guards, member_label  # noqa: F401 (face)
from causal_guards.graph_channel import UNADDRESSED, Tokens, merge_tokens  # noqa: F401 (face)
from causal_guards.labels import send_label, update_label
from cpl.live import (Agent, LiveError, System, Token, TokenRefused, UndeclaredVariable,
                      UnknownLifeline)

CHANNEL = "cpl"
MAX_TAKEN = 64  # entries a node run takes from state (bounds its work); more wait for its next run
MAX_MADE = 4096  # tokens sent and not yet received whose Token objects are kept


class GraphGuardError(LiveError):
    """The adapter was used in a way it cannot guard; the message says the fix."""


class GraphGuards:
    """The agents of one graph, and the wrappers that make its nodes lifelines."""

    def __init__(self, system: System, *, log: str | None = None, channel: str = CHANNEL,
                 overwrite: bool = False):
        """``log``: a folder (made if missing) for one ``<lifeline>.jsonl`` per agent; logs
        there already are an earlier run's, replaced only with ``overwrite``."""
        self.system, self.channel, self._variables = system, channel, system.variables
        if log is not None:
            os.makedirs(log, exist_ok=True)
            log = os.path.join(log, "")
        self._agents = {}
        try:
            for name in system.lifelines:
                self._agents[name] = system.agent(name, log=log, overwrite=overwrite)
        except LiveError:  # an earlier run's log: the agents made so far close theirs
            for agent in self._agents.values():
                agent.close()
            raise
        self._made: OrderedDict[str, Token] = OrderedDict()  # text -> Token, not yet received
        self._made_lock = threading.Lock()

    def agent(self, lifeline: str) -> Agent:
        """The agent of a lifeline (to act, decide or explain from inside a node)."""
        if lifeline not in self._agents:
            raise UnknownLifeline(lifeline, self.system.lifelines)
        return self._agents[lifeline]

    def close(self) -> None:
        """Flush and close every agent's log."""
        for agent in self._agents.values():
            agent.close()

    def __enter__(self) -> GraphGuards:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def node(self, lifeline: str, fn: Callable, *, to: Iterable[str] | Callable = (),
             reads: Iterable[str] = ()) -> Callable:
        """Wrap a node function (sync or async) so that it runs as ``lifeline``.  A function
        that declares ``config``, ``agent`` or ``lifeline`` gets the RunnableConfig, the
        lifeline's Agent (to act or decide inside the node) or its name."""
        self.agent(lifeline)
        return self._wrap(fn, lambda tokens: lifeline, to, reads)

    def tasks(self, name: str, fn: Callable, *, to: Iterable[str] | Callable = (),
              reads: Iterable[str] = ()) -> Callable:
        """Wrap the node of a Send fan-out: each task runs as the member of family ``name``
        that the token in its payload (see :meth:`fan_out`) is addressed to."""
        members = self._members(name)
        return self._wrap(fn, lambda tokens: self._member_of(tokens, name, members), to, reads)

    def fan_out(self, sender: str, node: str, payloads: Iterable[Mapping],
                *, name: str | None = None) -> list[Send]:
        """The Sends of a fan-out from ``sender``: payload *k* goes to ``node`` carrying a
        token addressed to member *k* of family ``name`` (default: the node's name)."""
        members = self._members(name or node)
        payloads = list(payloads)
        if len(payloads) > len(members):
            raise GraphGuardError(f"{len(payloads)} tasks for the {len(members)} members of "
                                  f"{name or node!r}: declare more lifelines with family()")
        agent = self.agent(sender)
        sends = []
        for member, payload in zip(members, payloads):
            if not isinstance(payload, Mapping):
                raise GraphGuardError(f"a fan-out payload is a mapping, not {payload!r:.60}")
            token = self._token(agent, member, send_label(node, payload, self.channel))
            sends.append(Send(node, {**payload, self.channel: {member: token}}))
        return sends

    def route(self, label: str, if_true: str, if_false: str) -> Callable[[Any], str]:
        """A guarded conditional edge: the owner of ``label`` decides (a choice event), the
        graph goes on by its value.  Attach it to a node of the owner's lifeline."""
        owner = self.agent(self.system.owner(label))

        def route(state: Any) -> str:
            return if_true if owner.decide(label) else if_false

        return route

    def to_tool_calls(self, name: str, messages_key: str = "messages") -> Callable:
        """A node's ``to=`` that addresses one token per tool call of the AIMessage it
        returns: call *k* to member *k* of family ``name`` (what :meth:`tool_calls` reads)."""
        members = self._members(name)

        def targets(result: Any) -> list[str]:
            update = result.update if isinstance(result, Command) else result
            return list(members[:len(_last_tool_calls(_field(update, messages_key)))])

        return targets

    def tool_calls(self, name: str, *, guarded: Mapping[str, str] = {},
                   to: Iterable[str] = (), messages_key: str = "messages") -> Callable:
        """A ToolNode ``wrap_tool_call``: call *k* of the last AIMessage runs as member *k* of
        family ``name``, its arguments that are guard variables set by its first receive.
        A tool in ``guarded`` (tool name -> label) first decides ``member_label(label,
        member)``; a Mapping artifact of the result is recorded as the tool's effect."""
        members = self._members(name)
        targets = self._targets(to)
        for label in guarded.values():
            for member in members:
                if self.system.owner(member_label(label, member)) != member:
                    raise GraphGuardError(f"{member_label(label, member)!r} must be owned by "
                                          f"{member!r}: build the guards with family_guards")

        def wrap_tool_call(request: Any, execute: Callable) -> ToolMessage | Command:
            call = request.tool_call
            member = _slot(request.state, call, members, messages_key)
            if member is None:
                return _error(call, f"no lifeline for this tool call: family {name!r} has "
                                    f"{len(members)} members, one per call of a message")
            agent = self._agents[member]
            consumed = self._take(agent, _field(request.state, self.channel), member,
                                  self._known(call.get("args")), f"call {call['name']}")
            label = guarded.get(call["name"])
            decision = label and member_label(label, member)
            if decision and not agent.decide(decision):
                result = _error(call, f"refused by guard {decision!r}: "
                                      f"{agent.explain(decision).to_text().rstrip()}")
            else:
                result = execute(request)
                effects = self._known(getattr(result, "artifact", None))
                if effects:
                    agent.act(f"{call['name']} done", **effects)
            channel_update = self._send(agent, targets, consumed, f"{call['name']} result")
            if isinstance(result, Command):
                return self._with_channel(result, channel_update, f"tool {call['name']}")
            return Command(update={messages_key: [result], self.channel: channel_update})

        return wrap_tool_call

    def _wrap(self, fn: Callable, lifeline_of: Callable[[Any], str],
              to: Iterable[str] | Callable, reads: Iterable[str]) -> Callable:
        targets = to if callable(to) else self._targets(to)
        reads = tuple(reads)
        for name in reads:
            if name not in self._variables:
                raise UndeclaredVariable(name, self._variables)
        wants = inspect.signature(fn).parameters.keys() & {"config", "agent", "lifeline"}
        label = getattr(fn, "__name__", "node")
        reads_label = f"{label} reads"

        def start(state: Any, config: RunnableConfig) -> tuple[Agent, dict, dict]:
            tokens = _field(state, self.channel)
            lifeline = lifeline_of(tokens)
            agent = self.agent(lifeline)
            seen = {k: v for k in reads if (v := _field(state, k)) is not None}
            consumed = self._take(agent, tokens, lifeline, seen, reads_label)
            given = {"config": config, "agent": agent, "lifeline": lifeline} if wants else {}
            return agent, consumed, {k: given[k] for k in wants}

        def finish(agent: Agent, result: Any, consumed: dict) -> Any:
            update = result.update if isinstance(result, Command) else result
            if update is not None and not isinstance(update, Mapping):
                raise GraphGuardError(f"node {label!r} returned {type(update).__name__}: a guarded "
                                      f"node returns a dict, None or a Command of a dict")
            writes = self._known(update)
            if writes:
                agent.act(label, **writes)
            sent_to = self._targets(targets(result)) if callable(targets) else targets
            sent = self._send(agent, sent_to, consumed, update_label(label, update, self.channel))
            return self._with_channel(result, sent, label)

        async def guarded_async(state: Any, config: RunnableConfig) -> Any:
            agent, consumed, extra = start(state, config)
            return finish(agent, await fn(state, **extra), consumed)

        def guarded_sync(state: Any, config: RunnableConfig) -> Any:
            agent, consumed, extra = start(state, config)
            return finish(agent, fn(state, **extra), consumed)

        guarded_node = guarded_async if inspect.iscoroutinefunction(fn) else guarded_sync
        guarded_node.__name__ = guarded_node.__qualname__ = label
        return guarded_node

    def _take(self, agent: Agent, tokens: Any, lifeline: str, seen: dict, label: str) -> dict:
        """Receive or refuse the tokens for ``lifeline`` (then unaddressed ones), at most
        MAX_TAKEN: the rest stay in the state for the next run, never deleted unread.
        ``seen`` (what came with them) is set by the first receive, else by an act.
        -> the deletions of the entries taken."""
        normal = type(tokens) is dict and all(type(b) is dict for b in tokens.values())
        inbox = tokens if normal else merge_tokens({}, tokens)
        consumed, budget = {}, MAX_TAKEN
        for receiver in (lifeline, UNADDRESSED):
            taken = list(islice(inbox.get(receiver, {}).items(), budget))
            for _, text in taken:
                if self._receive(agent, text, seen):
                    seen = {}
            if taken:
                consumed[receiver] = dict.fromkeys(key for key, _ in taken)
                budget -= len(taken)
        if seen:
            agent.act(label, **seen)
        return consumed

    def waiting(self, state: Any, lifeline: str) -> int:
        """How many tokens for ``lifeline`` wait in ``state`` (a run takes MAX_TAKEN)."""
        return len(merge_tokens({}, _field(state, self.channel)).get(lifeline, ()))

    def until_taken(self, lifeline: str, node: str, then: Callable[[Any], Any]) -> Callable:
        """A conditional edge for ``node``, a node of ``lifeline`` that may be sent more
        tokens than one run takes (a fan-out of more than MAX_TAKEN tasks into it): back to
        ``node`` while tokens for it wait, then wherever ``then`` routes."""
        self.agent(lifeline)

        def until_taken(state: Any) -> Any:
            return node if self.waiting(state, lifeline) else then(state)

        return until_taken

    def _receive(self, agent: Agent, text: Any, seen: dict) -> bool:
        """Receive one entry setting ``seen``, or record why not.  Text this object made is
        received as the Token it was made from: the same token, checked alike, without
        decoding it again (decoding is most of what a guarded step costs)."""
        if not isinstance(text, (str, bytes)):
            agent.refused("malformed")  # counted, not an act each: a flood stays small
            return False
        with self._made_lock:
            token = self._made.pop(text, text) if isinstance(text, str) else text
        try:
            agent.receive(token, **seen)
            return True
        except TokenRefused as refused:
            agent.refused(refused.reason)
            return False

    def _send(self, agent: Agent, targets: Iterable[str], consumed: dict, label: str) -> dict:
        """One token to each target, beside the deletions: the channel's update."""
        channel_update = {receiver: dict(keys) for receiver, keys in consumed.items()}
        for target in targets:
            channel_update.setdefault(target, {}).update(self._token(agent, target, label))
        return channel_update

    def _token(self, agent: Agent, to: str, label: str) -> dict[str, str]:
        """Send to ``to``: ``{message id: token text}``, kept for :meth:`_receive` (the
        oldest forgotten past MAX_MADE)."""
        token = agent.send(to, label)
        with self._made_lock:
            self._made[token.text] = token
            if len(self._made) > MAX_MADE:
                self._made.popitem(last=False)
        return {token.msg: token.text}

    def _with_channel(self, result: Any, channel_update: dict, label: str) -> Any:
        update = result.update if isinstance(result, Command) else result
        if isinstance(update, Mapping) and self.channel in update:
            raise GraphGuardError(f"{label!r} writes the token channel {self.channel!r} "
                                  f"itself: leave it to the adapter")
        if not channel_update:
            return result
        merged = {**(update or {}), self.channel: channel_update}
        return replace(result, update=merged) if isinstance(result, Command) else merged

    def _known(self, values: Any) -> dict:
        """The guard variables among a mapping's keys (what a node or tool reports)."""
        if not isinstance(values, (dict, Mapping)):  # dict first: the common case, no ABC check
            return {}
        return {k: v for k, v in values.items() if k in self._variables}

    def _targets(self, targets: Iterable[str]) -> tuple[str, ...]:
        targets = (targets,) if isinstance(targets, str) else tuple(targets)
        for target in targets:
            self.agent(target)  # an unknown lifeline is named now, not at the first send
        return targets

    def _members(self, name: str) -> tuple[str, ...]:
        members = tuple(takewhile(self._agents.__contains__, (f"{name}_{k}" for k in count())))
        if not members:
            raise GraphGuardError(f"no family {name!r}: declare its members among the "
                                  f"lifelines, e.g. *family({name!r}, 4)")
        return members

    def _member_of(self, tokens: Any, name: str, members: tuple[str, ...]) -> str:
        named = [m for m in merge_tokens({}, tokens) if m in members]
        if len(named) != 1:
            raise GraphGuardError(f"a task of fan-out {name!r} carries a token for one member, "
                                  f"not {len(named)}: make its Send with GraphGuards.fan_out")
        return named[0]


def _field(state: Any, key: str) -> Any:
    """A state key, whether the state is a dict or an object (dataclass, pydantic)."""
    return state.get(key) if isinstance(state, dict) else getattr(state, key, None)


def _last_tool_calls(messages: Any) -> list:
    messages = [messages] if isinstance(messages, AIMessage) else messages
    if isinstance(messages, (list, tuple)):
        for message in reversed(messages):
            if isinstance(message, AIMessage):
                return list(message.tool_calls)
    return []


def _slot(state: Any, call: Mapping, members: tuple[str, ...], key: str) -> str | None:
    """The member a tool call runs as: its index among the last AIMessage's calls."""
    ids = [c.get("id") for c in _last_tool_calls(_field(state, key))]
    index = ids.index(call.get("id")) if call.get("id") in ids else len(members)
    return members[index] if index < len(members) else None


def _error(call: Mapping, content: str) -> ToolMessage:
    return ToolMessage(content, name=call.get("name"), tool_call_id=call.get("id"), status="error")
