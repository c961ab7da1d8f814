"""Two HTTP services guarded by CPL, driven by an Author: one command, one log per agent.

    python examples/embedding/http/run.py --logs DIR
    cpl merge DIR -o release.jsonl && cpl eval release.jsonl
    cpl render release.jsonl -o release.svg

The Reviewer and the Deployer run under uvicorn in their own processes on 127.0.0.1. The
Author deploys before any review (refused: the approval is not in the Deployer's causal
past), calls without a token (refused: missing), gets v2 approved, asks for v3 (refused:
v3 was never approved), then deploys v2 (allowed).

A second run into the same DIR stops on one line naming the log that is there (exit 2),
the Author's before any service starts: add ``--overwrite`` (passed on to the services) to
replace the earlier run's logs.
"""

from __future__ import annotations

import argparse
import os
import sys
from contextlib import ExitStack
from pathlib import Path

import httpx

from causal_guards.http import causal_hooks
from cpl.live import LogExists
from release import SECRET_VARIABLE, release_system
from services import start_services

HERE = Path(__file__).resolve().parent


def show(step: str, response: httpx.Response) -> None:
    body = response.json()
    print(f"{step}: {response.status_code} {body.get('error') or body}")
    for line in body.get("explanation", "").strip().splitlines():
        print(f"  {line}".rstrip())


def run(logs: Path, overwrite: bool) -> None:
    logs.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault(SECRET_VARIABLE, os.urandom(32).hex())  # inherited by the services
    with ExitStack() as stack:  # the Author first: an earlier run's log stops it at once
        author = stack.enter_context(release_system().agent("Author", log=logs,
                                                            overwrite=overwrite))
        (_, reviewer), (_, deployer) = start_services(
            [[sys.executable, str(HERE / "services.py"), role, "--logs", str(logs),
              *(["--overwrite"] if overwrite else [])] for role in ("reviewer", "deployer")],
            stack)
        client = stack.enter_context(httpx.Client(
            event_hooks=causal_hooks(author, {reviewer: "Reviewer", deployer: "Deployer"})))
        show("deploy v2 before any review", client.post(f"{deployer}/deploy?version=v2"))
        show("deploy v2 without a token", httpx.post(f"{deployer}/deploy?version=v2"))
        show("review v2", client.post(f"{reviewer}/review?version=v2"))
        show("deploy v3 (v2 was approved)", client.post(f"{deployer}/deploy?version=v3"))
        show("deploy v2", client.post(f"{deployer}/deploy?version=v2"))
    print(f"logs in {logs}/: Author.jsonl Reviewer.jsonl Deployer.jsonl")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=Path, default=Path("http-logs"),
                        help="folder for the agents' logs (default: http-logs)")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's logs")
    arguments = parser.parse_args()
    try:
        run(arguments.logs, arguments.overwrite)
    except LogExists as error:  # an earlier run's logs are kept unless --overwrite
        parser.exit(2, f"{parser.prog}: {error.path} exists already: give --overwrite to "
                       f"replace it\n")
