"""Algorithm 2 of the CPL paper, compiled into straight-line Python per lifeline.

For lifeline A the generated ``evaluate(store, old, views, varviews)`` computes
every slot of A bottom-up at the current event, exactly by the cases of
Algorithm 2 (one line per slot, commented with the subformula):

    atom α           read the store / the variable views; an unset term makes it 0
    Y θ              old[θ]                    (old is all 0 before A's first event)
    @B(θ), B ≠ A     bit k of views[B]         (views[B] is 0 while no B-event is visible)
    θ1 S θ2          θ2 | (θ1 & old[θ1 S θ2])
    ! & |            on 0/1 values

It then stores A's own view (a bitmask of the exported slots) and variable
view, and returns the new slot values, which become ``old`` at A's next event.
"""

from __future__ import annotations

from . import ast
from .errors import EvaluationError
from .printer import term_text, to_text
from .values import COMPARE


class _Unset:
    """The value of a variable that has not been set (distinct from null)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNSET"

    def __reduce__(self):
        return "UNSET"


UNSET = _Unset()


def _guarded(entry):
    def call(*args):
        try:
            return bool(entry.function(*args))
        except Exception as error:  # a user predicate failed: say which
            raise EvaluationError(f"predicate '{entry.name}' raised {type(error).__name__}: "
                                  f"{error}") from error
    return call


def generate_evaluator(lifeline, index, slots, slot_of, lifelines, shipped, exported, predicates):
    """Return (source, function) of lifeline ``index``'s evaluator."""
    namespace = {"U": UNSET}
    reads: dict = {}  # term -> local name
    head: list[str] = []
    body: list[str] = []

    def term(t) -> tuple[str, bool]:
        """Python expression of a term, and whether it may be unset."""
        if isinstance(t, ast.Const):
            return repr(t.value), False
        if isinstance(t, ast.Symbol):
            return repr(t.name), False
        if t not in reads:
            name = f"t{len(reads)}"
            reads[t] = name
            if isinstance(t, ast.Remote) and t.lifeline != lifeline:
                b = lifelines.index(t.lifeline)
                k = shipped[b].variables.index(t.name)
                head.append(f"{name} = varviews[{b}][{k}]  # {_show(t)}")
            else:
                head.append(f"{name} = store.get({t.name!r}, U)  # {_show(t)}")
        return reads[t], True

    def atom(node) -> str:
        if isinstance(node, ast.Bool):
            return "1" if node.value else "0"
        if isinstance(node, ast.Truth):
            value, _ = term(node.term)
            return f"({value} is True)"
        if isinstance(node, ast.Compare):
            (left, l_unset), (right, r_unset) = term(node.left), term(node.right)
            text_constant = _is_text_constant(node.left) or _is_text_constant(node.right)
            if text_constant and node.op in ("==", "!="):
                test = f"{left} {node.op} {right}"  # Python's str equality is CPL's here
            else:
                function = f"cmp_{_OP_NAMES[node.op]}"
                namespace[function] = COMPARE[node.op]
                test = f"{function}({left}, {right})"
            return _defined([left] * l_unset + [right] * r_unset, test)
        if isinstance(node, ast.Pred):
            args = [term(a) for a in node.args]
            function = f"pred_{node.name}"
            namespace[function] = _guarded(predicates.get(node.name))
            call = f"{function}({', '.join(a for a, _ in args)})"
            return _defined([a for a, unset in args if unset], call)
        raise TypeError(f"not an atom: {node!r}")

    for i, node in enumerate(slots):
        kind = type(node)
        if kind is ast.At:  # only B != A gets a slot of its own
            b = lifelines.index(node.lifeline)
            k = shipped[b].formulas.index(node.body)
            code = f"views[{b}] >> {k} & 1"
        elif kind is ast.Prev:
            code = f"old[{slot_of[node.body]}]"
        elif kind is ast.Since:
            code = f"v{slot_of[node.right]} | (v{slot_of[node.left]} & old[{i}])"
        elif kind is ast.Not:
            code = f"v{slot_of[node.body]} ^ 1"
        elif kind is ast.And:
            code = f"v{slot_of[node.left]} & v{slot_of[node.right]}"
        elif kind is ast.Or:
            code = f"v{slot_of[node.left]} | v{slot_of[node.right]}"
        else:
            code = atom(node)
        body.append(f"v{i} = {code}  # {_show(node)}")

    own_view = " | ".join(f"v{s} << {k}" if k else f"v{s}" for k, s in enumerate(exported)) or "0"
    own_vars = "".join(f"store.get({x!r}, U), " for x in shipped[index].variables)
    lines = [f"def evaluate_{lifeline}(store, old, views, varviews):",
             f'    """Algorithm 2 at lifeline {lifeline}: {len(slots)} slots, bottom-up."""',
             *("    " + line for line in head + body),
             f"    views[{index}] = {own_view}",
             f"    varviews[{index}] = ({own_vars})",
             f"    return [{', '.join(f'v{i}' for i in range(len(slots)))}]"]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<cpl monitor for {lifeline}>", "exec"), namespace)
    return source, namespace[f"evaluate_{lifeline}"]


_OP_NAMES = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def _is_text_constant(t) -> bool:
    return isinstance(t, ast.Symbol) or (isinstance(t, ast.Const) and type(t.value) is str)


def _defined(names: list[str], test: str) -> str:
    checks = [f"{n} is not U" for n in dict.fromkeys(names)]
    return "(" + " and ".join(checks + [test]) + ")"


def _show(node) -> str:
    text = to_text(node) if not isinstance(node, (ast.Var, ast.Remote)) else term_text(node)
    return text.replace("\n", "\\n")[:120]
