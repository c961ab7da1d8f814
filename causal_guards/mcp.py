"""CPL guards over MCP: the caller's causal past travels with each tool call.

An MCP client and server are two agents (two lifelines of one ``cpl.live.System``).
The client's token rides in the request's ``params._meta`` under ``TOKEN_KEY``; the
server receives it before the tool runs, so a guard on the tool sees everything the
caller had seen, and the server's own token rides back in the result's ``_meta``.
A guard that is false, and a token that is missing, malformed, oversized, replayed,
forged or from another system, give an error result (``isError``) the model can read,
never a crash of the server.

Client::

    result = await call_tool(client, drafter, "Mailer", "send_email", {"draft": "d1"})

Server::

    tools = CausalTools(mailer)

    @server.tool()
    @tools.tool(guard="send", assign=("draft",))
    async def send_email(to: str, draft: str) -> str: ...
"""

from __future__ import annotations

import functools
import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

import anyio.to_thread
import attrs
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.utilities.func_metadata import func_metadata
from mcp.types import CallToolResult, TextContent

from cpl.live import (Agent, LiveError, LogFailed, NotOwner, Token, TokenRefused,
                      UndeclaredVariable)


TOKEN_KEY = "causal-guards/token"
"""The ``_meta`` key of the token, namespaced as MCP asks of keys that are not its own."""

_CONTEXT_PARAMETER = "causal_guards_context"  # added to a tool that asks for no Context

Tool = TypeVar("Tool", bound=Callable[..., Any])


async def call_tool(client: Any, agent: Agent, server: str, name: str,
                    arguments: Mapping[str, Any] | None = None, *, label: str | None = None,
                    meta: Mapping[str, Any] | None = None, **options: Any) -> CallToolResult:
    """Call tool ``name`` as ``agent``, whose message (``label``, by default the tool's name)
    goes to the lifeline ``server`` of the MCP server; then receive the server's token
    from the result, so what the server did is in ``agent``'s causal past.

    ``client`` is an ``mcp.Client`` or ``mcp.ClientSession``; ``options`` go to its
    ``call_tool``. A result without a token (the server refused ours, or it is not
    causally guarded) receives nothing: the message stays in transit in the trace. A
    reply token the agent refuses is recorded as ``refused: ...`` and the result is
    returned as it came."""
    token = agent.send(server, label or name)
    result = await client.call_tool(name, dict(arguments or {}),
                                    meta={**(meta or {}), TOKEN_KEY: token.text}, **options)
    reply = (result.meta or {}).get(TOKEN_KEY)
    if reply is not None:
        try:
            agent.receive(_token_text(reply))
        except TokenRefused as refusal:
            agent.act(f"refused: the reply of {name}: {refusal.reason}")
    return result


@attrs.frozen
class CausalTools:
    """The MCP server's agent, and a decorator that makes its tools receive the
    caller's token, decide a guard before running and reply with a token."""

    agent: Agent

    def tool(self, guard: str | None = None, *,
             assign: Sequence[str] = ()) -> Callable[[Tool], Tool]:
        """Wrap a tool function (place it under ``@server.tool()``).

        On each call the agent receives the caller's token, setting the tool arguments
        named in ``assign`` as its variables of the same names; then, with ``guard`` (a
        label this agent owns), it decides the guard and runs the tool only when it
        holds. Without ``guard`` a call carrying no token runs unrecorded (a caller that
        is not guarded), but a bad token is still refused."""
        system, lifeline = self.agent.system, self.agent.lifeline
        if guard is not None and (owner := system.owner(guard)) != lifeline:
            raise NotOwner(guard, owner, lifeline)
        assign = tuple(assign)
        for name in assign:
            if name not in system.variables:
                raise UndeclaredVariable(name, system.variables)

        def wrap(function: Tool) -> Tool:
            call = _ToolCall.of(function, assign)
            return call.wrapper(functools.partial(self._serve, call, guard))

        return wrap

    async def _serve(self, call: _ToolCall, guard: str | None, arguments: dict[str, Any],
                     context: Context) -> CallToolResult:
        carried = (context.request_context.meta or {}).get(TOKEN_KEY)
        if carried is None:
            if guard is None:
                return call.converted(await call.run(arguments))
            return self._refused(call.name, "missing", f"token refused (missing): the call "
                                 f"carries no token under {TOKEN_KEY!r} in _meta")
        try:
            token = self.agent.system.read(_token_text(carried))
            self.agent.receive(token, **{name: arguments[name] for name in call.assign})
            holds = guard is None or self.agent.decide(guard)
        except TokenRefused as refusal:
            return self._refused(call.name, refusal.reason, str(refusal))
        except LogFailed as failed:  # received, maybe, but not decided: the tool does not run
            return _unlogged(call.name, failed)
        except LiveError as error:  # an argument's value that no trace can hold
            return self._refused(call.name, "value", f"an argument no trace can hold: {error}")
        if guard is not None and not holds:
            explanation = self.agent.explain(guard).to_text().rstrip()
            text = (f"{call.name} refused: the guard {guard!r} of {self.agent.lifeline} is "
                    f"false\n{explanation}")
            return self._replied(_error(text), token.sender, f"{call.name} refused")
        try:
            value = await call.run(arguments)
        except LogFailed as failed:  # the tool's own event found no room in the log
            return _unlogged(call.name, failed)
        result = call.converted(value)
        if result is value:  # the tool's own CallToolResult, maybe shared: not ours to change
            result = result.model_copy()
        return self._replied(result, token.sender, f"{call.name} result")

    def _replied(self, result: CallToolResult, caller: str, label: str) -> CallToolResult:
        """``result`` with this agent's token to ``caller``; without one when the log cannot
        take the send (no message is sent that no log holds)."""
        try:
            return _with_token(result, self.agent.send(caller, label))
        except LogFailed:
            return result

    def _refused(self, tool: str, why: str, detail: str) -> CallToolResult:
        self.agent.refused(why)
        return _error(f"{tool} refused: {detail}")


@attrs.frozen
class _ToolCall:
    """A tool function as MCP sees it, and how to run it and shape its result."""

    function: Callable[..., Any]
    name: str
    signature: inspect.Signature
    context_parameter: str | None  # the function's own Context parameter, if it has one
    assign: tuple[str, ...]
    converted: Callable[[Any], CallToolResult]  # the SDK's conversion of a return value

    @classmethod
    def of(cls, function: Callable[..., Any], assign: tuple[str, ...]) -> _ToolCall:
        hints = typing.get_type_hints(function, include_extras=True)
        context_parameter = next((name for name, hint in hints.items() if _is_context(hint)), None)
        signature = inspect.signature(function)
        signature = signature.replace(
            parameters=[p.replace(annotation=hints.get(p.name, p.annotation))
                        for p in signature.parameters.values()],
            return_annotation=hints.get("return", signature.return_annotation))
        unknown = [name for name in assign if name not in signature.parameters]
        if unknown:
            raise ValueError(f"assign names {unknown} that are not parameters of "
                             f"{function.__name__}; its parameters are "
                             f"{list(signature.parameters)}")
        skip = [context_parameter] if context_parameter else []
        # typed as giving an InputRequiredResult too: this adapter replies with what it gives
        convert = func_metadata(function, skip_names=skip).convert_result
        return cls(function, function.__name__, signature, context_parameter, assign,
                   convert)  # type: ignore[arg-type]

    async def run(self, arguments: dict[str, Any]) -> Any:
        if inspect.iscoroutinefunction(self.function):
            return await self.function(**arguments)
        return await anyio.to_thread.run_sync(functools.partial(self.function, **arguments))

    def wrapper(self, serve: Callable[[dict[str, Any], Context], Any]) -> Any:
        """An async function with the tool's signature (plus a Context parameter if it
        has none), so MCP derives the same schemas and hands the request context in."""
        own_context = self.context_parameter or _CONTEXT_PARAMETER

        async def tool(**arguments: Any) -> CallToolResult:
            if self.context_parameter:
                context = arguments[own_context]
            else:
                context = arguments.pop(own_context)
            return await serve(arguments, context)

        functools.update_wrapper(tool, self.function)
        parameters = list(self.signature.parameters.values())
        if self.context_parameter is None:
            parameters.append(inspect.Parameter(_CONTEXT_PARAMETER, inspect.Parameter.KEYWORD_ONLY,
                                                annotation=Context))
        tool.__signature__ = self.signature.replace(parameters=parameters)  # type: ignore[attr-defined]
        tool.__annotations__ = {p.name: p.annotation for p in parameters
                                if p.annotation is not inspect.Parameter.empty}
        if self.signature.return_annotation is not inspect.Signature.empty:
            tool.__annotations__["return"] = self.signature.return_annotation
        return tool


def _is_context(hint: Any) -> bool:
    candidates = (hint, *typing.get_args(hint))
    return any(inspect.isclass(c) and issubclass(c, Context) for c in candidates)


def _token_text(carried: Any) -> str:
    """The token's text form: JSON carries no ``Token`` and no bytes."""
    if not isinstance(carried, str):
        raise TokenRefused("malformed", f"the token under {TOKEN_KEY!r} in _meta is a "
                                        f"{type(carried).__name__}, not the token's text")
    return carried


def _unlogged(tool: str, failed: LogFailed) -> CallToolResult:
    """The server is sound but cannot record, so it takes no event: nothing is recorded."""
    return _error(f"{tool} refused: the server's log cannot take this call's events "
                  f"({failed.why}): it was not run, and nothing more of it is recorded; "
                  f"try again later")


def _error(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


def _with_token(result: CallToolResult, token: Token) -> CallToolResult:
    """``result`` (made for this call, so set in place: no copy per call) with the token in
    its ``_meta``."""
    result.meta = {**(result.meta or {}), TOKEN_KEY: token.text}
    return result
