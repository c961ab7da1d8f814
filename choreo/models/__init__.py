"""Model calls as choreography actions: :func:`llm` and its backends (a mock that
needs no network, an OpenAI-compatible one, or one a user registers).
"""

from cpl.lazy import face

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing at start-up
if TYPE_CHECKING:  # the face's names for static tools; face() imports them on use
    from .llm import (
        LLMAction, MockBackend, backend_names, llm, make_backend, match_choice,
        parse_json_reply, register_backend,
    )
    from .llm_backend import Backend, LLMError
    from .llm_openai import OpenAIBackend

__all__ = ["Backend", "LLMAction", "LLMError", "MockBackend", "OpenAIBackend",
           "backend_names", "llm", "make_backend", "match_choice", "parse_json_reply",
           "register_backend"]

face(__name__, {
    ".llm": ("LLMAction MockBackend backend_names llm make_backend match_choice parse_json_reply "
             "register_backend"),
    ".llm_backend": "Backend LLMError",
    ".llm_openai": "OpenAIBackend",
})
