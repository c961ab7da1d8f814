"""Guards for agents you already run: the live-monitoring API.

Compile a :class:`System` once (its lifelines, guards and variables); take
one :class:`Agent` per lifeline (``system.agent(name)``) and tell it each
event as it happens: ``act``, ``send`` (a :class:`Token` to pass on with the
message), ``receive`` (the token that came), ``decide`` (a choice by a guard
it owns).  With ``System(keys=KeyRing...)`` each lifeline signs its tokens and
its own state with its own key.  Each agent can log its events; ``cpl merge``
turns the logs of every process into one ``cpl-msc/1`` trace that ``cpl eval``
re-checks.
"""

from ..lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .agent import Agent
    from .errors import (
        LiveError,
        LogExists,
        LogFailed,
        NotOwner,
        SigningUnavailable,
        TokenRefused,
        UndeclaredVariable,
        UnknownLabel,
        UnknownLifeline,
    )
    from .keys import KeyRing
    from .log import AgentLogs
    from .refusals import refusals_of
    from .system import System
    from .token import MAX_TOKEN, MAX_TOKEN_TEXT, Token

__all__ = ["Agent", "AgentLogs", "KeyRing", "LiveError", "LogExists", "LogFailed", "MAX_TOKEN",
           "MAX_TOKEN_TEXT", "NotOwner", "SigningUnavailable", "System", "Token", "TokenRefused",
           "UndeclaredVariable", "UnknownLabel", "UnknownLifeline", "refusals_of"]

face(__name__, {
    ".agent": "Agent",
    ".errors": "LiveError LogExists LogFailed NotOwner SigningUnavailable TokenRefused "
               "UndeclaredVariable UnknownLabel UnknownLifeline",
    ".keys": "KeyRing",
    ".log": "AgentLogs",
    ".refusals": "refusals_of",
    ".system": "System",
    ".token": "MAX_TOKEN MAX_TOKEN_TEXT Token",
})
