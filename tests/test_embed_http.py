"""The HTTP adapter under real Starlette, uvicorn and httpx: guarded routes, tokens both
ways, hostile headers (always a 4xx with a JSON body, never a 500, the monitor unchanged
but for the recorded refusal), and the two-service example merged and re-checked."""

from __future__ import annotations

import asyncio
import base64
from collections import Counter
import json
import os
import random
import re
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
from starlette.testclient import TestClient

from causal_guards.http import (CausalMiddleware, GuardedRoute, Peers, async_causal_hooks,
                                causal_hooks)
from cpl.live import (MAX_TOKEN_TEXT, KeyRing, NotOwner, System, UndeclaredVariable, UnknownLabel,
                      UnknownLifeline, refusals_of)

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "embedding" / "http"
GUARD = "@Reviewer(approved == true) && @Reviewer.version == version"
SECRET = b"release secret, 32 bytes long!!!"
REVIEWER, DEPLOYER = "http://reviewer.test", "http://deployer.test"


def release_system(secret: bytes = SECRET, guard: str = GUARD) -> System:
    return System(["Author", "Reviewer", "Deployer"], {"deploy": ("Deployer", guard)},
                  variables=["approved", "version", "deployed"], secret=secret)


def deployer_app(agent) -> Starlette:
    async def deploy(request: Request) -> JSONResponse:
        agent.act("deploy", deployed=request.query_params["version"])
        return JSONResponse({"deployed": request.query_params["version"]})

    async def status(request: Request) -> JSONResponse:
        return JSONResponse({"up": True})

    async def stream(request: Request) -> StreamingResponse:
        async def chunks():
            for number in range(3):
                yield f"chunk {number}\n".encode()
        return StreamingResponse(chunks(), media_type="text/plain")

    guards = {"/deploy": GuardedRoute("deploy", query=["version"])}
    return Starlette(routes=[Route("/deploy", deploy, methods=["POST"]), Route("/status", status),
                             Route("/stream", stream)],
                     middleware=[Middleware(CausalMiddleware, agent=agent, guards=guards)])


def reviewer_app(agent) -> Starlette:
    async def review(request: Request) -> JSONResponse:
        agent.act("approve", approved=True, version=request.query_params["version"])
        return JSONResponse({"approved": request.query_params["version"]})

    return Starlette(routes=[Route("/review", review, methods=["POST"])],
                     middleware=[Middleware(CausalMiddleware, agent=agent)])


@pytest.fixture
def agents(tmp_path):
    system = release_system()
    made = {name: system.agent(name, log=tmp_path) for name in system.lifelines}
    yield made
    for agent in made.values():
        agent.close()


def test_the_deploy_guard_refuses_until_this_version_is_approved(agents):
    author = agents["Author"]
    hooks = causal_hooks(author, {REVIEWER: "Reviewer", DEPLOYER: "Deployer"})
    with TestClient(deployer_app(agents["Deployer"]), base_url=DEPLOYER) as deployer, \
            TestClient(reviewer_app(agents["Reviewer"]), base_url=REVIEWER) as reviewer:
        deployer.event_hooks = reviewer.event_hooks = hooks
        early = deployer.post("/deploy", params={"version": "v2"})
        assert early.status_code == 403
        assert early.json()["label"] == "deploy" and "Reviewer" in early.json()["explanation"]
        assert "cpl-token" in early.headers  # the refusal is answered causally too
        assert reviewer.post("/review", params={"version": "v2"}).status_code == 200
        assert deployer.post("/deploy", params={"version": "v3"}).status_code == 403
        allowed = deployer.post("/deploy", params={"version": "v2"})
        assert allowed.status_code == 200 and allowed.json() == {"deployed": "v2"}
        assert "cpl-token" in allowed.headers
    assert author.taken == 8  # four sends, four receives of the replies: none refused


def test_unguarded_routes_without_a_token_pass_through_unrecorded(agents, tmp_path):
    before = log_lines(tmp_path / "Deployer.jsonl")
    with TestClient(deployer_app(agents["Deployer"]), base_url=DEPLOYER) as deployer:
        response = deployer.get("/status")
    assert response.status_code == 200 and "cpl-token" not in response.headers
    assert log_lines(tmp_path / "Deployer.jsonl") == before


def test_guards_are_checked_when_the_middleware_is_built(agents):
    with pytest.raises(UnknownLabel):
        CausalMiddleware(deployer_app(agents["Deployer"]), agent=agents["Deployer"],
                         guards={"/deploy": "deplyo"})
    with pytest.raises(NotOwner):
        CausalMiddleware(deployer_app(agents["Reviewer"]), agent=agents["Reviewer"],
                         guards={"/deploy": "deploy"})
    with pytest.raises(UndeclaredVariable, match="version"):
        CausalMiddleware(deployer_app(agents["Deployer"]), agent=agents["Deployer"],
                         guards={"/deploy": GuardedRoute("deploy", query=["versoin"])})


def test_peers_map_urls_to_lifelines_by_the_longest_base():
    peers = Peers.of({"http://gw": "Reviewer", "http://gw/deploy/": "Deployer",
                      "https://Svc:8443/api": "Author"})
    assert peers.lifeline_for(httpx.URL("http://gw:80/deploy/v2")) == "Deployer"
    assert peers.lifeline_for(httpx.URL("http://gw/deployment")) == "Reviewer"
    assert peers.lifeline_for(httpx.URL("https://svc:8443/api")) == "Author"
    assert peers.lifeline_for(httpx.URL("https://svc:8443/apix")) is None
    assert peers.lifeline_for(httpx.URL("http://other/deploy")) is None
    with pytest.raises(ValueError, match="http"):
        Peers.of({"ftp://gw": "Reviewer"})


def test_a_peer_must_be_a_lifeline_of_the_system(agents):
    with pytest.raises(UnknownLifeline, match="Reviewer"):
        causal_hooks(agents["Author"], {REVIEWER: "Reveiwer"})


def test_a_missing_or_repeated_query_value_is_a_400(agents):
    author = agents["Author"]
    with TestClient(deployer_app(agents["Deployer"]), base_url=DEPLOYER) as deployer:
        deployer.event_hooks = causal_hooks(author, {DEPLOYER: "Deployer"})
        for params in ({}, {"version": ["v1", "v2"]}, {"version": "v" * 5000}):
            response = deployer.post("/deploy", params=params)
            assert response.status_code == 400 and "version" in response.json()["detail"]


# -- hostile tokens ------------------------------------------------------------------------

def hostile_headers(agents) -> dict[tuple[str, int, str], list[tuple[str, bytes]]]:
    """(case, status, reason) -> the header lines of one request to /deploy?version=v2."""
    author, reviewer = agents["Author"], agents["Reviewer"]
    good = author.send("Deployer", "POST /deploy").text
    stranger = release_system(guard="@Reviewer(approved == true)").agent("Author")
    forger = release_system(secret=b"another secret, also 32 bytes!!").agent("Author")
    rng = random.Random(17)
    random_bytes = bytes(rng.randrange(256) for _ in range(200))
    random_text = "".join(rng.choice("abcXYZ0189+/=-_") for _ in range(300)).encode()
    random_body = b"cpl1." + rng.randbytes(90).hex().encode()
    foreign = stranger.send("Deployer", "POST /deploy").text.encode()
    forged = forger.send("Deployer", "POST /deploy").text.encode()
    misaddressed = reviewer.send("Author", "approval").text.encode()
    return {
        ("missing", 401, "missing"): [],
        ("random bytes", 400, "malformed"): [("cpl-token", random_bytes)],
        ("random text", 400, "malformed"): [("cpl-token", random_text)],
        ("random token body", 400, "malformed"): [("cpl-token", random_body)],
        ("truncated", 400, "malformed"): [("cpl-token", good[: len(good) // 2].encode())],
        ("oversized", 400, "oversized"): [("cpl-token", b"A" * (MAX_TOKEN_TEXT + 1))],
        ("other system", 400, "foreign"): [("cpl-token", foreign)],
        ("forged", 401, "forged"): [("cpl-token", forged)],
        ("misaddressed", 400, "misaddressed"): [("cpl-token", misaddressed)],
        ("two headers", 400, "malformed"): [("cpl-token", good.encode()),
                                             ("cpl-token", good.encode())],
    }


def test_hostile_tokens_are_4xx_with_a_body_and_leave_the_monitor_unchanged(agents, tmp_path):
    deployer, log = agents["Deployer"], tmp_path / "Deployer.jsonl"
    cases = hostile_headers(agents)
    with TestClient(deployer_app(deployer), base_url=DEPLOYER,
                    raise_server_exceptions=False) as client:
        for (case, status, reason), headers in cases.items():
            before_value, before_taken = deployer.holds("deploy"), deployer.taken
            before_lines = log_lines(log)
            response = client.post("/deploy?version=v2", headers=headers)
            assert response.status_code == status, (case, response.status_code, response.text)
            body = response.json()
            assert body["reason"] == reason, case
            assert body["header"] == "cpl-token" and body["detail"], case
            assert deployer.holds("deploy") == before_value, case
            added = log_lines(log)[len(before_lines):]
            assert deployer.taken == before_taken + len(added), case  # refusal acts, nothing else
            # a reason's first refusal in a second is an act; its repeats are counted
            assert [event_label(line) for line in added] in ([f"refused: {reason}"], []), case
    deployer.close()
    assert refusal_counts(log) == Counter(reason for _, _, reason in cases)


def test_with_per_lifeline_keys_the_author_cannot_approve_for_the_reviewer(tmp_path):
    """Each service its own system and key (docs/embedding.md, "Who can forge what"): the
    Author's process, holding no key but its own, sends a token "from" the Reviewer
    saying v2 is approved; it is a 401 naming the key, and the guard still refuses. The
    genuine review, relayed by the Author, then lets the deploy through."""
    names = ["Author", "Reviewer", "Deployer"]
    ring = KeyRing.generate(names)

    def process(name, keys=None, log=tmp_path):
        return System(names, {"deploy": ("Deployer", GUARD)}, ["approved", "version", "deployed"],
                      keys=keys or ring.only(name)).agent(name, log=log)

    author, reviewer, deployer = (process(name) for name in names)
    made = KeyRing.generate(["Reviewer"])
    impostor = process("Reviewer", KeyRing({**ring.public, **made.public}, made.private),
                       log=None)
    impostor.act(approved=True, version="v2")
    forged = impostor.send("Deployer", "POST /deploy").text
    hooks = causal_hooks(author, {REVIEWER: "Reviewer", DEPLOYER: "Deployer"})
    with TestClient(deployer_app(deployer), base_url=DEPLOYER) as to_deployer, \
            TestClient(reviewer_app(reviewer), base_url=REVIEWER) as to_reviewer:
        refused = to_deployer.post("/deploy", params={"version": "v2"},
                                   headers={"cpl-token": forged})
        assert refused.status_code == 401 and refused.json()["reason"] == "forged"
        assert "not signed by Reviewer's key" in refused.json()["detail"]
        assert not deployer.holds("deploy")
        to_deployer.event_hooks = to_reviewer.event_hooks = hooks
        assert to_reviewer.post("/review", params={"version": "v2"}).status_code == 200
        assert to_deployer.post("/deploy", params={"version": "v2"}).status_code == 200


def test_fuzzed_tokens_never_reach_the_monitor(agents):
    deployer, author = agents["Deployer"], agents["Author"]
    rng = random.Random(2026)
    with TestClient(deployer_app(deployer), base_url=DEPLOYER,
                    raise_server_exceptions=False) as client:
        for _ in range(60):
            good = author.send("Deployer", "POST /deploy").encode()
            cut = bytearray(good[: rng.randrange(len(good))])
            for _ in range(rng.randrange(3) if cut else 0):  # and a few bytes flipped
                cut[rng.randrange(len(cut))] = rng.randrange(256)
            text = b"cpl1." + base64.urlsafe_b64encode(bytes(cut)).rstrip(b"=")
            before = deployer.holds("deploy"), deployer.taken
            response = client.post("/deploy?version=v2", headers=[("cpl-token", text)])
            assert response.status_code in (400, 401), response.text
            assert deployer.holds("deploy") == before[0]
            assert deployer.taken - before[1] in (0, 1, 2)  # refusal acts only, counted
    assert deployer.taken < 60  # a second's repeats of a reason are one act, not one each


def test_a_replayed_token_is_a_409_and_recorded_once(agents, tmp_path):
    author, deployer = agents["Author"], agents["Deployer"]
    token = author.send("Deployer", "POST /status").text
    with TestClient(deployer_app(deployer), base_url=DEPLOYER) as client:
        assert client.get("/status", headers={"cpl-token": token}).status_code == 200
        before = log_lines(tmp_path / "Deployer.jsonl")
        replayed = client.get("/status", headers={"cpl-token": token})
    assert replayed.status_code == 409 and replayed.json()["reason"] == "replayed"
    added = log_lines(tmp_path / "Deployer.jsonl")[len(before):]
    assert [event_label(line) for line in added] == ["refused: replayed"]


def test_a_clock_ahead_of_a_restarted_service_is_a_409(agents):
    author, first = agents["Author"], agents["Reviewer"]
    first.act("approve", approved=True, version="v1")  # a Reviewer event the guards read...
    author.receive(first.send("Author", "reply"))  # ...that reached the Author
    restarted = release_system().agent("Reviewer")  # the service came back, counting from 0
    with TestClient(reviewer_app(restarted), base_url=REVIEWER) as client:
        token = author.send("Reviewer", "POST /review").text
        response = client.post("/review?version=v2", headers={"cpl-token": token})
    assert response.status_code == 409 and response.json()["reason"] == "clock"
    assert restarted.taken == 1  # the refusal, and the handler never ran


def test_a_hostile_token_in_a_response_is_refused_on_the_clients_record(agents, tmp_path):
    async def lying(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"cpl-token", b"not-a-token")]})
        await send({"type": "http.response.body", "body": b"{}"})

    client = TestClient(lying, base_url=DEPLOYER)  # not entered: this app has no lifespan
    client.event_hooks = causal_hooks(agents["Author"], {DEPLOYER: "Deployer"})
    assert client.get("/anything").status_code == 200
    labels = [event_label(line) for line in log_lines(tmp_path / "Author.jsonl")]
    assert labels[-1] == "refused: malformed"


# -- a real socket ---------------------------------------------------------------------------

class ServerThread:
    """A uvicorn server on 127.0.0.1, a free port, in a thread of this process."""

    def __init__(self, app) -> None:
        self.server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=0,
                                                    log_level="warning", lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        while not self.server.started:
            self.thread.join(0.01)
            assert self.thread.is_alive(), "uvicorn did not start"
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def test_over_a_real_socket_with_the_async_client(agents):
    author = agents["Author"]

    async def story(reviewer: str, deployer: str) -> list[httpx.Response]:
        hooks = async_causal_hooks(author, {reviewer: "Reviewer", deployer: "Deployer"})
        async with httpx.AsyncClient(event_hooks=hooks, timeout=10) as client:
            return [await client.post(f"{deployer}/deploy?version=v2"),
                    await client.post(f"{reviewer}/review?version=v2"),
                    await client.post(f"{deployer}/deploy?version=v2"),
                    await client.get(f"{deployer}/stream")]

    with ServerThread(reviewer_app(agents["Reviewer"])) as reviewer, \
            ServerThread(deployer_app(agents["Deployer"])) as deployer:
        refused, reviewed, deployed, streamed = asyncio.run(story(reviewer, deployer))
    assert [refused.status_code, reviewed.status_code, deployed.status_code] == [403, 200, 200]
    assert streamed.text == "chunk 0\nchunk 1\nchunk 2\n" and "cpl-token" in streamed.headers
    assert agents["Deployer"].holds("deploy")


# -- the example -----------------------------------------------------------------------------

def test_the_example_runs_and_its_merged_trace_rechecks(tmp_path):
    """Run twice: the second run stops on one line (the Author's, or a service's once the
    Author's log is gone) unless --overwrite, whose logs then merge and re-check."""
    environment = {**os.environ, "PYTHONPATH": str(ROOT)}
    logs, trace = tmp_path / "logs", tmp_path / "release.jsonl"
    command = [sys.executable, str(EXAMPLE / "run.py"), "--logs", str(logs)]
    run(command, environment)
    for who, log in (("run.py", "Author"), ("services.py", "Reviewer")):
        again = subprocess.run(command, env=environment, capture_output=True, text=True,
                               timeout=60)
        assert (again.returncode, again.stdout, again.stderr) == (2, "", (
            f"{who}: {logs}/{log}.jsonl exists already: give --overwrite to replace it\n"))
        (logs / "Author.jsonl").unlink()
    story = run([*command, "--overwrite"], environment)
    statuses = re.findall(r"^\S.*?: (\d{3}) ", story, re.MULTILINE)
    assert statuses == ["403", "401", "200", "403", "200"]
    assert sorted(path.name for path in logs.iterdir()) == [
        "Author.jsonl", "Deployer.jsonl", "Reviewer.jsonl"]
    cpl = [sys.executable, "-m", "cpl_cli"]
    run([*cpl, "merge", str(logs), "-o", str(trace)], environment)
    verdict = run([*cpl, "eval", str(trace)], environment)
    assert verdict.splitlines()[-1] == "3 decisions re-checked: all agree"
    run([*cpl, "render", str(trace), "-o", str(tmp_path / "release.svg")], environment)
    assert (tmp_path / "release.svg").read_text().lstrip().startswith("<")


CLIENTS, ROUNDS = 20, 2


def test_the_examples_guard_holds_for_every_just_reviewed_deploy_of_20_clients(tmp_path,
                                                                              monkeypatch):
    """20 clients at once, one Author agent: each has its version reviewed, then deploys it
    (allowed, though the Reviewer's latest review is mostly another client's), and asks
    for a version nobody reviewed (refused); the merged logs re-check."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    from release import SECRET_VARIABLE, release_system as example_system
    from services import start_services
    monkeypatch.setenv(SECRET_VARIABLE, os.urandom(32).hex())  # the services inherit it
    logs = tmp_path / "logs"
    logs.mkdir()
    with ExitStack() as stack:
        author = stack.enter_context(example_system().agent("Author", log=logs))
        (_, reviewer), (_, deployer) = start_services(
            [[sys.executable, str(EXAMPLE / "services.py"), role, "--logs", str(logs)]
             for role in ("reviewer", "deployer")], stack)
        client = stack.enter_context(httpx.Client(timeout=30, event_hooks=causal_hooks(
            author, {reviewer: "Reviewer", deployer: "Deployer"})))

        def one_client(k: int) -> list[tuple[str, int]]:
            answers = []
            for r in range(ROUNDS):
                version = f"c{k}-r{r}"
                assert client.post(f"{reviewer}/review", params={"version": version}).is_success
                answers.append(("reviewed", client.post(f"{deployer}/deploy",
                                                        params={"version": version}).status_code))
            answers.append(("unreviewed", client.post(
                f"{deployer}/deploy", params={"version": f"c{k}-never"}).status_code))
            return answers

        with ThreadPoolExecutor(CLIENTS) as pool:
            answers = [a for client_answers in pool.map(one_client, range(CLIENTS))
                       for a in client_answers]
    assert Counter(answers) == Counter({("reviewed", 200): CLIENTS * ROUNDS,
                                        ("unreviewed", 403): CLIENTS})
    cpl = [sys.executable, "-m", "cpl_cli"]
    run([*cpl, "merge", str(logs), "-o", str(tmp_path / "t.jsonl")], dict(os.environ))
    verdict = run([*cpl, "eval", str(tmp_path / "t.jsonl")], dict(os.environ))
    assert verdict.splitlines()[-1] == f"{CLIENTS * (ROUNDS + 1)} decisions re-checked: all agree"


def run(command: list[str], environment: dict[str, str]) -> str:
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def log_lines(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def refusal_counts(log: Path) -> Counter:
    """Reason -> refusals the log's ``refused:`` acts stand for (counted ones included)."""
    counts: Counter = Counter()
    for line in log_lines(log):
        counted = refusals_of(event_label(line) or "")
        if counted:
            counts[counted[0]] += counted[1]
    return counts


def event_label(line: dict) -> str | None:
    return line.get("label")
