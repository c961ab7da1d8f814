"""causal_guards.openai_agents: a CPL guard as a tool input guardrail, over real ``Runner.run``.

The models are ``agents.testing.ScriptedModel``s (the SDK's own offline model), so each test
is a real run of the SDK's tool loop: the guardrail allows or rejects according to the guard,
a hostile token or hostile arguments end in a rejection the model reads (the runner finishes,
the monitor is as before), and the example's logs merge into a trace whose every decision
``cpl eval`` re-checks.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
import sys

import pytest
from agents import (Agent, Runner, ToolCallOutputItem, function_tool, handoff,
                    set_tracing_disabled)
from agents.testing import ScriptedModel, assistant_message, function_call

from causal_guards.openai_agents import (MAX_REJECTION_CHARS, MAX_WAITING_TOKENS, CausalContext,
                                         causal_guardrail)
from choreo_util import cpl
from cpl.live import LiveError, System
from runtime_util import EXAMPLES

EXAMPLE = EXAMPLES / "embedding" / "openai_agents_refund.py"
GUARD = "@FraudCheck(verdict == clear) && @FraudCheck.order == order"

set_tracing_disabled(True)


def system(**options) -> System:
    return System(["Support", "FraudCheck"], {"refund": ("Support", GUARD)},
                  variables=["order", "verdict", "refunded"], **options)


def tool_outputs(result) -> list[str]:
    """What the model read back from each tool call of a run (a result or a rejection)."""
    return [item.output for item in result.new_items if isinstance(item, ToolCallOutputItem)]


def refund_run(support, calls: list[str], context=None) -> tuple[list[str], list[str]]:
    """Run Support through one ``issue_refund`` call per element of ``calls`` (raw JSON
    arguments); return the outputs the model saw and the orders actually refunded."""
    refunded: list[str] = []
    guard = causal_guardrail(support, "refund", bind=lambda args: {"order": args["order"]})

    @function_tool(tool_input_guardrails=[guard])
    def issue_refund(order: str) -> str:
        support.act("refund issued", refunded=order)
        refunded.append(order)
        return f"refunded {order}"

    steps = [[function_call("issue_refund", arguments, call_id=f"c{i}")]
             for i, arguments in enumerate(calls)]
    model = ScriptedModel([*steps, [assistant_message("over")]])
    agent = Agent(name="Support", model=model, tools=[issue_refund])
    result = asyncio.run(Runner.run(agent, "refund please", context=context or CausalContext()))
    assert result.final_output == "over" and model.remaining_steps == 0
    return tool_outputs(result), refunded


def verdict(fraud, order: str, value: str = "clear"):
    fraud.act("verdict", order=order, verdict=value)
    return fraud.send("Support", "verdict")


def test_rejected_before_the_verdict_allowed_after_it():
    live = system()
    with live.agent("Support") as support, live.agent("FraudCheck") as fraud:
        context = CausalContext()
        outputs, refunded = refund_run(support, ['{"order": "A-17"}'], context)
        assert refunded == [] and outputs[0].startswith("issue_refund refused: guard 'refund'")
        assert "FraudCheck" in outputs[0]  # the explanation names what is missing
        context.deliver("Support", verdict(fraud, "A-17"))
        outputs, refunded = refund_run(support, ['{"order": "A-17"}'], context)
        assert refunded == ["A-17"] and outputs == ["refunded A-17"]


def test_a_verdict_on_another_order_does_not_clear_this_one():
    live = system()
    with live.agent("Support") as support, live.agent("FraudCheck") as fraud:
        context = CausalContext()
        context.deliver("Support", verdict(fraud, "B-9"))
        outputs, refunded = refund_run(support, ['{"order": "A-17"}', '{"order": "B-9"}'], context)
        assert refunded == ["B-9"]
        assert "refused" in outputs[0] and outputs[1] == "refunded B-9"


def test_a_suspicious_verdict_rejects():
    live = system()
    with live.agent("Support") as support, live.agent("FraudCheck") as fraud:
        context = CausalContext()
        context.deliver("Support", verdict(fraud, "A-17", "suspicious"))
        outputs, refunded = refund_run(support, ['{"order": "A-17"}'], context)
        assert refunded == [] and "refused" in outputs[0]


@pytest.mark.parametrize("carried", [True, False], ids=["token carried", "token dropped"])
def test_a_handoff_carries_the_token_to_the_next_agents_guard(carried):
    live = System(["Triage", "Support"], {"refund": ("Support", "@Triage(verified == true)")},
                  variables=["verified"])
    with live.agent("Triage") as triage, live.agent("Support") as support:
        guard = causal_guardrail(support, "refund")

        @function_tool(tool_input_guardrails=[guard])
        def issue_refund(order: str) -> str:
            return f"refunded {order}"

        def handed_over(ctx):
            triage.act("checked identity", verified=True)
            token = triage.send("Support", "handoff")
            if carried:
                ctx.context.deliver("Support", token)

        refund = function_call("issue_refund", {"order": "A-17"}, call_id="r")
        support_model = ScriptedModel([[refund], [assistant_message("over")]])
        front = Agent(name="Support", model=support_model, tools=[issue_refund])
        triage_model = ScriptedModel([[function_call("transfer_to_support", {}, call_id="h")]])
        desk = Agent(name="Triage", model=triage_model,
                     handoffs=[handoff(front, on_handoff=handed_over)])
        result = asyncio.run(Runner.run(desk, "refund A-17", context=CausalContext()))
        assert result.final_output == "over"
        assert (tool_outputs(result)[-1] == "refunded A-17") == carried
        assert support.taken == (3 if carried else 2)


def knowledge(agent) -> tuple:
    """What ``agent``'s monitor holds of the other lifelines, and its store (its own event
    count moves with every recorded refusal, so it is left out)."""
    others = [i for name, i in agent.system.carried.items() if name != agent.lifeline]
    return ({name: n for name, n in agent.seen.items() if name != agent.lifeline},
            [agent.monitor.views[i] for i in others], [agent.monitor.varviews[i] for i in others],
            dict(agent.monitor.store))


REFUSED_AS = {"random bytes": "malformed", "truncated": "malformed", "oversized": "oversized",
              "foreign": "foreign", "replayed": "replayed", "empty": "malformed",
              "misaddressed": "misaddressed"}


def hostile_tokens(live: System, fraud) -> dict[str, object]:
    """A good token, then every kind of bad one (``replayed`` is the good one again)."""
    good = verdict(fraud, "A-17").text
    other = System(["Support", "FraudCheck"],
                   {"refund": ("Support", "@FraudCheck(verdict == clear)")},
                   variables=["order", "verdict"])
    with other.agent("FraudCheck") as stranger:
        stranger.act(order="A-17", verdict="clear")
        foreign = stranger.send("Support", "verdict")
    return {
        "good": good,
        "random bytes": os.urandom(300),
        "truncated": good[: len(good) // 2],
        "oversized": "A" * 100_000,
        "foreign": foreign,
        "replayed": good,
        "empty": "",
        "misaddressed": live.agent("Support").send("FraudCheck", "echo"),
    }


def test_hostile_tokens_are_refused_the_run_finishes_and_the_monitor_is_unchanged():
    live = system()
    with live.agent("Support") as support, live.agent("FraudCheck") as fraud:
        tokens = hostile_tokens(live, fraud)
        context = CausalContext()
        context.deliver("Support", tokens.pop("good"))
        outputs, refunded = refund_run(support, ['{"order": "B-9"}'], context)
        assert refunded == [] and "refused" in outputs[0]  # the good verdict is about A-17
        before = knowledge(support)
        for kind, token in tokens.items():
            context.deliver("Support", token)
            outputs, refunded = refund_run(support, ['{"order": "B-9"}'], context)
            assert refunded == [], kind
            assert f"tokens refused before deciding: {REFUSED_AS[kind]}" in outputs[0], kind
            assert len(outputs[0]) <= MAX_REJECTION_CHARS
            assert knowledge(support) == before, kind
        outputs, refunded = refund_run(support, ['{"order": "A-17"}'], context)
        assert refunded == ["A-17"]  # nothing hostile undid the good verdict


def test_an_unsigned_token_is_refused_as_forged_when_the_system_signs():
    signed, unsigned = system(secret=os.urandom(32)), system()
    with signed.agent("Support") as support, unsigned.agent("FraudCheck") as impostor:
        context = CausalContext()
        context.deliver("Support", verdict(impostor, "A-17"))
        outputs, refunded = refund_run(support, ['{"order": "A-17"}'], context)
        assert refunded == [] and "tokens refused before deciding: forged" in outputs[0]


# Arguments nested thousands deep are left out: the SDK itself (0.24.0) parses them while
# planning the call, before any guardrail runs, and Runner.run raises RecursionError.
@pytest.mark.parametrize("arguments", [
    "not json", "[1, 2]", '{"amount": 3}', '{"order": {"nested": [1]}}', '{"order": null}',
    '{"order": "' + "x" * 70_000 + '"}',
], ids=["not json", "array", "missing", "nested", "null", "oversized"])
def test_hostile_arguments_are_rejected_without_an_exception(arguments):
    live = system()
    with live.agent("Support") as support, live.agent("FraudCheck") as fraud:
        context = CausalContext()
        context.deliver("Support", verdict(fraud, "A-17"))
        outputs, refunded = refund_run(support, [arguments], context)
        assert refunded == [] and outputs[0].startswith("issue_refund refused")


def test_delivery_is_bounded_and_typed():
    context = CausalContext()
    for _ in range(MAX_WAITING_TOKENS):
        context.deliver("Support", "x")
    with pytest.raises(OverflowError, match="receive them"):
        context.deliver("Support", "x")
    with pytest.raises(TypeError, match="Token"):
        context.deliver("Support", 42)
    assert len(context.take("Support")) == MAX_WAITING_TOKENS and context.take("Support") == []


def test_misuse_fails_when_the_guardrail_is_built():
    live = system()
    with live.agent("FraudCheck") as fraud, live.agent("Support") as support:
        with pytest.raises(LiveError):
            causal_guardrail(fraud, "refund")  # FraudCheck does not own it
        with pytest.raises(LiveError):
            causal_guardrail(support, "refnud")


def test_the_example_runs_and_its_merged_logs_recheck(tmp_path, monkeypatch, capsys):
    """In this process (importing the SDK again in a child costs seconds), through its main."""
    logs = tmp_path / "logs"
    spec = importlib.util.spec_from_file_location("openai_agents_refund", EXAMPLE)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    monkeypatch.setattr(sys, "argv", [str(EXAMPLE), "--logs", str(logs)])
    example.main()
    outputs = capsys.readouterr().out.split("--- tool output ")[1:]
    assert len(outputs) == 3 and "issue_refund refused: guard 'refund'" in outputs[0]
    assert "A-17: clear" in outputs[1] and "refunded 40 EUR on A-17" in outputs[2]
    assert sorted(path.name for path in logs.iterdir()) == ["FraudCheck.jsonl", "Support.jsonl"]
    trace = tmp_path / "refund.jsonl"
    assert cpl("merge", logs, "-o", trace).returncode == 0
    checked = cpl("eval", trace)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "2 decisions re-checked: all agree" in checked.stdout
    outcomes = [json.loads(line)["outcome"] for line in trace.read_text().splitlines()
                if '"choice"' in line]
    assert outcomes == [False, True]
    drawn = cpl("render", trace, "-o", tmp_path / "refund.svg")
    assert drawn.returncode == 0 and (tmp_path / "refund.svg").read_text().startswith("<")
