"""Why a guard has its value at an agent now, read from the agent's own monitor.

``cpl explain`` explains from a whole trace; a live agent has only its
monitor, which is enough: every subformula a guard evaluates at its owner is
kept as a slot (``System`` compiles them as roots), ``@B(θ)`` is the bit B
shipped at its latest event seen here (B's n-th event, n from the frontier
the agent keeps), and ``@B.x`` the value B shipped with it.  What B computed
below ``@B(θ)`` stays at B: the explanation names B's event and stops there.
The result is the same ``Explanation`` ``cpl explain`` prints.
"""

from __future__ import annotations

from ..lang import UNSET, ast, term_text, to_text
from ..semantics import Explanation, Step, Term

MAX_STEPS = 400  # as cpl explain: later steps are cut with a note


def explain_now(agent, guard) -> Explanation:
    """The guard (a ``CheckedGuard``) at ``agent``'s latest event, headed by that event."""
    me = agent.lifeline
    here = f"{me}.{agent.taken}" if agent.taken else "(no event yet)"
    steps = _Steps(agent, here)
    step = steps.step(guard.primitive)
    frontier = {name: (f"{name}.{count}" if count else None)
                for name, count in agent.seen.items()}
    frontier.setdefault(me, here if agent.taken else None)
    kind, label = agent.last
    return Explanation(here, me, kind, label, guard.canonical, step.value, None, frontier, step)


class _Steps:
    def __init__(self, agent, here: str):
        self.agent, self.here = agent, here
        self.monitor = agent.monitor
        self.program = agent.system.program
        self.shown: set = set()

    def value(self, node) -> bool:
        return self.monitor.value(node) if self.agent.taken else False

    def step(self, node) -> Step:
        me = self.agent.lifeline
        if isinstance(node, ast.At) and node.lifeline == me:
            node = node.body  # @A(θ) at A is θ
        value, text = self.value(node), to_text(node)
        if node in self.shown:
            return Step(text, value, self.here, repeat=True)
        self.shown.add(node)
        if len(self.shown) > MAX_STEPS:
            return Step(text, value, self.here, cut=True)
        if isinstance(node, ast.At):
            return self._at(node, value, text)
        if isinstance(node, ast.Prev):
            return Step(text, value, self.here, why=(
                "its operand held at the previous event here" if value else
                "no previous event here" if self.agent.taken <= 1 else
                "its operand did not hold at the previous event here"))
        children = tuple(self.step(child) for child in ast.children(node))
        if isinstance(node, ast.Since):
            left, right = children
            why = ("the right operand holds now" if right.value else
                   "the left operand holds now, and the S held at the previous event"
                   if value else "the right operand does not hold now, and "
                   + ("the left one does not either" if not left.value
                      else "the S did not hold at the previous event"))
            return Step(text, value, self.here, why=why, children=children)
        terms = tuple(self._term(t) for t in ast.terms(node)
                      if not isinstance(t, (ast.Const, ast.Symbol)))
        return Step(text, value, self.here, terms=terms, children=children)

    def _at(self, node: ast.At, value: bool, text: str) -> Step:
        count = self.agent.seen.get(node.lifeline, 0)
        if not count:
            return Step(text, value, self.here,
                        why=f"no event of {node.lifeline} is in this agent's causal past yet")
        source = f"{node.lifeline}.{count}"
        return Step(text, value, self.here, source=source,
                    why=f"as {node.lifeline} computed it at {source}, its latest event seen "
                        f"here (what it rests on is in {node.lifeline}'s monitor)")

    def _term(self, term) -> Term:
        me = self.agent.lifeline
        if isinstance(term, ast.Remote) and term.lifeline != me:
            count = self.agent.seen.get(term.lifeline, 0)
            if not count:
                return Term(term_text(term), False,
                            why=f"no event of {term.lifeline} is visible here")
            exports = self.program.exports[self.program.index(term.lifeline)]
            position = self.agent.system.carried[term.lifeline]
            value = self.monitor.varviews[position][exports.variables.index(term.name)]
            source: str | None = f"{term.lifeline}.{count}"
        else:
            value = self.monitor.store.get(term.name, UNSET)
            source = self.here if self.agent.taken else None
        if value is UNSET:
            return Term(term_text(term), False, source=source, why="never set")
        return Term(term_text(term), True, value, source)
