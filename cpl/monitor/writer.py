"""The text of one lifeline's monitor, written slot by slot, then step by step.

:class:`MonitorWriter` holds what ``generate_monitor`` used to keep in nested
closures: the namespace the source runs in, the constants and terms already
named, and the lines of the evaluation.  Each kind of slot (an atom, ``Y``,
``S``, ``@B``, a connective) and each part of an event step (the store update,
the merge of a message, the own clock, the own view) is one method, so the
generated text can be read beside the method that writes it.  The text itself
is described in ``codegen``.

Names are data, never code: every name from input reaches the source through
:meth:`MonitorWriter.constant` (a ``repr`` of a plain literal, or a name bound
in the namespace) or through ``comment``, escaped.
"""

from __future__ import annotations

from ..errors import EvaluationError
from ..lang import COMPARE, UNSET, Exports, ast, term_text
from .quoting import comment, hashable, named, plain_literal, slot_comment

_NOTHING = Exports((), ())  # what a lifeline no guard reads ships
_OP_NAMES = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


class MonitorWriter:
    """Accumulates the source of the monitor of lifeline ``index`` (None: the one monitor
    shared by every lifeline no guard reads or owns) and the namespace it runs in.

    Call :meth:`source` once; ``namespace`` is then complete for ``exec``.
    """

    def __init__(self, lifeline, index, slots, slot_of, roots, positions, shipped, exported,
                 carried, predicates):
        self.lifeline, self.index, self.slots, self.slot_of = lifeline, index, slots, slot_of
        self.positions, self.shipped, self.exported = positions, shipped, exported
        self.carried, self.predicates = carried, predicates
        self.at = {name: p for p, name in enumerate(carried)}  # lifeline -> entries' position
        self.me = self.at.get(lifeline)  # None: nobody reads it, it ships no entry of its own
        self.own = shipped[index] if index is not None else _NOTHING
        metadata = _metadata_class()
        self.namespace = {"U": UNSET, "new": tuple.__new__, "Metadata": metadata,
                          "NOTHING": tuple.__new__(metadata, ((), (), ()))}
        self.constants: dict = {}  # (type, value) -> name bound in namespace
        self.reads: dict = {}  # term -> local name
        self.predicate_names: dict = {}  # predicate name -> its name in the namespace
        self.exported_at: dict = {}  # lifeline -> {shipped formula: its bit}
        self.read_lines: list[str] = []  # one per term, before the slots
        self.slot_lines: list[str] = []  # one per slot, bottom-up
        # Slots whose value outlives the event: read as old (Y θ, θ1 S θ2) or from outside.
        self.olds = {slot_of[n.body] for n in slots if type(n) is ast.Prev}
        self.kept = {slot_of[r] for r in roots} | self.olds \
            | {i for i, n in enumerate(slots) if type(n) is ast.Since}

    @property
    def whose(self) -> str:
        """Which monitor this is, by index only: the lifeline's name is anybody's text."""
        if self.index is None:
            return "every lifeline no guard reads or owns"
        return f"lifeline {self.index}"

    def source(self) -> str:
        """The module text: the factory ``monitor(init)``, its state and its four steps.
        The slots are written first: the constants they name come first in the namespace."""
        self._write_slots()
        lines = ["def monitor(init):", *self._state(), *self._steps(self._evaluate()),
                 *self._values(),
                 "    return act, send, receive, choice, values, views, varviews, store"]
        return "\n".join(lines) + "\n"

    def _write_slots(self) -> None:
        """One line per slot, bottom-up, commented with its operator or atom."""
        for i, node in enumerate(self.slots):
            code = _SLOT_WRITERS.get(type(node), MonitorWriter._atom)(self, i, node)
            self.slot_lines.append(f"v{i} = {code}  # "
                                   f"{slot_comment(node, self.slot_of, self.positions)}")

    # ---------------------------------------------------------------- names from input

    def constant(self, value) -> str:
        """Python expression of a constant: its repr when that is a plain literal, else
        a name bound in the namespace (so no value from input is ever parsed as code)."""
        if plain_literal(value):
            return repr(value)
        key = (type(value), value) if hashable(value) else (type(value), id(value))
        if key not in self.constants:
            self.constants[key] = f"k{len(self.constants)}"
            self.namespace[self.constants[key]] = value
        return self.constants[key]

    def _term(self, t) -> tuple[str, bool]:
        """Python expression of a term, and whether it may be unset.  A variable is read
        once per event, into a local, from the store or from a variable view."""
        if isinstance(t, ast.Const):
            return self.constant(t.value), False
        if isinstance(t, ast.Symbol):
            return self.constant(t.name), False
        if t not in self.reads:
            name = self.reads[t] = f"t{len(self.reads)}"
            if isinstance(t, ast.Remote) and t.lifeline != self.lifeline:
                k = self.shipped[self.positions[t.lifeline]].variables.index(t.name)
                read = f"varviews[{self.at[t.lifeline]}][{k}]"
            else:
                read = f"store.get({self.constant(t.name)}, U)"
            self.read_lines.append(f"{name} = {read}  # {comment(term_text(t))}")
        return self.reads[t], True

    # ---------------------------------------------------------------- one method per slot

    def _view_bit(self, i, node) -> str:
        """``@B(θ)``, B ≠ A: bit k of A's view of B (0 while no B-event is visible); only
        the lifelines read are looked up, so the cost is not in all lifelines."""
        if node.lifeline not in self.exported_at:  # by hash, not list.index
            formulas = self.shipped[self.positions[node.lifeline]].formulas
            self.exported_at[node.lifeline] = {f: k for k, f in enumerate(formulas)}
        k = self.exported_at[node.lifeline][node.body]
        b = self.at[node.lifeline]
        return f"views[{b}] >> {k} & 1" if k else f"views[{b}] & 1"

    def _previous(self, i, node) -> str:
        """``Y θ``: θ's value saved before this event (0 before the first)."""
        return self._old(self.slot_of[node.body])

    def _since(self, i, node) -> str:
        """``θ1 S θ2``: v{i} still holds the previous value when this line runs."""
        return f"v{self.slot_of[node.right]} or (v{self.slot_of[node.left]} and v{i})"

    def _not(self, i, node) -> str:
        """``!θ``, on a value already computed."""
        return f"not v{self.slot_of[node.body]}"

    def _and(self, i, node) -> str:
        """``θ1 && θ2``: short-circuits only over values already at hand."""
        return f"v{self.slot_of[node.left]} and v{self.slot_of[node.right]}"

    def _or(self, i, node) -> str:
        """``θ1 || θ2``: short-circuits only over values already at hand."""
        return f"v{self.slot_of[node.left]} or v{self.slot_of[node.right]}"

    def _atom(self, i, node) -> str:
        """An atom reads the store or the variable views; an unset term makes it false.
        One whose terms are all constants is decided now."""
        if isinstance(node, ast.Bool):
            return "1" if node.value else "0"
        if all(isinstance(t, (ast.Const, ast.Symbol)) for t in ast.terms(node)):
            return "1" if _constant_atom(node, self.predicates) else "0"
        if isinstance(node, ast.Truth):
            return f"({self._term(node.term)[0]} is True)"
        if isinstance(node, ast.Compare):
            return self._compare(node)
        if isinstance(node, ast.Pred):
            return self._predicate_call(node)
        raise TypeError(f"not an atom: {node!r}")

    def _compare(self, node) -> str:
        """A comparison, with the general rule (``COMPARE``) only where Python's own
        operator could differ from CPL's: the cheaper forms were measured in bench/."""
        if node.op not in _OP_NAMES:
            raise ValueError(f"not a comparison operator: {node.op!r}")
        (left, l_unset), (right, r_unset) = self._term(node.left), self._term(node.right)
        unset = [left] * l_unset + [right] * r_unset
        text_constant = _is_text_constant(node.left) or _is_text_constant(node.right)
        function = f"cmp_{_OP_NAMES[node.op]}"
        self.namespace[function] = COMPARE[node.op]
        general = f"{function}({left}, {right})"
        if text_constant and node.op == "==":
            # Python's str equality is CPL's here, and UNSET equals no string,
            # so this one needs no definedness test (a cheaper atom: see bench/).
            return f"({left} == {right})"
        if text_constant and node.op == "!=":
            return _defined(unset, f"{left} != {right}")
        if node.op in ("==", "!="):
            # Values of one type compare as Python compares them (values.equal); only
            # mixed types (int vs float, bool vs int, …) need the full rule.
            return _defined(unset, f"({left} {node.op} {right} if {_type_of(node.left, left)} "
                                   f"is {_type_of(node.right, right)} else {general})")
        if text_constant:
            return _defined(unset, general)
        # <, <=, >, >=: two ints compare as Python compares them (values._ordered), without
        # the call: stream_loop.py's guard at every event
        kinds = {_type_of(node.left, left), _type_of(node.right, right)} - {"int"}
        if not kinds or kinds & {"bool", "float"}:  # a constant that is not an int
            return _defined(unset, general)
        both = " and ".join(f"{kind} is int" for kind in sorted(kinds))
        return f"({left} {node.op} {right} if {both} else {_defined(unset, general)})"

    def _predicate_call(self, node) -> str:
        """A user predicate, called through ``_guarded`` so its failure names it."""
        args = [self._term(a) for a in node.args]
        function = self.predicate_names.setdefault(node.name,
                                                   f"pred{len(self.predicate_names)}")
        self.namespace[function] = _guarded(_predicate(self.predicates, node.name))
        call = f"{function}({', '.join(a for a, _ in args)})"
        return _defined([a for a, unset in args if unset], call)

    def _old(self, slot) -> str:
        """A slot's value before this event: saved in y{slot} when it is read as old."""
        return f"y{slot}" if slot in self.olds else f"v{slot}"

    # ---------------------------------------------------------------- parts of a step

    def _evaluate(self) -> list[str]:
        """Algorithm 2 inlined: save old values, read terms, every slot bottom-up, then
        A's own view (``<< 0`` too: it turns a bool slot into the int a bitmask must be)."""
        lines = [f"y{i} = v{i}" for i in sorted(self.olds)] + self.read_lines + self.slot_lines
        if self.exported:
            lines.append(f"views[{self.me}] = " + " | ".join(
                f"v{s} << {k}" for k, s in enumerate(self.exported)))
        return lines

    def _own_variables(self) -> list[str]:
        """A's variable view: the variables it ships, read from its store (none: no line)."""
        if not self.own.variables:
            return []
        reads = "".join(f"store.get({self.constant(x)}, U), " for x in self.own.variables)
        return [f"varviews[{self.me}] = ({reads})"]

    def _store_update(self, own_variables) -> list[str]:
        """``store |= updates`` is dict.update without the method lookup and call: a third
        of a local step's cost (bench/monitor_local.py).  It rebinds ``store``."""
        return ["if updates:", "    store |= updates"] + ["    " + x for x in own_variables]

    def _merge(self) -> list[str]:
        """Algorithm 1's receive: copy B's entries where the message is strictly ahead on
        B; only carried lifelines have entries to compare and copy."""
        lines = []
        for b, name in enumerate(self.carried):
            if b == self.me:
                continue
            lines += [f"if mvc[{b}] > vc[{b}]:  # ahead on {comment(name)}: copy its entries",
                      f"    vc[{b}] = mvc[{b}]"]
            exports = self.shipped[self.positions[name]]
            if exports.formulas or exports.variables:
                lines += [f"    views[{b}] = mviews[{b}]", f"    varviews[{b}] = mvars[{b}]"]
        return lines

    def _count(self) -> list[str]:
        """A's own clock entry lives in the cell ``own`` (a cell add is cheaper than a list
        item add, and every event pays it); a lifeline not carried counts nothing."""
        return ["own += 1"] if self.me is not None else []

    def _step(self, signature, doc, steps, result=None, updates=False) -> list[str]:
        """One event step; it rebinds the kept slots, and ``store`` if it applies updates."""
        rebound = ["store"] * updates + ["own"] * (self.me is not None) \
            + [f"v{i}" for i in sorted(self.kept)]
        declare = [f"nonlocal {', '.join(rebound)}"] if rebound else []
        lines = [f"    def {signature}:", f'        """{doc}"""']
        lines += ["        " + line for line in declare + steps]
        if result:
            lines.append(f"        return {result}")
        return lines

    # ---------------------------------------------------------------- the factory

    def _state(self) -> list[str]:
        """Definition 4's state in closure cells: vc, views and varviews with one entry per
        carried lifeline, the store, A's own clock cell, and the kept slots."""
        carried, me, kept = self.carried, self.me, self.kept
        initial_varviews = ", ".join(f"({'U, ' * len(self.shipped[self.positions[b]].variables)})"
                                     for b in carried)
        if me is not None:
            own = [(f"    own = 0  # the own entry of vc ({comment(self.lifeline)}); "
                    f"send writes it to vc[{me}]")]
        else:
            own = [f"    # no own entry{named(self.lifeline)}: not carried, no guard reads it"]
        return [f'    """The monitor of {self.whose}: Definition 4 state, Algorithm 1 steps,',
                (f'    Algorithm 2 inlined ({len(self.slots)} slots, bottom-up, old values in '
                 f'v*/y*)."""'),
                f"    vc = [0] * {len(carried)}  # entries of carried lifelines only", *own,
                f"    views = [0] * {len(carried)}",
                f"    varviews = [{initial_varviews}]",
                "    store = dict(init)",
                *["    " + x for x in self._own_variables()],
                *([f"    {' = '.join(f'v{i}' for i in sorted(kept))} = 0"] if kept else [])]

    def _steps(self, evaluate) -> list[str]:
        """act, send, receive and choice: Algorithm 1's event steps around ``evaluate``.
        ``send`` writes the own clock cell back to vc and ships the metadata; a monitor
        that carries nothing ships the one shared empty metadata."""
        count, own_variables = self._count(), self._own_variables()
        write_own = [f"vc[{self.me}] = own"] if self.me is not None else []
        shipped = "new(Metadata, (tuple(vc), tuple(views), tuple(varviews)))" if self.carried \
            else "NOTHING"
        return [*self._step("act(updates=None)", "A local action.",
                            self._store_update(own_variables) + count + evaluate, updates=True),
                *self._step("send()", "A send: count, evaluate, return the metadata to ship.",
                            count + evaluate + write_own, shipped),
                *self._step("receive(message, updates=None)",
                            "A receive: merge views where the message is ahead.",
                            ["mvc, mviews, mvars = message"] + self._merge()
                            + self._store_update(own_variables) + count + evaluate,
                            updates=True),
                *self._step("choice()", "A decision event: the store is unchanged.",
                            count + evaluate)]

    def _values(self) -> list[str]:
        """``values()``: every kept slot by number, for whoever reads more than one."""
        return ["    def values():",
                f"        return {{{', '.join(f'{i}: v{i}' for i in sorted(self.kept))}}}"]


_SLOT_WRITERS = {ast.At: MonitorWriter._view_bit, ast.Prev: MonitorWriter._previous,
                 ast.Since: MonitorWriter._since, ast.Not: MonitorWriter._not,
                 ast.And: MonitorWriter._and, ast.Or: MonitorWriter._or}  # else: an atom


def _guarded(entry):
    """A user predicate as the monitor calls it: its result a bool, its failure named."""
    def call(*args):
        try:
            return bool(entry.function(*args))
        except Exception as error:  # a user predicate failed: say which
            raise EvaluationError(f"predicate '{entry.name}' raised {type(error).__name__}: "
                                  f"{error}") from error
    return call


def _metadata_class():
    from .metadata import Metadata  # imported late: metadata is not needed to import codegen
    return Metadata


def _predicate(predicates, name):
    """The registry's entry for predicate ``name``; an unknown one fails compiling."""
    entry = predicates.get(name)
    if entry is None:
        raise ValueError(f"unknown predicate {name!r}")
    return entry


def _constant(t):
    """The value of a constant term (a symbol's value is its name)."""
    return t.name if isinstance(t, ast.Symbol) else t.value


def _constant_atom(node, predicates) -> bool:
    """The value of an atom that reads nothing, decided once while compiling."""
    values = [_constant(t) for t in ast.terms(node)]
    if isinstance(node, ast.Truth):
        return values[0] is True
    if isinstance(node, ast.Compare):
        return COMPARE[node.op](*values)
    return _guarded(_predicate(predicates, node.name))(*values)


def _type_of(t, code: str) -> str:
    """The type of a term as generated code: a builtin's name for a number or boolean literal."""
    if isinstance(t, ast.Const) and type(t.value) in (bool, int, float):
        return type(t.value).__name__
    return f"type({code})"


def _is_text_constant(t) -> bool:
    """A string constant: comparing with it needs no numeric rule of CPL's."""
    return (isinstance(t, ast.Symbol) and type(t.name) is str) or \
        (isinstance(t, ast.Const) and type(t.value) is str)


def _defined(names: list[str], test: str) -> str:
    """``test`` guarded so that an unset term makes the atom false (each name checked once)."""
    checks = [f"{n} is not U" for n in dict.fromkeys(names)]
    return "(" + " and ".join(checks + [test]) + ")"
