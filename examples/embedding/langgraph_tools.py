"""A6 tool-effect reordering in a LangGraph ToolNode, and the guard that stops it.

The model issues two stateful tool calls in one AIMessage: ``create_file`` then
``write_file`` on the same path.  The ToolNode runs the calls of one message
concurrently (a thread each), so the order the model meant is not the order the
effects land in: here ``create_file`` is slow, the write lands first, and the create
then truncates the file -- the write is lost with no error anywhere.

Guarded, call *k* of a message runs as lifeline ``tool_k`` and the ToolNode's
``wrap_tool_call`` decides, before a write, whether a create of that path is in the
call's causal past (``@tool_0.created == path || @tool_1.created == path``).  Calls of
one message are concurrent, so the create never is: the write is refused with the
guard's explanation, whatever order the threads run in.  The model sees the refusal,
waits for the create's result and issues the write again in its next turn; now the
create is in the past and the write runs.  No model key: the AIMessages are scripted.

    python examples/embedding/langgraph_tools.py --logs logs/
    cpl merge logs/ -o tools.jsonl && cpl eval tools.jsonl
    cpl render tools.jsonl -o tools.svg

A second run into the same folder stops on one line naming the log that is there
(exit 2): add ``--overwrite`` to replace the earlier run's logs.
"""

import argparse
import threading
import time
from typing import Annotated, TypedDict

from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode, tools_condition

from causal_guards.langgraph import GraphGuards, Tokens, family, family_guards
from cpl.live import LogExists, System

TOOLS = family("tool", 2)
CREATED = " || ".join(f"@{slot}.created == path" for slot in TOOLS)
PATH, TEXT = "notes.txt", "hello"


class Chat(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    cpl: Tokens


class Disk:
    """The tools' world: files by path, and the order their effects landed in."""

    def __init__(self):
        self.files, self.effects, self._lock = {}, [], threading.Lock()

    def tools(self) -> list:
        @tool(response_format="content_and_artifact")
        def create_file(path: str) -> tuple[str, dict]:
            """Create an empty file (an existing one is truncated)."""
            time.sleep(0.05)  # a slow file system: the effect lands late
            with self._lock:
                self.files[path] = ""
                self.effects.append(f"create {path}")
            return f"created {path}", {"created": path}

        @tool(response_format="content_and_artifact")
        def write_file(path: str, text: str) -> tuple[str, dict]:
            """Write text to a file, creating it if needed."""
            with self._lock:
                self.files[path] = text
                self.effects.append(f"write {path}")
            return f"wrote {len(text)} characters to {path}", {"written": path}

        return [create_file, write_file]


def model(state: Chat) -> dict:
    """The scripted model: create and write at once; after a refused write, write again."""
    turns = sum(isinstance(m, AIMessage) for m in state["messages"])
    if turns == 0:
        return {"messages": [AIMessage("", tool_calls=[
            {"name": "create_file", "args": {"path": PATH}, "id": "call_create"},
            {"name": "write_file", "args": {"path": PATH, "text": TEXT}, "id": "call_write"},
        ])]}
    refused = [m for m in state["messages"][-2:]
               if isinstance(m, ToolMessage) and m.status == "error"]
    if refused and turns == 1:
        return {"messages": [AIMessage("", tool_calls=[
            {"name": "write_file", "args": {"path": PATH, "text": TEXT}, "id": "call_retry"},
        ])]}
    return {"messages": [AIMessage("done")]}


def build(disk: Disk, guards: GraphGuards | None):
    """The agent loop; unguarded when ``guards`` is None."""
    g = StateGraph(Chat)
    if guards is None:
        g.add_node("model", model)
        g.add_node("tools", ToolNode(disk.tools()))
    else:
        g.add_node("model", guards.node("Model", model, to=guards.to_tool_calls("tool")))
        g.add_node("tools", ToolNode(disk.tools(), wrap_tool_call=guards.tool_calls(
            "tool", guarded={"write_file": "write_file"}, to=["Model"])))
    g.add_edge(START, "model")
    g.add_conditional_edges("model", tools_condition, ["tools", END])
    g.add_edge("tools", "model")
    return g.compile()


def system() -> System:
    return System(["Model", *TOOLS], family_guards("write_file", TOOLS, CREATED),
                  variables=["path", "created", "written"])


def run(guards: GraphGuards | None) -> Disk:
    disk = Disk()
    state = build(disk, guards).invoke({"messages": [("user", f"save {TEXT!r} in {PATH}")]})
    for message in state["messages"]:
        if isinstance(message, ToolMessage):
            text = f"  {message.name}: {message.content}".replace("\n", "\n    ")
            print("\n".join(line.rstrip() for line in text.splitlines()))
    print(f"  effects landed: {', '.join(disk.effects)}; {PATH} = {disk.files.get(PATH)!r}")
    return disk


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", help="folder for one .jsonl log per agent")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's logs")
    args = parser.parse_args(argv)
    try:  # before the unguarded run: an earlier run's logs stop this one at once
        guards = GraphGuards(system(), log=args.logs, overwrite=args.overwrite)
    except LogExists as error:
        parser.exit(2, f"{parser.prog}: {error.path} exists already: give --overwrite to "
                       f"replace it\n")
    print("unguarded:")
    unguarded = run(None)
    print("guarded:")
    with guards:
        guarded = run(guards)
    return {"unguarded": unguarded.files.get(PATH), "guarded": guarded.files.get(PATH)}


if __name__ == "__main__":
    main()
