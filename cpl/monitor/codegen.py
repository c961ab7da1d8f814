"""Algorithms 1 and 2 of the CPL paper, generated as straight-line Python per lifeline.

For lifeline A, ``generate_monitor`` writes a factory ``monitor(init)`` that
holds A's state (Definition 4: ``vc``, ``views``, ``varviews``, ``store``) in
closure cells and returns four event steps, ``act``, ``send``, ``receive`` and
``choice``.  Each step is Algorithm 1 — a receive first copies B's entries
where the message is strictly ahead on B — followed by Algorithm 2 inlined:
every slot of A computed bottom-up, one line per slot, commented with its
subformula:

    atom α           read the store / the variable views; an unset term makes it false
    Y θ              y_θ, θ's value saved before this event (0 before A's first event)
    @B(θ), B ≠ A     bit k of views[b]         (views[b] is 0 while no B-event is visible)
    θ1 S θ2          θ2 or (θ1 and v_self), v_self still holding the previous value
    ! && ||          not / and / or on values already computed

Every slot is computed at every event (atoms and predicates included); the
connectives short-circuit only over values already at hand.  A's own view
(a bitmask of its exported slots) and variable view are updated as the paper
says.  ``vc``, ``views`` and ``varviews`` have one entry per lifeline in
``carried`` (b is B's position there): a lifeline no guard reads has none, and
one that is not carried does not count its own events.  ``SlotProgram.source``
is the generated text, for reading beside the
paper (``cpl check GUARD --monitor A`` prints it), and is registered with
``linecache`` so tracebacks and debuggers show its lines.  Per-event costs were
measured in bench/monitor*.py, which is why the own clock entry is a cell of
its own and the store is updated with ``|=``.

Names are data, never code: lifelines, variables, symbols, predicates and
values come from guards, traces and choreographies, so they reach the source
only as indices, as ``repr`` of plain str/int/bool/None/finite float values, or
as names bound in the namespace; comments quote them escaped (``_comment``).
"""

from __future__ import annotations

import itertools
import linecache
import math
import weakref

from ..lang import ast, term_text, to_text, COMPARE, Exports, UNSET
from ..errors import EvaluationError

_modules = itertools.count(1)  # one linecache file name per generated module
_NOTHING = Exports((), ())  # what a lifeline no guard reads ships


def _guarded(entry):
    def call(*args):
        try:
            return bool(entry.function(*args))
        except Exception as error:  # a user predicate failed: say which
            raise EvaluationError(f"predicate '{entry.name}' raised {type(error).__name__}: "
                                  f"{error}") from error
    return call


def generate_monitor(lifeline, index, slots, slot_of, roots, positions, shipped, exported,
                     carried, predicates):
    """Return (source, factory): ``factory(init)`` builds lifeline ``index``'s monitor state
    and returns its event steps ``(act, send, receive, choice, values, views, varviews, store)``.

    ``positions`` maps each lifeline to its index in ``shipped``.  ``lifeline`` and
    ``index`` None: the one monitor of every lifeline that no guard reads or owns (they
    all compute the same, so they share it; ``compile``).  Only what this lifeline reads
    is looked up, so the cost is in its slots and ``carried``, not in all lifelines.
    """
    at = {name: p for p, name in enumerate(carried)}  # lifeline -> its entries' position
    me = at.get(lifeline)  # None: nobody reads this lifeline, it ships no entry of its own
    Metadata = _metadata_class()
    namespace = {"U": UNSET, "new": tuple.__new__, "Metadata": Metadata,
                 "NOTHING": tuple.__new__(Metadata, ((), (), ()))}
    constants: dict = {}  # (type, value) -> name bound in namespace, for values repr cannot carry

    def constant(value) -> str:
        """Python expression of a constant: its repr when that is a plain literal."""
        if _plain_literal(value):
            return repr(value)
        key = (type(value), value) if _hashable(value) else (type(value), id(value))
        if key not in constants:
            constants[key] = f"k{len(constants)}"
            namespace[constants[key]] = value
        return constants[key]

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
            return constant(t.value), False
        if isinstance(t, ast.Symbol):
            return constant(t.name), False
        if t not in reads:
            name = f"t{len(reads)}"
            reads[t] = name
            if isinstance(t, ast.Remote) and t.lifeline != lifeline:
                k = shipped[positions[t.lifeline]].variables.index(t.name)
                head.append(f"{name} = varviews[{at[t.lifeline]}][{k}]  # "
                            f"{_comment(term_text(t))}")
            else:
                head.append(f"{name} = store.get({constant(t.name)}, U)  # "
                            f"{_comment(term_text(t))}")
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
            if node.op not in _OP_NAMES:
                raise ValueError(f"not a comparison operator: {node.op!r}")
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
            elif not text_constant:  # <, <=, >, >=: two ints compare as Python compares
                # them (values._ordered), without the call: stream_loop.py's guard at every event
                kinds = {_type_of(node.left, left), _type_of(node.right, right)} - {"int"}
                test = f"{function}({left}, {right})"
                general = _defined([left] * l_unset + [right] * r_unset, test)
                if not kinds or kinds & {"bool", "float"}:  # a constant that is not an int
                    return general
                both = " and ".join(f"{kind} is int" for kind in sorted(kinds))
                return f"({left} {node.op} {right} if {both} else {general})"
            else:
                test = f"{function}({left}, {right})"
            return _defined([left] * l_unset + [right] * r_unset, test)
        if isinstance(node, ast.Pred):
            args = [term(a) for a in node.args]
            function = predicate_names.setdefault(node.name, f"pred{len(predicate_names)}")
            namespace[function] = _guarded(_predicate(predicates, node.name))
            call = f"{function}({', '.join(a for a, _ in args)})"
            return _defined([a for a, unset in args if unset], call)
        raise TypeError(f"not an atom: {node!r}")

    predicate_names: dict = {}  # predicate name -> its name in the namespace

    def old(i) -> str:
        return f"y{i}" if i in olds else f"v{i}"

    # bit of each shipped formula, by dict (hash, then identity) rather than list.index;
    # built for the lifelines this one reads only
    exported_at: dict = {}

    def bit(node) -> int:
        if node.lifeline not in exported_at:
            formulas = shipped[positions[node.lifeline]].formulas
            exported_at[node.lifeline] = {f: k for k, f in enumerate(formulas)}
        return exported_at[node.lifeline][node.body]
    for i, node in enumerate(slots):
        kind = type(node)
        if kind is ast.At:  # only B != A gets a slot of its own
            k = bit(node)
            b = at[node.lifeline]
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
        body.append(f"v{i} = {code}  # {_show(node, slot_of, positions)}")

    own = shipped[index] if index is not None else _NOTHING
    evaluate = [f"y{i} = v{i}" for i in sorted(olds)] + head + body
    if exported:  # ``<< 0`` too: it turns a bool slot into the int a bitmask must be
        evaluate.append(f"views[{me}] = " + " | ".join(
            f"v{s} << {k}" for k, s in enumerate(exported)))
    own_vars = (f"varviews[{me}] = "
                f"({''.join(f'store.get({constant(x)}, U), ' for x in own.variables)})")
    # ``store |= updates`` is dict.update without the method lookup and call: a third of
    # the cost of a local step (bench/monitor_local.py).  It rebinds ``store``, hence
    # the ``nonlocal store`` of act and receive.
    store_update = ["if updates:", "    store |= updates"] + (["    " + own_vars] if own.variables else [])
    merge = []  # only carried lifelines have entries to compare and copy
    for b, name in enumerate(carried):
        if b == me:
            continue
        merge += [f"if mvc[{b}] > vc[{b}]:  # ahead on {_comment(name)}: copy its entries",
                  f"    vc[{b}] = mvc[{b}]"]
        exports = shipped[positions[name]]
        if exports.formulas or exports.variables:
            merge += [f"    views[{b}] = mviews[{b}]", f"    varviews[{b}] = mvars[{b}]"]
    # A's own clock entry lives in the cell ``own`` (a cell add is cheaper than a list
    # item add, and every event pays it); ``send`` writes it back to vc.
    # A lifeline that is not carried has no entry: it counts nothing.
    count = ["own += 1"] if me is not None else []
    write_own = [f"vc[{me}] = own"] if me is not None else []

    def function(signature, doc, steps, result=None, updates=False):
        """One event step; it rebinds the kept slots, and ``store`` if it applies updates."""
        rebound = ["store"] * updates + ["own"] * (me is not None) + [f"v{i}" for i in sorted(kept)]
        declare = [f"nonlocal {', '.join(rebound)}"] if rebound else []
        lines = [f"    def {signature}:", f'        """{doc}"""']
        lines += ["        " + line for line in declare + steps]
        if result:
            lines.append(f"        return {result}")
        return lines

    initial_varviews = ", ".join(f"({'U, ' * len(shipped[positions[b]].variables)})"
                                 for b in carried)
    whose = f"lifeline {index}" if index is not None else "every lifeline no guard reads or owns"
    lines = [
        "def monitor(init):",
        f'    """The monitor of {whose}: Definition 4 state, Algorithm 1 steps,',
        f'    Algorithm 2 inlined ({len(slots)} slots, bottom-up, old values in v*/y*)."""',
        f"    vc = [0] * {len(carried)}  # entries of carried lifelines only",
        *([f"    own = 0  # the own entry of vc ({_comment(lifeline)}); send writes it to "
           f"vc[{me}]"] if me is not None else
          [f"    # no own entry{_named(lifeline)}: not carried, no guard reads it"]),
        f"    views = [0] * {len(carried)}",
        f"    varviews = [{initial_varviews}]",
        "    store = dict(init)",
        *(["    " + own_vars] if own.variables else []),
        *([f"    {' = '.join(f'v{i}' for i in sorted(kept))} = 0"] if kept else []),
        *function("act(updates=None)", "A local action.", store_update + count + evaluate,
                  updates=True),
        *function("send()", "A send: count, evaluate, return the metadata to ship.",
                  count + evaluate + write_own,
                  "new(Metadata, (tuple(vc), tuple(views), tuple(varviews)))" if carried
                  else "NOTHING"),  # no entry at all: the same empty (immutable) metadata
        *function("receive(message, updates=None)", "A receive: merge views where the message is ahead.",
                  ["mvc, mviews, mvars = message"] + merge + store_update + count + evaluate,
                  updates=True),
        *function("choice()", "A decision event: the store is unchanged.", count + evaluate),
        "    def values():",
        f"        return {{{', '.join(f'{i}: v{i}' for i in sorted(kept))}}}",
        "    return act, send, receive, choice, values, views, varviews, store",
    ]
    source = "\n".join(lines) + "\n"
    # Only indices in the file name: the name of the lifeline is anybody's text.
    filename = f"<cpl monitor {next(_modules)}: {whose}>"
    exec(compile(source, filename, "exec"), namespace)
    factory = namespace["monitor"]
    _register_source(filename, source, factory)
    return source, factory


def slot_cell(values, slot: int):
    """The closure cell that holds slot ``slot`` (one ``values()`` returns) of the monitor
    whose ``values`` this is: its ``cell_contents`` is the slot's value at the latest event.
    ``cpl eval`` reads one slot per event, and ``values()`` builds a dict of every kept
    slot each call (bench/eval_trace.py)."""
    return values.__closure__[values.__code__.co_freevars.index(f"v{slot}")]


def _register_source(filename: str, source: str, owner) -> None:
    """Let tracebacks, ``inspect`` and pdb show the generated lines, for as long as
    ``owner`` (the factory) lives: a process that compiles many monitors keeps no
    source it no longer runs."""
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    weakref.finalize(owner, linecache.cache.pop, filename, None)


def _metadata_class():
    from .metadata import Metadata  # imported late: metadata is not needed to import codegen
    return Metadata


def _predicate(predicates, name):
    entry = predicates.get(name)
    if entry is None:
        raise ValueError(f"unknown predicate {name!r}")
    return entry


def _plain_literal(value) -> bool:
    """Values whose ``repr`` is a Python literal of the same value (and nothing else)."""
    kind = type(value)
    return kind in (str, int, bool, type(None)) or (kind is float and math.isfinite(value))


def _hashable(value) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


_OP_NAMES = {"==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge"}


def _constant(t):
    return t.name if isinstance(t, ast.Symbol) else t.value


def _constant_atom(node, predicates) -> bool:
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
    return (isinstance(t, ast.Symbol) and type(t.name) is str) or \
        (isinstance(t, ast.Const) and type(t.value) is str)


def _defined(names: list[str], test: str) -> str:
    checks = [f"{n} is not U" for n in dict.fromkeys(names)]
    return "(" + " and ".join(checks + [test]) + ")"


_COMMENT_LENGTH = 100


def _comment(text) -> str:
    """User text made safe for a ``#`` comment: every non-printable or non-ASCII
    character escaped (nothing can end the line), and the length capped."""
    text = str(text).encode("unicode_escape").decode("ascii")  # \n, \x7f, \u2028, ...
    return text if len(text) <= _COMMENT_LENGTH else text[:_COMMENT_LENGTH - 3] + "..."


_SHOWN = {ast.Since: "v{} S v{}", ast.And: "v{} && v{}", ast.Or: "v{} || v{}",
          ast.Not: "!v{}", ast.Prev: "Y v{}"}


def _named(lifeline) -> str:
    return f" ({_comment(lifeline)})" if lifeline is not None else ""


def _show(node, slot_of, positions) -> str:
    """A slot's comment: its operator over child slots (never the whole subtree, which
    nested ``P`` makes exponential), or an atom's text, escaped and capped."""
    kind = type(node)
    if kind in _SHOWN:
        return _SHOWN[kind].format(*(slot_of[child] for child in ast.children(node)))
    if kind is ast.At:
        return f"@{_comment(node.lifeline)}(...) as lifeline {positions[node.lifeline]} shows it"
    try:
        return _comment(to_text(node))
    except (TypeError, ValueError):  # a value with no CPL literal (NaN, say): still a comment
        return _comment(repr(node))
