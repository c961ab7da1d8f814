"""What an LLM backend is: chat messages in, text out, and the one error every failure is.

The contract shared by the actions of :mod:`choreo.models.llm` and every backend —
the deterministic mock there, the HTTP one in :mod:`choreo.models.llm_openai`, a
user's own — so that a backend module needs nothing of the actions.
"""

from __future__ import annotations

from typing import Protocol

from cpl.errors import CplError

Messages = list[dict[str, str]]


class LLMError(CplError):
    """An LLM action that could not produce a value, said in words for a user."""

    def __init__(self, message: str, *, status: int | None = None, hint: str | None = None):
        super().__init__(message)
        self.message, self.status, self.hint = message, status, hint

    def __str__(self) -> str:
        return self.message + (f"\n  hint: {self.hint}" if self.hint else "")


class Backend(Protocol):
    """What an action needs from a model: messages in, text out."""

    def complete(self, messages: Messages, *, model: str | None, seed: int,
                 temperature: float) -> str: ...
