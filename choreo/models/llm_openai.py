"""An OpenAI-compatible chat-completions backend on the standard library alone.

Works with api.openai.com and with the many servers that copy its protocol
(vLLM, llama.cpp, Ollama, LM Studio, gateways): ``POST {base_url}/chat/completions``
with ``{"model", "messages", "temperature", "seed"}`` and, when a key is set,
``Authorization: Bearer KEY``. Options win over the environment:

=========  ===================================================  =========================
option     environment                                          default
=========  ===================================================  =========================
base_url   ``CPL_LLM_BASE_URL``, then ``OPENAI_BASE_URL``       https://api.openai.com/v1
model      ``CPL_LLM_MODEL``                                    (required)
api_key    ``CPL_LLM_API_KEY``, then ``OPENAI_API_KEY``         none: no header (local servers)
=========  ===================================================  =========================

``urllib`` rather than an SDK keeps the package free of a dependency that
only some users need. 429 and 5xx answers and dropped connections are
retried ``max_retries`` times with exponential backoff (honouring
``Retry-After``); a refused connection or a timeout is not, since waiting
again rarely helps and a workflow should learn quickly that its model is
gone. Every failure is an :class:`~choreo.models.llm_backend.LLMError` naming the URL and
what went wrong, and never containing the key.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import os
import socket
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any

from .llm_backend import LLMError, Messages

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_DROPPED = (ConnectionResetError, ConnectionAbortedError, BrokenPipeError,
            http.client.RemoteDisconnected, http.client.IncompleteRead)


def _env(*names: str) -> str | None:
    return next((os.environ[n] for n in names if os.environ.get(n)), None)


class OpenAIBackend:
    """Chat completions over HTTP; see the module docstring for options."""

    def __init__(self, *, base_url: str | None = None, model: str | None = None,
                 api_key: str | None = None, timeout: float = 60.0, max_retries: int = 3,
                 backoff: float = 0.5, max_backoff: float = 20.0,
                 extra: Mapping[str, Any] | None = None,
                 headers: Mapping[str, str] | None = None,
                 sleep: Callable[[float], None] = time.sleep):
        base = base_url or _env("CPL_LLM_BASE_URL", "OPENAI_BASE_URL") or DEFAULT_BASE_URL
        self.url = base.rstrip("/") + "/chat/completions"
        if not self.url.startswith(("http://", "https://")):
            raise LLMError(f"LLM base URL {base!r} must start with http:// or https://",
                           hint="set CPL_LLM_BASE_URL, e.g. http://127.0.0.1:8000/v1")
        self.model = model or _env("CPL_LLM_MODEL")
        self._key = api_key or _env("CPL_LLM_API_KEY", "OPENAI_API_KEY")
        if timeout <= 0 or max_retries < 0:
            raise LLMError("timeout must be > 0 and max_retries >= 0")
        self.timeout, self.max_retries = float(timeout), int(max_retries)
        self.backoff, self.max_backoff = float(backoff), float(max_backoff)
        self.extra, self.headers, self._sleep = dict(extra or {}), dict(headers or {}), sleep

    def __repr__(self) -> str:  # never the key
        return f"OpenAIBackend(url={self.url!r}, model={self.model!r})"

    def body(self, messages: Messages, *, model: str | None, seed: int,
             temperature: float) -> dict[str, Any]:
        model = model or self.model
        if not model:
            raise LLMError("no model for the openai LLM backend",
                           hint="pass model=... or set CPL_LLM_MODEL")
        return {**self.extra, "model": model, "messages": messages,
                "temperature": temperature, "seed": seed}

    def complete(self, messages: Messages, *, model: str | None = None, seed: int = 0,
                 temperature: float = 0.0) -> str:
        data = json.dumps(self.body(messages, model=model, seed=seed,
                                    temperature=temperature)).encode()
        headers = {"Content-Type": "application/json", "Accept": "application/json",
                   "User-Agent": "causal-guards-llm", **self.headers}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        attempt = 0
        while True:
            try:
                return self._attempt(data, headers)
            except _Retry as retry:
                if attempt >= self.max_retries:
                    raise LLMError(f"{retry.message} (gave up after {attempt + 1} attempts)",
                                   status=retry.status) from None
                delay = min(self.max_backoff, max(self.backoff * 2 ** attempt, retry.after))
                attempt += 1
                self._sleep(delay)

    async def acomplete(self, messages: Messages, *, model: str | None = None, seed: int = 0,
                        temperature: float = 0.0) -> str:
        """The blocking call in a worker thread, so the event loop keeps running."""
        return await asyncio.to_thread(self.complete, messages, model=model, seed=seed,
                                       temperature=temperature)

    def _attempt(self, data: bytes, headers: dict[str, str]) -> str:
        request = urllib.request.Request(self.url, data=data, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as exc:
            status = exc.code
            try:
                detail = _server_message(exc.read())
            except (OSError, http.client.HTTPException):
                detail = ""
            message = f"LLM server {self.url} answered HTTP {status} {exc.reason}"
            message += f": {detail}" if detail else ""
            if status == 429 or status >= 500:
                raise _Retry(message, status, _retry_after(exc.headers)) from None
            raise LLMError(message, status=status, hint=_hint(status)) from None
        except urllib.error.URLError as exc:
            raise self._network_error(exc.reason) from None
        except (OSError, http.client.HTTPException) as exc:  # timeouts, resets mid-answer
            raise self._network_error(exc) from None
        return _content(raw, self.url)

    def _network_error(self, reason: Any) -> Exception:
        if isinstance(reason, (TimeoutError, socket.timeout)):
            return LLMError(f"LLM server {self.url} did not answer within {self.timeout:g} s",
                            hint="raise timeout= if the model is slow")
        if isinstance(reason, ConnectionRefusedError):
            return LLMError(f"cannot connect to LLM server {self.url}: connection refused",
                            hint="is the server running? set CPL_LLM_BASE_URL to its address")
        if isinstance(reason, _DROPPED):
            return _Retry(f"LLM server {self.url} closed the connection "
                          f"({type(reason).__name__})", None, 0.0)
        if isinstance(reason, socket.gaierror):
            return LLMError(f"cannot resolve the host of LLM server {self.url}: {reason}")
        return LLMError(f"cannot reach LLM server {self.url}: {reason}")


class _Retry(Exception):
    """A failure worth another attempt; becomes an LLMError when attempts run out."""

    def __init__(self, message: str, status: int | None, after: float):
        super().__init__(message)
        self.message, self.status, self.after = message, status, after


def _retry_after(headers: Any) -> float:
    try:
        return max(0.0, float(headers.get("Retry-After", 0)))
    except (TypeError, ValueError, AttributeError):
        return 0.0  # an HTTP date: fall back to our own backoff


def _hint(status: int) -> str | None:
    return {401: "check CPL_LLM_API_KEY (or OPENAI_API_KEY)",
            403: "the key is not allowed to use this model or endpoint",
            404: "check CPL_LLM_BASE_URL (it usually ends in /v1) and the model name"
            }.get(status)


def _server_message(raw: bytes) -> str:
    """The human part of an error body: OpenAI's error.message or a common variant."""
    text = raw.decode("utf-8", "replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        return text[:200]
    if isinstance(data, dict):
        for key in ("error", "detail", "message"):
            value = data.get(key)
            if isinstance(value, dict):
                value = value.get("message") or value.get("detail")
            if isinstance(value, str) and value:
                return value[:500]
    return text[:200]


def _content(raw: bytes, url: str) -> str:
    """``choices[0].message.content``, or an error saying which part is missing."""
    def bad(what: str) -> LLMError:
        return LLMError(f"malformed response from LLM server {url}: {what}")

    try:
        data = json.loads(raw)
    except ValueError:
        snippet = raw[:60].decode("utf-8", "replace")
        raise bad(f"not JSON (it starts {snippet!r})") from None
    if not isinstance(data, dict):
        raise bad(f"expected a JSON object, got {type(data).__name__}")
    if "error" in data and "choices" not in data:  # some servers say 200 with an error body
        raise LLMError(f"LLM server {url} reported an error: {_server_message(raw)}")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise bad("no 'choices' list" if choices is None else "'choices' is empty or not a list")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise bad("no 'choices[0].message' object")
    content = message.get("content")
    if not isinstance(content, str):
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise LLMError(f"the model at {url} refused: {refusal}")
        raise bad("'choices[0].message.content' is missing or not a string")
    return content
