"""Model calls as choreography actions: :func:`llm` and its backends (a mock that
needs no network, an OpenAI-compatible one, or one a user registers).
"""

from cpl.lazy import face

__all__ = ["Backend", "LLMAction", "LLMError", "MockBackend", "OpenAIBackend",
           "backend_names", "llm", "make_backend", "match_choice", "parse_json_reply",
           "register_backend"]

face(__name__, {
    ".llm": "LLMAction MockBackend backend_names llm make_backend match_choice parse_json_reply register_backend",
    ".llm_backend": "Backend LLMError",
    ".llm_openai": "OpenAIBackend",
})
