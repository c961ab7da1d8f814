"""A support agent whose refund tool waits for the fraud check's verdict on *that* order.

Two OpenAI Agents SDK agents, two lifelines.  The Support agent's ``issue_refund`` tool is
guarded by the CPL guard

    refund @ Support:  @FraudCheck(verdict == clear) && @FraudCheck.order == order

"the fraud check's latest verdict that reached me is *clear*, and it is about the order I am
refunding".  A per-call guardrail cannot say this: the verdict is not in the call's arguments,
it is in what Support has causally seen.  The FraudCheck agent's ``record_verdict`` tool sets
the verdict and sends its token to Support through the shared run context.

The customer's first turn comes before the fraud check: the model's ``issue_refund`` call is
rejected, and the model reads the guard's explanation.  After the verdict arrives, the second
turn's call is allowed.  The models are scripted (``agents.testing.ScriptedModel``): no network,
no API key.

    python examples/embedding/openai_agents_refund.py --logs logs/
    cpl merge logs/ -o refund.jsonl && cpl eval refund.jsonl
    cpl render refund.jsonl -o refund.svg

A second run into the same folder stops on one line naming the log that is there
(exit 2): add ``--overwrite`` to replace the earlier run's logs.
"""

from __future__ import annotations

import argparse
import asyncio
import os

from agents import (Agent, RunContextWrapper, Runner, ToolCallOutputItem, function_tool,
                    set_tracing_disabled)
from agents.testing import ScriptedModel, assistant_message, function_call

from causal_guards.openai_agents import CausalContext, causal_guardrail
from cpl.live import LogExists, System

ORDER, AMOUNT = "A-17", 40

SYSTEM = System(
    ["Support", "FraudCheck"],
    {"refund": ("Support", "@FraudCheck(verdict == clear) && @FraudCheck.order == order")},
    variables=["order", "verdict", "refunded", "amount"],
)


def support_agent(support, model: ScriptedModel) -> Agent:
    """The customer-facing agent; its refund tool is an event of lifeline Support."""
    guard = causal_guardrail(support, "refund", bind=lambda args: {"order": args["order"]})

    @function_tool(tool_input_guardrails=[guard])
    def issue_refund(order: str, amount: int) -> str:
        """Refund ``amount`` euros on ``order``."""
        support.act("refund issued", refunded=order, amount=amount)
        return f"refunded {amount} EUR on {order}"

    return Agent(name="Support", instructions="Refund orders once they are cleared.",
                 model=model, tools=[issue_refund])


def fraud_agent(fraud, model: ScriptedModel) -> Agent:
    """The fraud analyst; recording a verdict sends it to Support."""

    @function_tool
    def record_verdict(ctx: RunContextWrapper[CausalContext], order: str, verdict: str) -> str:
        """Record the fraud verdict on ``order`` and tell Support."""
        fraud.act("verdict", order=order, verdict=verdict)
        ctx.context.deliver("Support", fraud.send("Support", "verdict"))
        return f"{order}: {verdict}, Support informed"

    return Agent(name="FraudCheck", instructions="Check orders for fraud.",
                 model=model, tools=[record_verdict])


def scripted_support() -> ScriptedModel:
    refund_call = {"order": ORDER, "amount": AMOUNT}
    return ScriptedModel([
        [function_call("issue_refund", refund_call, call_id="refund-1")],
        [assistant_message("Your refund is waiting for our fraud check.")],
        [function_call("issue_refund", refund_call, call_id="refund-2")],
        [assistant_message(f"Done: {AMOUNT} EUR refunded on {ORDER}.")],
    ])


def scripted_fraud() -> ScriptedModel:
    return ScriptedModel([
        [function_call("record_verdict", {"order": ORDER, "verdict": "clear"},
                       call_id="verdict-1")],
        [assistant_message(f"{ORDER} is clear.")],
    ])


def tool_outputs(result) -> list[str]:
    """What the model read back from each tool call of a run (a result or a rejection)."""
    return [item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)]


async def run(logs: str | None, overwrite: bool = False) -> list[str]:
    """Play the story; return every tool output the models saw, in order."""
    set_tracing_disabled(True)
    context = CausalContext()
    seen: list[str] = []
    with SYSTEM.agent("Support", log=logs, overwrite=overwrite) as support, \
            SYSTEM.agent("FraudCheck", log=logs, overwrite=overwrite) as fraud:
        front = support_agent(support, scripted_support())
        first = await Runner.run(front, f"Please refund order {ORDER}.", context=context)
        seen += tool_outputs(first)
        checked = await Runner.run(fraud_agent(fraud, scripted_fraud()), f"Check {ORDER}.",
                                   context=context)
        seen += tool_outputs(checked)
        second = await Runner.run(front, first.to_input_list() + [
            {"role": "user", "content": "Any news on my refund?"}], context=context)
        seen += tool_outputs(second)
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", help="folder for one .jsonl log per agent (for cpl merge)")
    parser.add_argument("--overwrite", action="store_true", help="replace an earlier run's logs")
    args = parser.parse_args()
    if args.logs:
        os.makedirs(args.logs, exist_ok=True)  # a path that is no folder yet would be one file
    try:
        outputs = asyncio.run(run(args.logs, args.overwrite))
    except LogExists as error:  # an earlier run's logs are kept unless --overwrite
        parser.exit(2, f"{parser.prog}: {error.path} exists already: give --overwrite to "
                       f"replace it\n")
    for turn, output in enumerate(outputs, 1):
        print(f"--- tool output {turn}, as the model saw it ---\n{output}")


if __name__ == "__main__":
    main()
