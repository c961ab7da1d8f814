"""CPL guards over HTTP: the causal token rides in one request/response header.

Server side, :class:`CausalMiddleware` is plain ASGI (Starlette, FastAPI, any ASGI app;
streaming responses pass through untouched): it records the receive of the caller's token,
decides the guard of a guarded route before the app runs, and answers with its own token.
Client side, :func:`causal_hooks` / :func:`async_causal_hooks` are httpx event hooks that
send a token with each request to a known peer and receive the token of its response.

Input from the network is hostile: a missing, malformed, foreign, forged or replayed token
is a 4xx with a JSON body that says what is wrong and how to fix it, counted on the agent's
lifeline by ``Agent.refused`` (an act ``refused: <reason>``, at most two a second per
reason); the monitor is otherwise unchanged.  A request whose event the agent's log cannot
take (``LogFailed``: a full disk, a file size limit) is a 503 naming that, recorded nowhere.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import attrs

from cpl.live import Agent, LiveError, LogFailed, TokenRefused, UnknownLifeline


DEFAULT_HEADER = "cpl-token"
MAX_QUERY_VALUE = 1000  # characters of a query value a request may put in the store

# Why a token was refused -> the status that tells the caller whose mistake it is.
STATUS_OF_REASON = {
    "missing": 401, "forged": 401,
    "malformed": 400, "oversized": 400, "misaddressed": 400, "foreign": 400, "request": 400,
    "replayed": 409, "clock": 409,
}

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@attrs.frozen
class GuardedRoute:
    """A path whose app runs only when the guard ``label`` holds at the request's receive.

    ``query`` names the query parameters copied into the agent's store by that receive,
    so the guard can compare what the request asks for (``version``) with what the
    caller's causal past says (``@Reviewer.version``); each must appear exactly once.
    """

    label: str
    query: tuple[str, ...] = attrs.field(default=(), converter=tuple)


@attrs.frozen
class Refusal:
    """A request answered by the middleware itself, with the JSON body the caller reads."""

    status: int
    body: Mapping[str, Any]
    caller: str | None = None  # the lifeline to answer with a token (a false guard only)
    reply_label: str = ""
    headers: tuple[tuple[bytes, bytes], ...] = ()


@attrs.frozen
class Admitted:
    """A request whose token was received (and whose guard, if any, holds)."""

    caller: str
    reply_label: str


class CausalMiddleware:
    """ASGI middleware that makes one agent (lifeline) the server of an app.

    ``guards`` maps an exact request path to a guard label (or a :class:`GuardedRoute`).
    A request with the header has its token received; a guarded path without a valid one is
    refused. Between the receive and the decision there is no ``await``, so on one event
    loop no other request's receive can slip in between.
    """

    def __init__(self, app: App, *, agent: Agent,
                 guards: Mapping[str, str | GuardedRoute] | None = None,
                 header: str = DEFAULT_HEADER) -> None:
        self.app = app
        self.agent = agent
        self.header = header
        self.header_key = header.lower().encode("latin-1")
        self.routes = {path: route if isinstance(route, GuardedRoute) else GuardedRoute(route)
                       for path, route in (guards or {}).items()}
        for route in self.routes.values():  # an unknown label or variable fails now, not later
            agent.holds(route.label)
            agent.system.check_updates(dict.fromkeys(route.query, ""))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        values = [value for name, value in scope["headers"] if name == self.header_key]
        route = self.routes.get(scope["path"])
        started: list[bool] = []  # the response's start, once sent: a 503 answers until then
        outcome = None if not values and route is None else self._admit(scope, values, route)
        if isinstance(outcome, Refusal):
            await self._answer(outcome, send)
            return
        try:
            await self.app(scope, receive, self._replying(send, outcome, started))
        except LogFailed as failed:  # the app's own event found no room in the log
            if started:
                raise
            await self._answer(_unlogged(failed), send)

    def _admit(self, scope: Scope, values: list[bytes], route: GuardedRoute | None
               ) -> Admitted | Refusal:
        """Receive the token and decide the route's guard, or say why not (no await here)."""
        if not values:
            return self._refuse("missing", f"this route is guarded: send the token of your "
                                f"agent's send() in a {self.header!r} header")
        if len(values) > 1:
            return self._refuse("malformed", f"send exactly one {self.header!r} header, "
                                f"not {len(values)}")
        updates = self._query_values(scope, route)
        if isinstance(updates, Refusal):
            return updates
        try:
            token = self.agent.system.read(values[0].decode("ascii"))
            self.agent.receive(token, **updates)
        except UnicodeDecodeError:
            return self._refuse("malformed", f"the {self.header!r} header is not ASCII text; "
                                "send token.text unchanged")
        except TokenRefused as refused:
            return self._refuse(refused.reason, str(refused))
        except LogFailed as failed:
            return _unlogged(failed)
        except LiveError as error:  # a query value the store cannot hold
            return self._refuse("request", str(error))
        if route is None:
            return Admitted(token.sender, "reply")
        try:
            holds = self.agent.decide(route.label)
        except LogFailed as failed:  # received, but not decided: the app does not run
            return _unlogged(failed)
        if holds:
            return Admitted(token.sender, route.label)
        explanation = self.agent.explain(route.label).to_text()
        return Refusal(403, {"error": "guard false", "label": route.label,
                             "detail": f"the guard of {route.label!r} is false at this request",
                             "explanation": explanation},
                       caller=token.sender, reply_label=route.label)

    def _query_values(self, scope: Scope, route: GuardedRoute | None
                      ) -> dict[str, str] | Refusal:
        if route is None or not route.query:
            return {}
        pairs = parse_qsl(scope.get("query_string", b"").decode("latin-1"),
                          keep_blank_values=True)
        found: dict[str, str] = {}
        for name in route.query:
            given = [value for key, value in pairs if key == name]
            if len(given) != 1:
                return self._refuse("request", f"give the query parameter {name!r} exactly "
                                    f"once (given {len(given)} times)")
            if len(given[0]) > MAX_QUERY_VALUE:
                return self._refuse("request", f"the query parameter {name!r} is at most "
                                    f"{MAX_QUERY_VALUE:,} characters")
            found[name] = given[0]
        return found

    def _refuse(self, reason: str, detail: str) -> Refusal:
        self.agent.refused(reason)
        return Refusal(STATUS_OF_REASON.get(reason, 400),
                       {"error": f"token refused: {reason}" if reason != "request"
                        else "bad request", "reason": reason, "header": self.header,
                        "detail": detail})

    def _reply_headers(self, caller: str | None, label: str) -> list[tuple[bytes, bytes]]:
        """This agent's token to the caller, as a header (none when it cannot answer one:
        no caller, or a caller it may not send to, such as itself in a crafted token)."""
        if caller is None:
            return []
        try:
            return [(self.header_key, self.agent.send(caller, label).text.encode("ascii"))]
        except LiveError:
            return []

    async def _answer(self, refusal: Refusal, send: Send) -> None:
        payload = json.dumps(refusal.body).encode()
        headers = [(b"content-type", b"application/json"),
                   (b"content-length", str(len(payload)).encode()), *refusal.headers,
                   *self._reply_headers(refusal.caller, f"{refusal.reply_label} {refusal.status}")]
        await send({"type": "http.response.start", "status": refusal.status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    def _replying(self, send: Send, admitted: Admitted | None, started: list) -> Send:
        """Wrap ``send`` so the response's start carries this agent's token to the caller
        (if the request was admitted with one), and ``started`` says it went."""
        async def send_with_token(message: Message) -> None:
            if message["type"] == "http.response.start":
                started.append(True)
                if admitted is not None:
                    label = f"{admitted.reply_label} {message['status']}"
                    headers = [*message.get("headers", ()),
                               *self._reply_headers(admitted.caller, label)]
                    message = {**message, "headers": headers}
            await send(message)
        return send_with_token


def _unlogged(failed: LogFailed) -> Refusal:
    """503: the service is sound but cannot record, so it takes no event (and no token goes
    back: a send would be an event too); the caller may retry later."""
    detail = (f"the service's log cannot take this request's events ({failed.why}): it was "
              f"not carried out, and nothing more of it is recorded; try again later")
    return Refusal(503, {"error": "log unwritable", "reason": failed.reason, "detail": detail},
                   headers=((b"retry-after", b"1"),))


DEFAULT_PORTS = {"http": 80, "https": 443}


@attrs.frozen
class Peers:
    """Which lifeline serves which URL, from a mapping of base URLs to lifelines.

    A request goes to a base's lifeline when scheme, host and port are the base's (default
    ports filled in) and its path is the base's path or lies under it; the longest base wins.
    So ``{"http://127.0.0.1:8001": "Reviewer", "http://gw/deploy": "Deployer"}`` sends
    ``http://gw/deploy/v2`` to the Deployer. URLs no base matches carry no token.
    """

    bases: tuple[tuple[tuple[str, str, int], str, str], ...]

    @classmethod
    def of(cls, mapping: Mapping[str, str]) -> Peers:
        bases = []
        for base, lifeline in mapping.items():
            parts = urlsplit(base)
            if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
                raise ValueError(f"peer base URL {base!r}: write it as http(s)://host[:port][/path]")
            port = parts.port or DEFAULT_PORTS[parts.scheme]
            origin = (parts.scheme, parts.hostname.lower(), port)
            bases.append((origin, parts.path.rstrip("/"), lifeline))
        bases.sort(key=lambda entry: len(entry[1]), reverse=True)
        return cls(tuple(bases))

    def lifeline_for(self, url: Any) -> str | None:
        """The lifeline serving ``url`` (an ``httpx.URL``), or None for a URL of no peer."""
        origin = (url.scheme, url.host.lower(), url.port or DEFAULT_PORTS.get(url.scheme, 0))
        for base_origin, base_path, lifeline in self.bases:
            under_base = url.path == base_path or url.path.startswith(base_path + "/")
            if base_origin == origin and under_base:
                return lifeline
        return None


def request_label(request: Any) -> str:
    """The default label of a request's send: its method and path, ``POST /deploy`` (the
    path cut to 200 characters: a label is short)."""
    return f"{request.method} {request.url.path[:200]}"


class PeerHooks:
    """The work of the httpx hooks, shared by the sync and async clients."""

    def __init__(self, agent: Agent, peers: Mapping[str, str] | Peers, *,
                 header: str = DEFAULT_HEADER,
                 label: Callable[[Any], str] = request_label) -> None:
        self.agent = agent
        self.peers = peers if isinstance(peers, Peers) else Peers.of(peers)
        self.header = header
        self.label = label
        for lifeline in {entry[2] for entry in self.peers.bases}:
            if lifeline not in agent.system.lifelines:
                raise UnknownLifeline(lifeline, agent.system.lifelines)

    def on_request(self, request: Any) -> None:
        """Send to the request's peer and carry the token in the header."""
        peer = self.peers.lifeline_for(request.url)
        if peer is not None:
            request.headers[self.header] = self.agent.send(peer, self.label(request)).text

    def on_response(self, response: Any) -> None:
        """Receive the peer's token, if it answered with one; refuse a bad one on the record."""
        if self.peers.lifeline_for(response.request.url) is None:
            return
        values = response.headers.get_list(self.header)
        if not values:
            return
        if len(values) > 1:
            self.agent.act("refused: malformed")
            return
        try:
            self.agent.receive(values[0])
        except TokenRefused as refused:
            self.agent.act(f"refused: {refused.reason}")


def causal_hooks(agent: Agent, peers: Mapping[str, str] | Peers, **options: Any
                 ) -> dict[str, list[Callable[[Any], None]]]:
    """Event hooks for ``httpx.Client(event_hooks=...)`` (``options``: header, label)."""
    hooks = PeerHooks(agent, peers, **options)
    return {"request": [hooks.on_request], "response": [hooks.on_response]}


def async_causal_hooks(agent: Agent, peers: Mapping[str, str] | Peers, **options: Any
                       ) -> dict[str, list[Callable[[Any], Awaitable[None]]]]:
    """Event hooks for ``httpx.AsyncClient(event_hooks=...)``; the same work as
    :func:`causal_hooks`, which never waits on I/O but the agent's own log."""
    hooks = PeerHooks(agent, peers, **options)

    async def on_request(request: Any) -> None:
        hooks.on_request(request)

    async def on_response(response: Any) -> None:
        hooks.on_response(response)

    return {"request": [on_request], "response": [on_response]}
