"""LLM calls as choreography actions, with pluggable backends.

A choreography's local *actions* are plain callables; this module makes an
LLM call one of them::

    review = llm("Review patch {candidate}. Tests said: {status}.",
                 system="You are a strict code reviewer.",
                 choices=["approve", "reject"])
    verdict = review({"candidate": "c7", "status": "passed"}, random.Random(1))
    verdict = await review.acall(variables, rng)          # from async code

**The action interface** is ``action(variables: Mapping, rng) -> value``:
``variables`` are the lifeline's current variables, used to fill the
``{name}`` placeholders of the templates (``{{``/``}}`` for literal braces);
``rng`` is the lifeline's seeded ``random.Random`` (one draw makes the call's
seed), an ``int`` seed, or ``None`` (seed 0). The value is the reply text;
with ``choices=`` it is exactly one of the choices; with ``schema=`` (JSON
mode: field -> list of choices, or ``str``/``int``/``float``/``bool``) it is a
dict with exactly those fields; ``parse=`` then maps that value. The
variables a template needs are in ``action.reads``. Every failure — a
missing variable, an unreachable server, an answer outside the choices — is
an :class:`LLMError` whose message says what went wrong.

**Backends**: ``mock`` (the default) answers from a SHA-256 of model, seed
and messages, so a run replays identically on every machine without a
network; ``openai`` (:mod:`choreo.models.llm_openai`) speaks the OpenAI-compatible
chat-completions protocol. :func:`make_backend` picks one by name, or from
``CPL_LLM_BACKEND`` (a registered name or ``package.module:Class``).
Your own backend is any object with
``complete(messages, *, model, seed, temperature) -> str``
(:class:`~choreo.models.llm_backend.Backend`; ``model=None`` means its default);
register a factory with :func:`register_backend`. A
backend that sets ``structured = True`` also receives ``choices=`` and
``schema=`` keywords (the mock uses them to answer in the right shape; real
models read them from the prompt). An optional ``async acomplete`` with the
same signature is used by ``acall``; otherwise the sync call runs in a thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import json
import os
import random
import re
import string
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .llm_backend import Backend, LLMError, Messages

__all__ = ["LLMError", "Backend", "MockBackend", "LLMAction", "llm",
           "make_backend", "register_backend", "backend_names"]

_FIELD_TYPES = {str: "string", int: "integer", float: "number", bool: "true or false"}


# --------------------------------------------------------------------- mock

class MockBackend:
    """Deterministic stand-in: the reply depends on model, seed and messages only.

    ``choices=`` fixes the answers for every call (e.g. a reviewer that may
    only say "approve"); otherwise the action's own choices/schema are used.
    """

    structured = True

    def __init__(self, model: str = "mock", choices: Sequence[str] | None = None):
        self.model = model
        self.choices = list(choices) if choices is not None else None
        if self.choices is not None and not self.choices:
            raise LLMError("MockBackend(choices=[]) has nothing to answer with")

    def __repr__(self) -> str:
        return f"MockBackend(model={self.model!r})"

    @staticmethod
    def digest(messages: Messages, model: str, seed: int) -> bytes:
        """SHA-256 over a canonical encoding, the same on every platform."""
        payload = json.dumps([model, seed, messages], sort_keys=True, ensure_ascii=True,
                             separators=(",", ":"))
        return hashlib.sha256(payload.encode("ascii")).digest()

    def complete(self, messages: Messages, *, model: str | None = None, seed: int = 0,
                 temperature: float = 0.0, choices: Sequence[str] | None = None,
                 schema: Mapping[str, Any] | None = None) -> str:
        model = model or self.model
        digest = self.digest(messages, model, seed)
        if schema is not None:
            return json.dumps({name: _mock_field(digest, name, kind)
                               for name, kind in schema.items()})
        pool = self.choices if self.choices is not None else choices
        if pool:
            return pool[int.from_bytes(digest[:8], "big") % len(pool)]
        user = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
        first = (user.strip().splitlines() or [""])[0]
        return f"mock[{model}] {digest.hex()[:12]}: {first[:60]}"


def _mock_field(digest: bytes, name: str, kind: Any) -> Any:
    """One schema field's value, from the call digest and the field name."""
    n = int.from_bytes(hashlib.sha256(digest + name.encode()).digest()[:8], "big")
    if isinstance(kind, (list, tuple)):
        return kind[n % len(kind)]
    if kind is bool:
        return bool(n & 1)
    if kind is int:
        return n % 100
    if kind is float:
        return (n % 10_000) / 10_000
    return f"mock-{name}-{n:016x}"[:24]


# ----------------------------------------------------------------- registry

_REGISTRY: dict[str, Callable[..., Any]] = {}


def register_backend(name: str, factory: Callable[..., Any]) -> None:
    """Make ``make_backend(name, **options)`` call ``factory(**options)``."""
    if not name or ":" in name:
        raise ValueError(f"backend name {name!r} must be non-empty and contain no ':'")
    _REGISTRY[name] = factory


def backend_names() -> list[str]:
    return sorted(_REGISTRY)


def _openai_factory(**options: Any) -> Any:
    from .llm_openai import OpenAIBackend  # lazy: the mock needs no HTTP code
    return OpenAIBackend(**options)


register_backend("mock", MockBackend)
register_backend("openai", _openai_factory)


def make_backend(name: str | None = None, **options: Any) -> Any:
    """A backend by registered name or ``module:Class``; default ``$CPL_LLM_BACKEND`` or mock."""
    name = name or os.environ.get("CPL_LLM_BACKEND") or "mock"
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise LLMError(f"cannot load LLM backend {name!r}: {exc}") from None
    elif name in _REGISTRY:
        factory = _REGISTRY[name]
    else:
        raise LLMError(f"unknown LLM backend {name!r}",
                       hint=f"known backends: {', '.join(backend_names())}; "
                            "or give 'package.module:Class'")
    try:
        return factory(**options)
    except TypeError as exc:
        raise LLMError(f"LLM backend {name!r} rejected its options: {exc}") from None


# ------------------------------------------------------------------- action

class LLMAction:
    """A callable action ``(variables, rng) -> value`` backed by one LLM call."""

    def __init__(self, template: str, *, system: str | None = None,
                 backend: Backend | str | None = None,
                 choices: Sequence[str] | None = None, schema: Mapping[str, Any] | None = None,
                 parse: Callable[[Any], Any] | None = None, model: str | None = None,
                 temperature: float = 0.0, name: str | None = None):
        if choices is not None and schema is not None:
            raise LLMError("an LLM action takes choices= or schema=, not both")
        if choices is not None and (not choices or not all(isinstance(c, str) for c in choices)):
            raise LLMError(f"choices must be a non-empty list of strings, got {choices!r}")
        self.template, self.system = template, system
        self.choices = list(choices) if choices is not None else None
        self.schema = _check_schema(schema) if schema is not None else None
        self.parse, self.model, self.temperature = parse, model, temperature
        self.name = name or " ".join(template.split()[:4])[:40]
        self.reads = frozenset(_fields(template, self.name) | _fields(system or "", self.name))
        self._backend = backend

    def __repr__(self) -> str:
        return f"LLMAction({self.name!r}, reads={sorted(self.reads)})"

    @property
    def backend(self) -> Any:
        """Resolved on first use, so ``CPL_LLM_BACKEND`` is read at run time."""
        if self._backend is None or isinstance(self._backend, str):
            self._backend = make_backend(self._backend)
        return self._backend

    def messages(self, variables: Mapping[str, Any]) -> Messages:
        """The chat messages this action sends for these variables."""
        missing = sorted(self.reads - set(variables))
        if missing:
            names = ", ".join(repr(m) for m in missing)
            have = ", ".join(sorted(map(str, variables))) or "none"
            raise LLMError(f"LLM action {self.name!r} needs variable{'s' * (len(missing) > 1)} "
                           f"{names}, which {'are' if len(missing) > 1 else 'is'} not set",
                           hint=f"variables set: {have}")
        out: Messages = []
        if self.system:
            out.append({"role": "system", "content": self._fill(self.system, variables)})
        user = self._fill(self.template, variables)
        if self.choices is not None:
            user += ("\n\nAnswer with exactly one of: " + ", ".join(self.choices)
                     + ". Reply with that word only.")
        elif self.schema is not None:
            fields = "; ".join(f"{k}: {_describe(v)}" for k, v in self.schema.items())
            user += f"\n\nReply with a single JSON object with these fields only: {fields}."
        out.append({"role": "user", "content": user})
        return out

    def _fill(self, template: str, variables: Mapping[str, Any]) -> str:
        try:
            return template.format_map(variables)
        except (KeyError, IndexError, AttributeError, ValueError, TypeError) as exc:
            raise LLMError(f"LLM action {self.name!r}: cannot fill its template: "
                           f"{type(exc).__name__}: {exc}") from None

    def _prepare(self, variables: Mapping[str, Any], rng: Any) -> tuple[Any, Messages, dict]:
        if getattr(rng, "enumerates", False):  # cpl verify: a free-text reply
            seed = rng.unenumerable_bits("asks its model for free text, which cannot be "
                                         "enumerated (give it choices= to verify it)", 31)
        elif isinstance(rng, random.Random):
            seed = rng.getrandbits(31)
        elif rng is None or isinstance(rng, int):
            seed = rng or 0
        else:
            raise LLMError(f"LLM action {self.name!r}: rng must be a random.Random, "
                           f"an int seed or None, got {type(rng).__name__}")
        backend = self.backend
        kwargs: dict[str, Any] = {"model": self.model, "seed": seed,
                                  "temperature": self.temperature}
        if getattr(backend, "structured", False):
            kwargs.update(choices=self.choices, schema=self.schema)
        return backend, self.messages(variables), kwargs

    def _every_reply(self, variables: Mapping[str, Any], rng: Any) -> str | None:
        """Under ``cpl verify`` (an rng that enumerates its draws), the reply is one of every
        reply the action accepts, each an outcome of its own, and no model is called:
        the choices, or a schema whose fields are all choices or bools.  None: the reply
        is free text, and the backend answers (from a seed verify cannot enumerate)."""
        if not getattr(rng, "enumerates", False):
            return None
        if self.choices is not None:
            self.messages(variables)  # a missing variable fails as the call would
            return rng.choice(self.choices)
        if self.schema is not None and all(isinstance(kind, (list, tuple)) or kind is bool
                                           for kind in self.schema.values()):
            self.messages(variables)
            return json.dumps({key: rng.choice(list(kind) if kind is not bool else [False, True])
                               for key, kind in self.schema.items()})
        return None

    def __call__(self, variables: Mapping[str, Any], rng: Any = None) -> Any:
        reply = self._every_reply(variables, rng)
        if reply is not None:
            return self._finish(reply)
        backend, messages, kwargs = self._prepare(variables, rng)
        return self._finish(_checked(backend.complete(messages, **kwargs), backend))

    async def acall(self, variables: Mapping[str, Any], rng: Any = None) -> Any:
        """The same call without blocking the event loop."""
        reply = self._every_reply(variables, rng)
        if reply is not None:
            return self._finish(reply)
        backend, messages, kwargs = self._prepare(variables, rng)  # draw the seed here, in order
        if hasattr(backend, "acomplete"):
            text = await backend.acomplete(messages, **kwargs)
        else:
            text = await asyncio.to_thread(backend.complete, messages, **kwargs)
        return self._finish(_checked(text, backend))

    def _finish(self, text: str) -> Any:
        if self.choices is not None:
            value: Any = match_choice(text, self.choices, self.name)
        elif self.schema is not None:
            value = parse_json_reply(text, self.schema, self.name)
        else:
            value = text
        if self.parse is None:
            return value
        try:
            return self.parse(value)
        except Exception as exc:
            raise LLMError(f"LLM action {self.name!r}: parse= failed on {_clip(value)}: "
                           f"{type(exc).__name__}: {exc}") from None


def llm(template: str, **options: Any) -> LLMAction:
    """An LLM action; see the module docstring and :class:`LLMAction` for options."""
    return LLMAction(template, **options)


# ------------------------------------------------------- templates & replies

def _fields(template: str, action: str) -> set[str]:
    """Root variable names of ``{name}``, ``{name.attr}``, ``{name[0]}`` fields."""
    roots: set[str] = set()
    try:
        for _, field, spec, _ in string.Formatter().parse(template):
            if field is not None:
                root = re.split(r"[.\[]", field, maxsplit=1)[0]
                if not root or root.isdigit():
                    raise ValueError(f"placeholder {{{field}}} must name a variable")
                roots.add(root)
                if spec:
                    roots |= _fields(spec, action)
    except ValueError as exc:
        raise LLMError(f"LLM action {action!r}: bad template: {exc}",
                       hint="write {{ and }} for literal braces") from None
    return roots


def _check_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    if not schema:
        raise LLMError("schema= needs at least one field")
    for key, kind in schema.items():
        if isinstance(kind, (list, tuple)):
            ok = bool(kind) and all(isinstance(c, str) for c in kind)
        else:
            ok = kind in _FIELD_TYPES
        if not ok:
            raise LLMError(f"schema field {key!r}: expected a list of string choices or "
                           f"one of str, int, float, bool, got {kind!r}")
    return dict(schema)


def _describe(kind: Any) -> str:
    if isinstance(kind, (list, tuple)):
        return "one of " + ", ".join(json.dumps(c) for c in kind)
    return _FIELD_TYPES[kind]


def _clip(value: Any, width: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


def _checked(text: Any, backend: Any) -> str:
    if not isinstance(text, str):
        raise LLMError(f"LLM backend {type(backend).__name__}.complete returned "
                       f"{type(text).__name__}, not str")
    return text


def _norm(text: str) -> str:
    return text.strip().strip("\"'`*.!,;: \n\t").casefold()


def match_choice(text: str, choices: Sequence[str], action: str = "llm") -> str:
    """The choice a reply means: exact up to case/quotes/punctuation, else the only one named."""
    by_norm = {_norm(c): c for c in choices}
    if _norm(text) in by_norm:
        return by_norm[_norm(text)]
    named = [c for c in choices
             if re.search(rf"(?<!\w){re.escape(c.casefold())}(?!\w)", text.casefold())]
    if len(named) == 1:
        return named[0]
    raise LLMError(f"LLM action {action!r}: the model answered {_clip(text)}, which is "
                   f"{'ambiguous between' if named else 'none of'} {', '.join(named or choices)}")


def parse_json_reply(text: str, schema: Mapping[str, Any], action: str = "llm") -> dict:
    """The schema's fields from a JSON reply (code fences and chatter around it tolerated)."""
    start, end = text.find("{"), text.rfind("}")
    try:
        data = json.loads(text[start:end + 1]) if 0 <= start < end else None
    except json.JSONDecodeError:
        data = None
    if not isinstance(data, dict):
        raise LLMError(f"LLM action {action!r}: expected a JSON object, the model "
                       f"answered {_clip(text)}")
    out: dict[str, Any] = {}
    for key, kind in schema.items():
        if key not in data:
            raise LLMError(f"LLM action {action!r}: the JSON reply has no field {key!r} "
                           f"(it has {', '.join(map(repr, data)) or 'none'})")
        value = data[key]
        if isinstance(kind, (list, tuple)):
            value = {_norm(c): c for c in kind}.get(_norm(value), value) \
                if isinstance(value, str) else value
            ok = value in kind
        elif kind is float:
            ok = isinstance(value, (int, float)) and not isinstance(value, bool)
            value = float(value) if ok else value
        elif kind is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        else:
            ok = isinstance(value, kind)
        if not ok:
            raise LLMError(f"LLM action {action!r}: field {key!r} is {_clip(value)}, "
                           f"expected {_describe(kind)}")
        out[key] = value
    return out
