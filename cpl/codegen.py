"""Algorithms 1 and 2 of the CPL paper, generated as straight-line Python per lifeline.

For lifeline A, ``generate_monitor`` writes a factory ``monitor_A(init)`` that
holds A's state (Definition 4: ``vc``, ``views``, ``varviews``, ``store``) in
closure cells and returns four event steps, ``act``, ``send``, ``receive`` and
``choice``.  Each step is Algorithm 1 — a receive first copies B's entries
where the message is strictly ahead on B — followed by Algorithm 2 inlined:
every slot of A computed bottom-up, one line per slot, commented with its
subformula:

    atom α           read the store / the variable views; an unset term makes it false
    Y θ              y_θ, θ's value saved before this event (0 before A's first event)
    @B(θ), B ≠ A     bit k of views[B]         (views[B] is 0 while no B-event is visible)
    θ1 S θ2          θ2 or (θ1 and v_self), v_self still holding the previous value
    ! && ||          not / and / or on values already computed

Every slot is computed at every event (atoms and predicates included); the
connectives short-circuit only over values already at hand.  A's own view
(a bitmask of its exported slots) and variable view are updated as the paper
says.  ``SlotProgram.source`` is the generated text, for reading beside the
paper.  Per-event costs were measured in bench/ (P1, P1 local), which is why
the own clock entry is a cell of its own and the store is updated with ``|=``.
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


def generate_monitor(lifeline, index, slots, slot_of, roots, lifelines, shipped, exported,
                     predicates):
    """Return (source, factory): ``factory(init)`` builds lifeline ``index``'s monitor state
    and returns its event steps ``(act, send, receive, choice, values, clock, views, varviews, store)``.
    """
    namespace = {"U": UNSET, "new": tuple.__new__, "Metadata": _metadata_class()}
    reads: dict = {}  # term -> local name
    head: list[str] = []
    body: list[str] = []
    # Slots whose value outlives the event: read as old (Y θ, θ1 S θ2) or from outside (roots).
    kept = {slot_of[r] for r in roots} | {slot_of[n.body] for n in slots if type(n) is ast.Prev} \
        | {i for i, n in enumerate(slots) if type(n) is ast.Since}
    olds = {slot_of[n.body] for n in slots if type(n) is ast.Prev}

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
        reading = [t for t in ast.terms(node) if not isinstance(t, (ast.Const, ast.Symbol))]
        if not reading:  # only constants: decide now
            return "1" if _constant_atom(node, predicates) else "0"
        if isinstance(node, ast.Truth):
            value, _ = term(node.term)
            return f"({value} is True)"
        if isinstance(node, ast.Compare):
            (left, l_unset), (right, r_unset) = term(node.left), term(node.right)
            text_constant = _is_text_constant(node.left) or _is_text_constant(node.right)
            function = f"cmp_{_OP_NAMES[node.op]}"
            namespace[function] = COMPARE[node.op]
            if text_constant and node.op == "==":
                # Python's str equality is CPL's here, and UNSET equals no string,
                # so this one needs no definedness test (a cheaper atom: see bench/).
                return f"({left} == {right})"
            if text_constant and node.op == "!=":
                test = f"{left} != {right}"
            elif node.op in ("==", "!="):
                # Values of one type compare as Python compares them (values.equal); only
                # mixed types (int vs float, bool vs int, …) need the full rule.
                test = (f"({left} {node.op} {right} if {_type_of(node.left, left)} is "
                        f"{_type_of(node.right, right)} else {function}({left}, {right}))")
            else:
                test = f"{function}({left}, {right})"
            return _defined([left] * l_unset + [right] * r_unset, test)
        if isinstance(node, ast.Pred):
            args = [term(a) for a in node.args]
            function = f"pred_{node.name}"
            namespace[function] = _guarded(predicates.get(node.name))
            call = f"{function}({', '.join(a for a, _ in args)})"
            return _defined([a for a, unset in args if unset], call)
        raise TypeError(f"not an atom: {node!r}")

    def old(i) -> str:
        return f"y{i}" if i in olds else f"v{i}"

    for i, node in enumerate(slots):
        kind = type(node)
        if kind is ast.At:  # only B != A gets a slot of its own
            b = lifelines.index(node.lifeline)
            k = shipped[b].formulas.index(node.body)
            code = f"views[{b}] >> {k} & 1" if k else f"views[{b}] & 1"
        elif kind is ast.Prev:
            code = old(slot_of[node.body])
        elif kind is ast.Since:  # v{i} still holds the previous value here
            code = f"v{slot_of[node.right]} or (v{slot_of[node.left]} and v{i})"
        elif kind is ast.Not:
            code = f"not v{slot_of[node.body]}"
        elif kind is ast.And:
            code = f"v{slot_of[node.left]} and v{slot_of[node.right]}"
        elif kind is ast.Or:
            code = f"v{slot_of[node.left]} or v{slot_of[node.right]}"
        else:
            code = atom(node)
        body.append(f"v{i} = {code}  # {_show(node)}")

    own = shipped[index]
    evaluate = [f"y{i} = v{i}" for i in sorted(olds)] + head + body
    if exported:  # ``<< 0`` too: it turns a bool slot into the int a bitmask must be
        evaluate.append(f"views[{index}] = " + " | ".join(
            f"v{s} << {k}" for k, s in enumerate(exported)))
    own_vars = f"varviews[{index}] = ({''.join(f'store.get({x!r}, U), ' for x in own.variables)})"
    # ``store |= updates`` is dict.update without the method lookup and call: a third of
    # the cost of a local step (bench/README.md, P1 local).  It rebinds ``store``, hence
    # the ``nonlocal store`` of act and receive.
    store_update = ["if updates:", "    store |= updates"] + (["    " + own_vars] if own.variables else [])
    merge = []
    for b in range(len(lifelines)):
        if b == index:
            continue
        merge += [f"if mvc[{b}] > vc[{b}]:  # ahead on {lifelines[b]}: copy its entries",
                  f"    vc[{b}] = mvc[{b}]"]
        if shipped[b].formulas or shipped[b].variables:
            merge += [f"    views[{b}] = mviews[{b}]", f"    varviews[{b}] = mvars[{b}]"]
    # A's own clock entry lives in the cell ``own`` (a cell add is cheaper than a list
    # item add, and every event pays it); ``send`` and ``clock()`` write it back to vc.
    count = ["own += 1"]

    def function(signature, doc, steps, result=None, updates=False):
        """One event step; it rebinds the kept slots, and ``store`` if it applies updates."""
        rebound = ["store"] * updates + ["own"] + [f"v{i}" for i in sorted(kept)]
        declare = [f"nonlocal {', '.join(rebound)}"] if rebound else []
        lines = [f"    def {signature}:", f'        """{doc}"""']
        lines += ["        " + line for line in declare + steps]
        if result:
            lines.append(f"        return {result}")
        return lines

    initial_varviews = ", ".join(f"({'U, ' * len(e.variables)})" for e in shipped)
    lines = [
        f"def monitor_{lifeline}(init):",
        f'    """The monitor of {lifeline}: Definition 4 state, Algorithm 1 steps,',
        f'    Algorithm 2 inlined ({len(slots)} slots, bottom-up, old values in v*/y*)."""',
        f"    vc = [0] * {len(lifelines)}",
        f"    own = 0  # this lifeline's own entry of vc; send and clock() write it to vc[{index}]",
        f"    views = [0] * {len(lifelines)}",
        f"    varviews = [{initial_varviews}]",
        "    store = dict(init)",
        *(["    " + own_vars] if own.variables else []),
        *([f"    {' = '.join(f'v{i}' for i in sorted(kept))} = 0"] if kept else []),
        *function("act(updates=None)", "A local action.", store_update + count + evaluate,
                  updates=True),
        *function("send()", "A send: count, evaluate, return the metadata to ship.",
                  count + evaluate + [f"vc[{index}] = own"],
                  "new(Metadata, (tuple(vc), tuple(views), tuple(varviews)))"),
        *function("receive(message, updates=None)", "A receive: merge views where the message is ahead.",
                  ["mvc, mviews, mvars = message"] + merge + store_update + count + evaluate,
                  updates=True),
        *function("choice()", "A decision event: the store is unchanged.", count + evaluate),
        "    def values():",
        f"        return {{{', '.join(f'{i}: v{i}' for i in sorted(kept))}}}",
        "    def clock():",
        '        """The vector clock, this lifeline\'s own count included."""',
        f"        vc[{index}] = own",
        "        return vc",
        "    return act, send, receive, choice, values, clock, views, varviews, store",
    ]
    source = "\n".join(lines) + "\n"
    exec(compile(source, f"<cpl monitor for {lifeline}>", "exec"), namespace)
    return source, namespace[f"monitor_{lifeline}"]


def _metadata_class():
    from .metadata import Metadata  # metadata imports UNSET from here
    return Metadata


_OP_NAMES = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def _constant(t):
    return t.name if isinstance(t, ast.Symbol) else t.value


def _constant_atom(node, predicates) -> bool:
    values = [_constant(t) for t in ast.terms(node)]
    if isinstance(node, ast.Truth):
        return values[0] is True
    if isinstance(node, ast.Compare):
        return COMPARE[node.op](*values)
    return _guarded(predicates.get(node.name))(*values)


def _type_of(t, code: str) -> str:
    """The type of a term as generated code: a builtin's name for a number or boolean literal."""
    if isinstance(t, ast.Const) and type(t.value) in (bool, int, float):
        return type(t.value).__name__
    return f"type({code})"


def _is_text_constant(t) -> bool:
    return isinstance(t, ast.Symbol) or (isinstance(t, ast.Const) and type(t.value) is str)


def _defined(names: list[str], test: str) -> str:
    checks = [f"{n} is not U" for n in dict.fromkeys(names)]
    return "(" + " and ".join(checks + [test]) + ")"


def _show(node) -> str:
    text = to_text(node) if not isinstance(node, (ast.Var, ast.Remote)) else term_text(node)
    return text.replace("\n", "\\n")[:120]
