"""One agent, two tools at once: parallel threads of a single lifeline.

The Agent asks a Search tool and a Calculator concurrently — two threads of
the Agent that share its store and its monitor — and then decides, from its
causal past, whether it has what it needs to answer.  The answer is written
by an LLM action (:mod:`choreo.models.llm`; the deterministic mock backend unless
``CPL_LLM_BACKEND`` says otherwise), so runs replay exactly without a network.

    cpl show examples/parallel_tools.py --lifeline Agent
    cpl run examples/parallel_tools.py --sim --seed 1 --arg question="How tall is Everest in feet?"
"""

from choreo import Choreography
from choreo.models import llm

c = tools = Choreography("parallel_tools")
Agent, Search, Calculator = c.lifelines("Agent", "Search", "Calculator")

question = c.input("question", str, default="How tall is Mount Everest in feet?", at=Agent)
query = c.var("query", str)
hits = c.var("hits", int)
snippet = c.var("snippet", str)
expression = c.var("expression", str)
value = c.var("value", float)
ok = c.var("ok", bool)
answer = c.var("answer", str)


def plan(variables, rng):
    return variables["question"], "8848.86 * 3.28084"


def search(variables, rng):
    found = rng.randint(0, 3)
    return found, "Mount Everest is 8,848.86 m high." if found else ""


def calculate(variables, rng):
    left, _, right = variables["expression"].partition("*")
    return float(left) * float(right), True


compose = llm("Question: {question}\nSource: {snippet}\nComputed: {value}\nAnswer briefly.",
              name="compose answer")

c.act(Agent, plan, assigns=[query, expression], reads=[question])
with c.parallel():
    with c.thread():
        c.send(Agent, Search, query)
        c.act(Search, search, assigns=[hits, snippet], reads=[query])
        c.send(Search, Agent, hits, snippet, label="search results")
    with c.thread():
        c.send(Agent, Calculator, expression)
        c.act(Calculator, calculate, assigns=[value, ok], reads=[expression])
        c.send(Calculator, Agent, value, label="result")
with c.if_("@Search.hits > 0 && @Calculator.ok", at=Agent, label="answer?"):
    c.act(Agent, compose, assigns=[answer])
with c.else_():
    c.set(Agent, answer="I could not find a source.")

c.result(Agent, answer)
