"""The Mailer: an MCP server over stdio whose ``send_email`` tool is causally guarded.

Started by ``run.py`` (``python server.py --logs DIR``, the secret in the environment);
it logs the Mailer's events to ``DIR/Mailer.jsonl``.
"""

import argparse
import os
import sys

from mcp.server.mcpserver import MCPServer

from causal_guards.mcp import CausalTools
from causal_guards.mcp_stdio import run_stdio
from cpl.live import LogExists, LogFailed
from mail_system import SECRET_VARIABLE, SEND, mail_system


def mail_server(mailer) -> MCPServer:
    server = MCPServer("mailer")
    tools = CausalTools(mailer)

    @server.tool()
    @tools.tool(guard=SEND, assign=("draft",))
    def send_email(to: str, draft: str) -> str:
        """Send the draft ``draft`` to ``to``; runs only once that draft is approved."""
        mailer.act("email sent")
        return f"sent draft {draft} to {to}"

    return server


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--logs", required=True, help="folder for Mailer.jsonl")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's log")
    args = parser.parse_args()
    secret = os.environ.get(SECRET_VARIABLE)
    if not secret:
        print(f"server.py: set {SECRET_VARIABLE} (hex) as run.py does", file=sys.stderr)
        return 2
    try:
        mailer = mail_system(bytes.fromhex(secret)).agent("Mailer", log=args.logs,
                                                          overwrite=args.overwrite)
    except LogExists as error:  # on stderr, which run.py shares
        print(f"server.py: {error.path} exists already: give --overwrite to replace it",
              file=sys.stderr)
        return 2
    try:
        with mailer:
            run_stdio(mail_server(mailer))  # server.run("stdio"), but no request goes unanswered
    except LogFailed as error:  # no room for the end line: cpl merge reads the log as cut
        print(f"server.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
