"""An MCP ``send_email`` tool that runs only if the approval is in the caller's causal past.

    python examples/embedding/mcp/run.py --logs logs/
    cpl merge logs/ -o mail.jsonl && cpl eval mail.jsonl && cpl render mail.jsonl -o mail.svg

This process holds two agents, the Drafter and the Approver; the Mailer is an MCP
server in its own process (``server.py``, over stdio). The Drafter asks the Mailer to
send draft d1 before anyone approved it (refused: the guard is false, and the error
result explains why), has the Approver approve d1, then asks again (sent), then tries
to send a draft d2 that nobody approved (refused). Each agent logs to DIR/<name>.jsonl.

A second run into the same folder stops on one line naming the log that is there (exit
2), the Drafter's before the server starts: add ``--overwrite`` (passed on to the server)
to replace the earlier run's logs.
"""

import argparse
import asyncio
import os
import secrets
import sys

from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from causal_guards.mcp import call_tool
from cpl.live import LogExists
from mail_system import SECRET_VARIABLE, mail_system

SERVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server.py")


async def story(drafter, approver, client) -> list[bool]:
    """The three send_email calls; True for each one the Mailer ran."""
    async def send(draft: str) -> bool:
        result = await call_tool(client, drafter, "Mailer", "send_email",
                                 {"to": "board@example.org", "draft": draft})
        print(f"send_email({draft}) -> {'refused' if result.is_error else 'ran'}:")
        print("  " + result.content[0].text.replace("\n", "\n  "))
        return not result.is_error

    drafter.act("write", draft="d1")
    outcomes = [await send("d1")]
    review = drafter.send("Approver", "review d1")
    approver.receive(review, draft="d1")
    approver.act("approve", approved=True)
    drafter.receive(approver.send("Drafter", "approved d1"))
    outcomes.append(await send("d1"))
    drafter.act("rewrite", draft="d2")
    outcomes.append(await send("d2"))
    return outcomes


async def main(logs: str, overwrite: bool) -> int:
    secret = secrets.token_bytes(32)
    system = mail_system(secret)
    arguments = [SERVER, "--logs", logs] + (["--overwrite"] if overwrite else [])
    server = StdioServerParameters(command=sys.executable, args=arguments,
                                   env={**os.environ, SECRET_VARIABLE: secret.hex()})
    with system.agent("Drafter", log=logs, overwrite=overwrite) as drafter, \
            system.agent("Approver", log=logs, overwrite=overwrite) as approver:
        try:
            async with Client(server) as client:
                outcomes = await story(drafter, approver, client)
        except* MCPError:  # the server stopped (it said why on stderr)
            outcomes = None
    if outcomes is None:
        return 2
    expected = [False, True, False]
    if outcomes != expected:
        print(f"unexpected outcomes {outcomes}, expected {expected}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", required=True, help="folder for one .jsonl log per agent")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's logs")
    arguments = parser.parse_args()
    os.makedirs(arguments.logs, exist_ok=True)
    try:
        sys.exit(asyncio.run(main(arguments.logs, arguments.overwrite)))
    except LogExists as error:  # an earlier run's logs are kept unless --overwrite
        parser.exit(2, f"{parser.prog}: {error.path} exists already: give --overwrite to "
                       f"replace it\n")
