"""Per tool call overhead of a CPL guard as an OpenAI Agents SDK tool input guardrail.

One ``Runner.run`` over ``agents.testing.ScriptedModel``: a model turn asks for ``CALLS`` calls
of ``issue_refund`` at once, then answers.  Variants of the same tool, interleaved round by
round: no guardrail (the baseline); a guardrail that always allows (what the SDK charges for
having any input guardrail); the ``causal_guardrail`` of the refund story with its guard true
(so the tool runs every time; each call adds an act binding ``order`` and a choice) without
recording; the same writing both agents' logs.  Per call = CPU time of one run / ``CALLS``,
timed by ``timing.timed`` (what was allocated before is frozen out of the collector: a full
collection of the SDK's heap mid-run otherwise swamps the difference).  Besides the medians,
each row's note gives the median of the per-round differences: a round runs every variant back
to back, so a slow spell of the shared machine hits both sides.

Then the guardrail functions alone, called directly ``DIRECT`` times on one call's data: the
CPL one (without and with logs) against the always-allow one, which isolates what CPL adds.

    PYTHONPATH=$PWD python bench/embed_openai_agents.py [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # timing, however this is run

from agents import (Agent, Runner, ToolGuardrailFunctionOutput,  # noqa: E402
                    ToolInputGuardrailData, function_tool, set_tracing_disabled,
                    tool_input_guardrail)
from agents.tool_context import ToolContext  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from causal_guards.openai_agents import CausalContext, causal_guardrail  # noqa: E402
from cpl.live import System  # noqa: E402
from timing import Row, interleaved, median, table, timed  # noqa: E402

CALLS = 40
DIRECT = 5_000  # calls per timing: with logs, each writes two lines to a temporary folder
GUARD = "@FraudCheck(verdict == clear) && @FraudCheck.order == order"
SYSTEM = System(["Support", "FraudCheck"], {"refund": ("Support", GUARD)},
                variables=["order", "verdict"])


def refund_tool(guardrails: list) -> object:
    @function_tool(tool_input_guardrails=guardrails)
    def issue_refund(order: str) -> str:
        """Refund ``order``."""
        return f"refunded {order}"
    return issue_refund


def cleared_support(log: str | None):
    """A Support that has received the fraud check's clear verdict on A-17: the guard holds."""
    support = SYSTEM.agent("Support", log=log)
    with SYSTEM.agent("FraudCheck", log=log) as fraud:
        fraud.act(order="A-17", verdict="clear")
        support.receive(fraud.send("Support", "verdict"))
    return support


@tool_input_guardrail
def always_allow(data: ToolInputGuardrailData) -> ToolGuardrailFunctionOutput:
    return ToolGuardrailFunctionOutput.allow()


def bind_order(arguments):
    return {"order": arguments["order"]}


def direct(guardrail) -> float:
    """CPU seconds of DIRECT calls of the guardrail's function on one call's data."""
    context = ToolContext(CausalContext(), tool_name="issue_refund", tool_call_id="c1",
                          tool_arguments='{"order": "A-17"}')
    data = ToolInputGuardrailData(context=context, agent=Agent(name="Support"))
    judge = guardrail.guardrail_function

    def calls():
        for _ in range(DIRECT):
            judge(data)
    return timed(calls)


def one_run(tool) -> float:
    """CPU seconds of one run of CALLS refund calls."""
    calls = [function_call("issue_refund", {"order": "A-17"}, call_id=f"c{i}")
             for i in range(CALLS)]
    model = ScriptedModel([calls, [assistant_message("done")]])
    agent = Agent(name="Support", model=model, tools=[tool])
    return timed(lambda: asyncio.run(Runner.run(agent, "refund")))


def run(quick: bool = False) -> list[Row]:
    set_tracing_disabled(True)
    repeats, direct_repeats = (3, 3) if quick else (61, 15)
    with tempfile.TemporaryDirectory() as logs:
        support, recorded = cleared_support(None), cleared_support(logs)
        cpl_guard = causal_guardrail(support, "refund", bind=bind_order)
        logged_guard = causal_guardrail(recorded, "refund", bind=bind_order)
        tools = {"plain": refund_tool([]), "allow": refund_tool([always_allow]),
                 "cpl": refund_tool([cpl_guard]), "logged": refund_tool([logged_guard])}
        one_run(tools["plain"])  # warm imports and caches before timing
        runs = interleaved({name: (lambda tool=tool: one_run(tool))
                            for name, tool in tools.items()}, repeats)
        alone = interleaved({"allow": lambda: direct(always_allow),
                             "cpl": lambda: direct(cpl_guard),
                             "logged": lambda: direct(logged_guard)}, direct_repeats)
        support.close()
        recorded.close()
    per_call = {name: [1e6 * s / CALLS for s in seconds] for name, seconds in runs.items()}
    base = median(per_call["plain"])
    rows = [Row("SDK tool", "call, no guardrail", base, "µs/call", per_call["plain"])]
    for name, what in (("allow", "call, always-allow guardrail"), ("cpl", "call, CPL guardrail"),
                       ("logged", "call, CPL guardrail + logs")):
        paired = median(g - p for g, p in zip(per_call[name], per_call["plain"]))
        rows.append(Row("SDK tool", what, median(per_call[name]), "µs/call", per_call[name],
                        baseline="same tool, no guardrail", baseline_value=base,
                        note=f"median of the rounds' differences {paired:+.0f} µs per call"))
    per_judge = {name: [1e6 * s / DIRECT for s in seconds] for name, seconds in alone.items()}
    allow = median(per_judge["allow"])
    rows.append(Row("SDK tool", "guardrail function alone, always allow", allow, "µs/call",
                    per_judge["allow"]))
    for name, what in (("cpl", "CPL"), ("logged", "CPL + logs")):
        value = median(per_judge[name])
        rows.append(Row("SDK tool", f"guardrail function alone, {what}", value, "µs/call",
                        per_judge[name], baseline="always-allow function", baseline_value=allow,
                        note=f"adds {value - allow:.1f} µs per call (take tokens, act, choice)"))
    return rows


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="three rounds: a smoke run")
    print(table(run(parser.parse_args().quick)))
