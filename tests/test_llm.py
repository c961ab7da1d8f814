"""LLM actions: the mock's determinism, and the HTTP client against a local stub.

Every server binds 127.0.0.1 on an ephemeral port and is shut down by its
fixture; nothing here touches the network or needs a key.
"""

from __future__ import annotations

import asyncio
import json
import random
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from choreo.models.llm import (LLMAction, LLMError, MockBackend, backend_names, llm, make_backend,
                        match_choice, parse_json_reply, register_backend)
from choreo.models.llm_openai import OpenAIBackend

ENV = ("CPL_LLM_BACKEND", "CPL_LLM_BASE_URL", "CPL_LLM_MODEL", "CPL_LLM_API_KEY",
       "OPENAI_BASE_URL", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def completion(text):
    return {"id": "x", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                         "finish_reason": "stop"}]}


class Stub:
    """A chat-completions server answering from a script of (status, body, headers)."""

    def __init__(self):
        self.script, self.requests = [], []
        self.release = threading.Event()  # lets a "hang" reply end at teardown
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                stub.requests.append({"path": self.path, "headers": dict(self.headers),
                                      "body": json.loads(body)})
                status, reply, headers = stub.script.pop(0) if stub.script else (
                    200, completion("default"), {})
                if reply == "hang":
                    stub.release.wait(5)
                    return
                if reply == "drop":
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever,
                                       kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def reply(self, status, body, **headers):
        self.script.append((status, body, headers))
        return self

    def backend(self, **options):
        options = {"base_url": self.url, "model": "m-1", "api_key": "sk-test",
                   "timeout": 2, "backoff": 0.01, **options}
        return OpenAIBackend(**options)

    def stop(self):
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(2)


@pytest.fixture
def stub():
    server = Stub()
    yield server
    server.stop()


def closed_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ---------------------------------------------------------------- the mock

def test_mock_is_a_pure_function_of_model_seed_and_prompt():
    action = llm("Summarise {doc}")
    a = action({"doc": "d1"}, 7)
    assert a == action({"doc": "d1"}, 7) == llm("Summarise {doc}")({"doc": "d1"}, 7)
    assert a.startswith("mock[mock] ") and a.endswith("Summarise d1")
    assert action({"doc": "d1"}, 8) != a
    assert action({"doc": "d2"}, 7) != a
    assert llm("Summarise {doc}", model="other")({"doc": "d1"}, 7) != a
    # pinned: SHA-256 over canonical JSON, so every machine and Python gives this text
    assert a == "mock[mock] fb99c0a0a958: Summarise d1"


def test_mock_seed_comes_from_the_rng_so_runs_replay():
    action = llm("Plan step for {task}")
    run1 = [action({"task": "t"}, rng) for rng in [random.Random(3)] for _ in range(3)]
    run2 = [action({"task": "t"}, rng) for rng in [random.Random(3)] for _ in range(3)]
    assert run1 == run2 and len(set(run1)) == 3


def test_mock_choices_pick_one_deterministically_and_cover_both():
    review = llm("Review {c}", choices=["approve", "reject"])
    answers = [review({"c": "c7"}, seed) for seed in range(40)]
    assert set(answers) == {"approve", "reject"}
    assert answers == [review({"c": "c7"}, seed) for seed in range(40)]
    fixed = llm("Review {c}", backend=MockBackend(choices=["approve"]),
                choices=["approve", "reject"])
    assert all(fixed({"c": "x"}, s) == "approve" for s in range(10))


def test_json_mode_returns_a_dict_with_the_schema_fields():
    judge = llm("Judge {c}", schema={"verdict": ["approve", "reject"], "reason": str,
                                     "score": float, "blocking": bool, "n": int})
    out = judge({"c": "c7"}, 1)
    assert set(out) == {"verdict", "reason", "score", "blocking", "n"}
    assert out["verdict"] in {"approve", "reject"} and isinstance(out["reason"], str)
    assert isinstance(out["score"], float) and isinstance(out["blocking"], bool)
    assert out == judge({"c": "c7"}, 1)
    assert "Reply with a single JSON object" in judge.messages({"c": "c7"})[-1]["content"]


def test_parse_and_system_template_and_reads():
    action = llm("Count {items}", system="You count for {owner}.", choices=["1", "2", "3"],
                 parse=int)
    assert action.reads == {"items", "owner"}
    msgs = action.messages({"items": "a b", "owner": "Bob"})
    assert msgs[0] == {"role": "system", "content": "You count for Bob."}
    assert action({"items": "a b", "owner": "Bob"}, 0) in {1, 2, 3}


def test_missing_variable_is_named():
    action = llm("Review {candidate} given {status}")
    with pytest.raises(LLMError) as err:
        action({"status": "passed"}, 0)
    assert "'candidate'" in str(err.value) and "variables set: status" in str(err.value)


@pytest.mark.parametrize("template", ["{", "a {} b", "x {0}"])
def test_bad_templates_fail_at_definition(template):
    with pytest.raises(LLMError, match="bad template"):
        llm(template)


def test_match_choice_and_json_reply_tolerate_chatter_but_not_nonsense():
    assert match_choice(" Approve.", ["approve", "reject"]) == "approve"
    assert match_choice("I would approve this patch.", ["approve", "reject"]) == "approve"
    with pytest.raises(LLMError, match="none of approve, reject"):
        match_choice("maybe", ["approve", "reject"])
    with pytest.raises(LLMError, match="ambiguous"):
        match_choice("approve or reject", ["approve", "reject"])
    schema = {"verdict": ["approve", "reject"]}
    assert parse_json_reply('```json\n{"verdict": "Reject"}\n```', schema) == {"verdict": "reject"}
    with pytest.raises(LLMError, match="no field 'verdict'"):
        parse_json_reply('{"answer": 1}', schema)
    with pytest.raises(LLMError, match="expected a JSON object"):
        parse_json_reply("no json here", schema)


# ------------------------------------------------------------ the registry

class Echo:
    def __init__(self, prefix=">"):
        self.prefix = prefix

    def complete(self, messages, *, model, seed, temperature):
        return f"{self.prefix}{messages[-1]['content']}"


def test_registry_env_and_module_path(monkeypatch):
    register_backend("echo", Echo)
    assert "echo" in backend_names() and {"mock", "openai"} <= set(backend_names())
    assert llm("hi {x}", backend=make_backend("echo", prefix="#"))({"x": 1}) == "#hi 1"
    monkeypatch.setenv("CPL_LLM_BACKEND", "echo")
    assert llm("hi {x}")({"x": 2}) == ">hi 2"
    monkeypatch.setenv("CPL_LLM_BACKEND", f"{__name__}:Echo")
    assert isinstance(make_backend(), Echo)
    with pytest.raises(LLMError, match="unknown LLM backend 'nope'"):
        make_backend("nope")
    with pytest.raises(LLMError, match="rejected its options"):
        make_backend("mock", colour="red")
    assert isinstance(make_backend(), Echo) and isinstance(make_backend("mock"), MockBackend)


def test_async_call_matches_sync_and_uses_a_thread_for_plain_backends():
    action = llm("Hi {name}", backend=Echo())
    rng1, rng2 = random.Random(5), random.Random(5)
    assert asyncio.run(action.acall({"name": "A"}, rng1)) == action({"name": "A"}, rng2)
    mock = llm("Hi {name}", choices=["a", "b"])
    assert asyncio.run(mock.acall({"name": "A"}, 9)) == mock({"name": "A"}, 9)


# ------------------------------------------------------- the OpenAI client

def test_openai_request_shape_and_reply(stub):
    stub.reply(200, completion("Approve."))
    action = llm("Review {c}", system="Be strict.", choices=["approve", "reject"],
                 backend=stub.backend(), temperature=0.2)
    assert action({"c": "c7"}, 42) == "approve"
    (req,) = stub.requests
    assert req["path"] == "/v1/chat/completions"
    assert req["headers"]["Authorization"] == "Bearer sk-test"
    assert req["headers"]["Content-Type"] == "application/json"
    body = req["body"]
    assert body["model"] == "m-1" and body["seed"] == 42 and body["temperature"] == 0.2
    assert body["messages"][0] == {"role": "system", "content": "Be strict."}
    assert body["messages"][1]["role"] == "user"
    assert body["messages"][1]["content"].startswith("Review c7\n\nAnswer with exactly one of")


def test_openai_configuration_from_the_environment(stub, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/ignored")
    monkeypatch.setenv("CPL_LLM_BASE_URL", stub.url + "/")
    monkeypatch.setenv("CPL_LLM_MODEL", "env-model")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("CPL_LLM_BACKEND", "openai")
    stub.reply(200, completion("hello"))
    assert llm("Say hi")({}, 0) == "hello"
    req = stub.requests[0]
    assert req["body"]["model"] == "env-model"
    assert req["headers"]["Authorization"] == "Bearer sk-env"
    assert "sk-env" not in repr(make_backend())


def test_no_key_sends_no_header_and_no_model_is_a_clear_error(stub):
    stub.reply(200, completion("ok"))
    assert stub.backend(api_key=None).complete([{"role": "user", "content": "x"}]) == "ok"
    assert "Authorization" not in stub.requests[0]["headers"]
    with pytest.raises(LLMError, match="no model"):
        stub.backend(model=None).complete([])


def test_5xx_and_429_are_retried_then_succeed(stub):
    stub.reply(500, {"error": {"message": "boom"}}).reply(429, {}, **{"Retry-After": "0"})
    stub.reply(200, completion("fine"))
    sleeps = []
    backend = stub.backend(sleep=sleeps.append)
    assert backend.complete([{"role": "user", "content": "x"}]) == "fine"
    assert len(stub.requests) == 3 and sleeps == [0.01, 0.02]


def test_retries_are_bounded(stub):
    for _ in range(5):
        stub.reply(503, {"error": {"message": "overloaded"}})
    with pytest.raises(LLMError) as err:
        stub.backend(max_retries=2).complete([])
    assert err.value.status == 503 and len(stub.requests) == 3
    assert "HTTP 503" in str(err.value) and "overloaded" in str(err.value)
    assert "gave up after 3 attempts" in str(err.value)


def test_401_is_not_retried_and_carries_the_server_message(stub):
    stub.reply(401, {"error": {"message": "Incorrect API key provided", "type": "auth"}})
    with pytest.raises(LLMError) as err:
        llm("x", backend=stub.backend())({}, 0)
    text = str(err.value)
    assert err.value.status == 401 and len(stub.requests) == 1
    assert "HTTP 401" in text and "Incorrect API key provided" in text
    assert "CPL_LLM_API_KEY" in text and "sk-test" not in text


@pytest.mark.parametrize("body,missing", [
    (b"<html>bad gateway</html>", "not JSON"),
    ({"id": "x"}, "no 'choices' list"),
    ({"choices": []}, "'choices' is empty"),
    ({"choices": [{"text": "hi"}]}, "no 'choices[0].message' object"),
    ({"choices": [{"message": {"role": "assistant"}}]}, "'choices[0].message.content'"),
])
def test_malformed_responses_name_what_is_missing(stub, body, missing):
    stub.reply(200, body)
    with pytest.raises(LLMError, match="malformed response") as err:
        stub.backend().complete([])
    assert missing in str(err.value)


def test_dropped_connection_is_retried(stub):
    stub.reply(200, "drop").reply(200, completion("after drop"))
    assert stub.backend().complete([]) == "after drop"


def test_connection_refused_names_the_url():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    start = time.monotonic()
    with pytest.raises(LLMError) as err:
        OpenAIBackend(base_url=url, model="m").complete([])
    assert time.monotonic() - start < 1
    assert f"{url}/chat/completions: connection refused" in str(err.value)
    assert "CPL_LLM_BASE_URL" in str(err.value)


def test_timeout_is_bounded(stub):
    stub.reply(200, "hang")
    start = time.monotonic()
    with pytest.raises(LLMError, match="did not answer within 0.3 s"):
        stub.backend(timeout=0.3).complete([])
    assert time.monotonic() - start < 1.0


def test_async_openai_calls_run_concurrently(stub):
    action = llm("Hi {n}", backend=stub.backend())

    async def both():
        return await asyncio.gather(action.acall({"n": 1}, 1), action.acall({"n": 2}, 2))

    assert asyncio.run(both()) == ["default", "default"]
    assert sorted(r["body"]["seed"] for r in stub.requests) == [1, 2]


def test_bad_base_url_is_rejected_early():
    with pytest.raises(LLMError, match="must start with http"):
        OpenAIBackend(base_url="127.0.0.1:8000/v1", model="m")


def test_llmaction_is_the_public_type():
    assert isinstance(llm("x"), LLMAction)
