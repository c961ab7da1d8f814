"""LangGraph adapter: graph nodes as CPL lifelines, their tokens carried in graph state.

Why this shape: a LangGraph superstep runs its tasks concurrently, each on the state of
the previous barrier, so what a node has *seen* is exactly what reached it through state.
Each guarded node is a lifeline (a :class:`cpl.live.Agent`); the metadata travels where
the data travels, in one state channel, and the guards judge the causal past that
LangGraph really gave the node rather than the order its threads happened to finish in.

* **The channel.** Declare ``cpl: Tokens`` in the state schema.  Its value maps a
  receiving lifeline to ``{message id: token text}``.  :func:`merge_tokens`, its reducer,
  merges the writes of one superstep (distinct message ids commute) and deletes what a
  receiver consumed (an id mapped to ``None``).  It never raises: whatever a caller or a
  node wrote is filed under a receiver (or under :data:`UNADDRESSED`) and refused there.
* **Nodes.** ``guards.node(lifeline, fn, to=...)``: at the start the node receives the
  tokens addressed to its lifeline (a refused one is recorded as ``act("refused: ...")``
  and dropped); it copies the state keys named in ``reads`` into its store; at the end
  the guard variables in its update are recorded as one act, and one token per lifeline
  in ``to`` goes out in the update.  Several nodes may act as one lifeline when they
  never run in the same superstep.
* **Send fan-out.** Tasks of one superstep are concurrent, so each task is its own
  lifeline: declare ``family("worker", n)`` (``worker_0`` .. ``worker_{n-1}``) among the
  lifelines; ``guards.fan_out(sender, "worker", payloads)`` builds the Sends, payload *k*
  carrying a token addressed to ``worker_k``; ``guards.tasks("worker", fn)`` wraps the
  node, and each task acts as the member its payload's token names.
* **Conditional edge.** ``guards.route(label, if_true, if_false)`` is a routing function
  that records the owner's decision and routes by its value.
* **ToolNode.** ``guards.tool_calls("tool", guarded={...}, to=...)`` is a
  ``wrap_tool_call``: call *k* of the AIMessage runs as ``tool_k``; a guarded tool whose
  guard is false returns an error ToolMessage naming the guard, with its explanation,
  instead of running.  Per-member labels come from :func:`family_guards`.
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import Annotated, Any

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Command, Send

from cpl.live import Agent, LiveError, System

CHANNEL = "cpl"
UNADDRESSED = "?"  # receiver of entries nobody can be found for; the next node to run refuses them
MAX_TAKEN = 64  # tokens a node takes from state per run; more are refused in one record
MAX_REASON = 240  # characters of a refusal's reason kept in its record


class GraphGuardError(LiveError):
    """The adapter was used in a way it cannot guard; the message says the fix."""


def merge_tokens(current: Any, update: Any) -> dict:
    """The token channel's reducer: add new tokens, delete consumed ones, never raise."""
    merged = {r: dict(b) for r, b in current.items() if isinstance(b, dict)} \
        if isinstance(current, dict) else {}
    for receiver, entries in _addressed(update):
        bucket = merged.setdefault(receiver, {})
        for key, text in entries:
            if text is None:
                bucket.pop(key, None)
            else:
                bucket[key] = text
        if not bucket:
            del merged[receiver]
    return merged


Tokens = Annotated[dict, merge_tokens]
"""The state channel's type: ``cpl: Tokens`` in a TypedDict state schema."""


def family(name: str, size: int) -> tuple[str, ...]:
    """The lifelines of a fan-out: ``name_0`` .. ``name_{size-1}``, one per concurrent task."""
    if not isinstance(size, int) or isinstance(size, bool) or size < 1:
        raise GraphGuardError(f"a family needs at least one member, got size={size!r}")
    return tuple(f"{name}_{k}" for k in range(size))


def member_label(label: str, member: str) -> str:
    """The label a family member owns for a guard it shares with its siblings."""
    return f"{label} [{member}]"


def family_guards(label: str, members: Iterable[str],
                  guard: str | Callable[[str], str]) -> dict[str, tuple[str, str]]:
    """Guards for ``System``: one label per member (a label has one owner), the same guard
    text or ``guard(member)``."""
    return {member_label(label, m): (m, guard(m) if callable(guard) else guard)
            for m in members}


class GraphGuards:
    """The agents of one graph, and the wrappers that make its nodes lifelines."""

    def __init__(self, system: System, *, log: str | None = None, channel: str = CHANNEL):
        self.system = system
        self.channel = channel
        self._variables = frozenset(system.variables)
        self._agents = {name: system.agent(name, log=log) for name in system.lifelines}

    def agent(self, lifeline: str) -> Agent:
        """The agent of a lifeline (to act, decide or explain from inside a node)."""
        if lifeline not in self._agents:
            raise GraphGuardError(f"unknown lifeline {lifeline!r}: the system declares "
                                  f"{', '.join(self._agents)}")
        return self._agents[lifeline]

    def close(self) -> None:
        """Flush and close every agent's log."""
        for agent in self._agents.values():
            agent.close()

    def __enter__(self) -> GraphGuards:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- nodes ---------------------------------------------------------------------------

    def node(self, lifeline: str, fn: Callable, *, to: Iterable[str] | Callable = (),
             reads: Iterable[str] = ()) -> Callable:
        """Wrap a node function (sync or async) so that it runs as ``lifeline``.  A function
        that declares ``config``, ``agent`` or ``lifeline`` gets the RunnableConfig, the
        lifeline's Agent (to act or decide inside the node) or its name."""
        self.agent(lifeline)
        return self._wrap(fn, lambda tokens: lifeline, to, reads)

    def tasks(self, name: str, fn: Callable, *, to: Iterable[str] | Callable = (),
              reads: Iterable[str] = ()) -> Callable:
        """Wrap the node of a Send fan-out: each task runs as the family member that the
        token in its payload is addressed to (see :meth:`fan_out`)."""
        members = self._members(name)
        return self._wrap(fn, lambda tokens: self._member_of(tokens, name, members), to, reads)

    def fan_out(self, sender: str, node: str, payloads: Iterable[Mapping],
                *, name: str | None = None) -> list[Send]:
        """The Sends of a fan-out from ``sender``: payload *k* goes to ``node`` carrying a
        token addressed to member *k* of family ``name`` (default: the node's name)."""
        members = self._members(name or node)
        payloads = list(payloads)
        if len(payloads) > len(members):
            raise GraphGuardError(f"{len(payloads)} tasks but family {name or node!r} has "
                                  f"{len(members)} members: declare family({name or node!r}, "
                                  f"{len(payloads)}) or more among the lifelines")
        agent = self.agent(sender)
        sends = []
        for member, payload in zip(members, payloads):
            if not isinstance(payload, Mapping):
                raise GraphGuardError(f"a fan-out payload must be a mapping (the task's "
                                      f"input), got {type(payload).__name__}")
            token = agent.send(member)
            sends.append(Send(node, {**payload,
                                     self.channel: {member: {str(token.msg): token.text}}}))
        return sends

    def route(self, label: str, if_true: str, if_false: str) -> Callable[[Any], str]:
        """A guarded conditional edge: the owner of ``label`` decides (recording a choice
        event) and the graph goes to ``if_true`` or ``if_false``.  Attach it to a node of
        the owner's lifeline, so that the decision follows what that node received."""
        owner = self.agent(self.system.owner(label))

        def route(state: Any) -> str:
            return if_true if owner.decide(label) else if_false

        return route

    # -- ToolNode --------------------------------------------------------------------------

    def to_tool_calls(self, name: str) -> Callable[[Any], list[str]]:
        """A node's ``to=`` that addresses one token per tool call of the AIMessage it
        returns: call *k* to member *k* of family ``name`` (what :meth:`tool_calls` reads)."""
        members = self._members(name)

        def targets(result: Any) -> list[str]:
            update = result.update if isinstance(result, Command) else result
            calls = _last_tool_calls(update.get("messages") if isinstance(update, Mapping)
                                     else None)
            return list(members[:len(calls)])

        return targets

    def tool_calls(self, name: str, *, guarded: Mapping[str, str] = {},
                   to: Iterable[str] = (), messages_key: str = "messages") -> Callable:
        """A ToolNode ``wrap_tool_call``: call *k* of the last AIMessage runs as member *k*
        of family ``name``; it receives its tokens, records the call's arguments that are
        guard variables, and, for a tool in ``guarded`` (tool name -> label), decides
        ``member_label(label, member)`` first: false returns an error ToolMessage naming
        the guard, with its explanation.  A Mapping artifact of the result is recorded
        as the tool's effect; then one token per lifeline in ``to`` goes out."""
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
            consumed = self._take(agent, _field(request.state, self.channel), member)
            args = call.get("args")
            agent.act(f"call {call['name']}", **self._known(args))
            label = guarded.get(call["name"])
            if label is not None and not agent.decide(member_label(label, member)):
                why = agent.explain(member_label(label, member)).to_text()
                result = _error(call, f"refused by guard {member_label(label, member)!r}: "
                                      f"{why}")
            else:
                result = execute(request)
                artifact = getattr(result, "artifact", None)
                effects = self._known(artifact)
                if effects:
                    agent.act(f"{call['name']} done", **effects)
            channel_update = self._send(agent, targets, consumed)
            if isinstance(result, Command):
                return self._with_channel(result, channel_update, f"tool {call['name']}")
            return Command(update={messages_key: [result], self.channel: channel_update})

        return wrap_tool_call

    # -- inside ------------------------------------------------------------------------------

    def _wrap(self, fn: Callable, lifeline_of: Callable[[Any], str],
              to: Iterable[str] | Callable, reads: Iterable[str]) -> Callable:
        targets = to if callable(to) else self._targets(to)
        reads = tuple(reads)
        wants = inspect.signature(fn).parameters.keys() & {"config", "agent", "lifeline"}
        label = getattr(fn, "__name__", "node")

        def start(state: Any, config: RunnableConfig) -> tuple[Agent, dict, dict]:
            tokens = _field(state, self.channel)
            lifeline = lifeline_of(tokens)
            agent = self.agent(lifeline)
            consumed = self._take(agent, tokens, lifeline)
            seen = {k: _field(state, k) for k in reads if _field(state, k) is not None}
            if seen:
                agent.act(f"{label} reads", **seen)
            given = {"config": config, "agent": agent, "lifeline": lifeline}
            return agent, consumed, {k: given[k] for k in wants}

        def finish(agent: Agent, result: Any, consumed: dict) -> Any:
            update = result.update if isinstance(result, Command) else result
            if update is not None and not isinstance(update, Mapping):
                raise GraphGuardError(f"node {label!r} returned {type(update).__name__}: a "
                                      f"guarded node returns a dict, None or a Command "
                                      f"with a dict update")
            writes = self._known(update)
            if writes:
                agent.act(label, **writes)
            sent_to = self._targets(targets(result)) if callable(targets) else targets
            return self._with_channel(result, self._send(agent, sent_to, consumed), label)

        if inspect.iscoroutinefunction(fn):
            async def guarded_node(state: Any, config: RunnableConfig) -> Any:
                agent, consumed, extra = start(state, config)
                return finish(agent, await fn(state, **extra), consumed)
        else:
            def guarded_node(state: Any, config: RunnableConfig) -> Any:
                agent, consumed, extra = start(state, config)
                return finish(agent, fn(state, **extra), consumed)
        guarded_node.__name__ = guarded_node.__qualname__ = label
        return guarded_node

    def _take(self, agent: Agent, tokens: Any, lifeline: str) -> dict:
        """Receive the tokens addressed to ``lifeline`` (and unaddressed ones): each one
        is received or refused, and all are consumed.  -> the channel's deletions."""
        inbox = merge_tokens({}, tokens)
        consumed = {}
        for receiver in (lifeline, UNADDRESSED):
            entries = list(inbox.get(receiver, {}).items())
            for _, text in entries[:MAX_TAKEN]:
                _receive(agent, text)
            if len(entries) > MAX_TAKEN:
                agent.act(f"refused: {len(entries) - MAX_TAKEN} more tokens than the "
                          f"{MAX_TAKEN} a node takes at once")
            if entries:
                consumed[receiver] = dict.fromkeys(key for key, _ in entries)
        return consumed

    def _send(self, agent: Agent, targets: Iterable[str], consumed: dict) -> dict:
        """One token to each target, beside the deletions: the channel's update."""
        channel_update = {receiver: dict(keys) for receiver, keys in consumed.items()}
        for target in targets:
            token = agent.send(target)
            channel_update.setdefault(target, {})[str(token.msg)] = token.text
        return channel_update

    def _with_channel(self, result: Any, channel_update: dict, label: str) -> Any:
        update = result.update if isinstance(result, Command) else result
        if isinstance(update, Mapping) and self.channel in update:
            raise GraphGuardError(f"{label!r} writes the token channel {self.channel!r} "
                                  f"itself: leave it to the adapter")
        merged = {**(update or {}), self.channel: channel_update}
        return replace(result, update=merged) if isinstance(result, Command) else merged

    def _known(self, values: Any) -> dict:
        """The guard variables among a mapping's keys (what a node or tool reports)."""
        if not isinstance(values, Mapping):
            return {}
        return {k: values[k] for k in self._variables if k in values}

    def _targets(self, targets: Iterable[str]) -> tuple[str, ...]:
        if isinstance(targets, str):
            targets = (targets,)
        targets = tuple(targets)
        for target in targets:
            self.agent(target)
        return targets

    def _members(self, name: str) -> tuple[str, ...]:
        members = []
        while f"{name}_{len(members)}" in self._agents:
            members.append(f"{name}_{len(members)}")
        if not members:
            raise GraphGuardError(f"no family {name!r}: declare its members among the "
                                  f"lifelines, e.g. *family({name!r}, 4)")
        return tuple(members)

    def _member_of(self, tokens: Any, name: str, members: tuple[str, ...]) -> str:
        named = [m for m in merge_tokens({}, tokens) if m in members]
        if len(named) != 1:
            raise GraphGuardError(f"a task of fan-out {name!r} must carry a token for exactly "
                                  f"one member, it names {len(named)}: build its Send with "
                                  f"GraphGuards.fan_out")
        return named[0]


def _receive(agent: Agent, text: Any) -> None:
    if not isinstance(text, (str, bytes)):
        agent.act(f"refused: malformed token: a {type(text).__name__}, not text")
        return
    try:
        agent.receive(text)
    except LiveError as refused:
        agent.act(f"refused: {_bounded(str(refused))}")


def _addressed(update: Any) -> Iterable[tuple[str, list[tuple[str, Any]]]]:
    """An update's entries by receiver, whatever its shape: what cannot be attributed to
    a receiver goes to UNADDRESSED, keys that are not strings get a digest of the value."""
    if update is None:
        return
    if not isinstance(update, Mapping):
        yield UNADDRESSED, [(_digest(update), update)]
        return
    for receiver, bucket in update.items():
        if not isinstance(receiver, str):
            receiver, bucket = UNADDRESSED, [bucket]
        if isinstance(bucket, Mapping):
            yield receiver, [(k if isinstance(k, str) else _digest(v), v)
                             for k, v in bucket.items()]
        elif isinstance(bucket, (list, tuple)):
            yield receiver, [(_digest(v), v) for v in bucket if v is not None]
        elif bucket is not None:
            yield receiver, [(_digest(bucket), bucket)]


def _digest(value: Any) -> str:
    try:
        shown = repr(value)[:4096]
    except Exception:  # a hostile value's own __repr__ may raise anything
        shown = type(value).__name__
    return "raw:" + hashlib.sha1(shown.encode("utf-8", "replace")).hexdigest()[:16]


def _bounded(text: str) -> str:
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 1] + "…"


def _field(state: Any, key: str) -> Any:
    """A state key, whether the state is a mapping or an object (dataclass, pydantic)."""
    if isinstance(state, Mapping):
        return state.get(key)
    return getattr(state, key, None)


def _last_tool_calls(messages: Any) -> list:
    if isinstance(messages, AIMessage):
        return list(messages.tool_calls)
    if isinstance(messages, (list, tuple)):
        for message in reversed(messages):
            if isinstance(message, AIMessage):
                return list(message.tool_calls)
    return []


def _slot(state: Any, call: Mapping, members: tuple[str, ...], key: str) -> str | None:
    """The member a tool call runs as: its index among the last AIMessage's calls."""
    ids = [c.get("id") for c in _last_tool_calls(_field(state, key))]
    index = ids.index(call.get("id")) if call.get("id") in ids else None
    return members[index] if index is not None and index < len(members) else None


def _error(call: Mapping, content: str) -> ToolMessage:
    return ToolMessage(content=content, name=call.get("name"), tool_call_id=call.get("id"),
                       status="error")
