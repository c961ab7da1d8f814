"""All guards of a workflow → one shared subformula DAG → one slot program per lifeline.

Who evaluates what (export-set pruning, cpl.md "The monitor"):

* the owner of a guard evaluates the guard;
* lifeline B evaluates every θ that occurs anywhere as ``@B(θ)``, so that
  others can read it from B's view — and ships exactly those θ, plus the
  variables read as ``@B.x``;
* evaluating a formula at A needs its subformulas at A, except below
  ``@B(θ)`` with B ≠ A, which is read from A's view of B;
* only the lifelines some guard reads (``Program.carried``: a non-empty export
  set) have entries in the metadata — clock, view and variable view — so its
  size depends on the guards, not on how many lifelines take part.  Every
  lifeline keeps and relays those entries, read or not: a guard at C may
  learn of an A-event only through U.

Each lifeline's slots are numbered bottom-up (children before parents), and
its monitor — Algorithm 1 with Algorithm 2 inlined — is generated as
straight-line Python (see ``codegen``), which is what makes the per-event
step cheap.  Equal subformulas are one slot: AST values are hash-consed by
structural equality.
"""

from __future__ import annotations

import functools
from typing import Iterable

import attrs

from ..lang import ast, Exports, exports, DEFAULT, Registry, references
from .codegen import generate_monitor
from .metadata import Shape


@attrs.frozen
class OwnedFormula:
    """A primitive formula and the lifeline that evaluates it (None: every lifeline)."""

    owner: str | None
    formula: ast.Formula


@attrs.frozen
class SlotProgram:
    """What one lifeline computes at each of its events."""

    lifeline: str
    index: int
    slots: tuple[ast.Formula, ...]  # bottom-up; slot i is slots[i]
    slot_of: dict = attrs.field(eq=False)  # formula -> slot (At(self, θ) maps to θ's slot)
    exported_slots: tuple[int, ...]  # the slots of exports[self].formulas, in order
    source: str = attrs.field(eq=False, repr=False)  # the generated monitor, for reading
    factory: object = attrs.field(eq=False, repr=False)  # init store -> event steps


@attrs.frozen
class Program:
    """The compiled monitors of a workflow: shared by every lifeline's Monitor."""

    lifelines: tuple[str, ...]
    exports: tuple[Exports, ...]  # indexed like lifelines
    locals: tuple[SlotProgram, ...]  # indexed like lifelines
    guards: tuple[OwnedFormula, ...]
    # The lifelines whose entries travel, in metadata order: vc, views and varviews of
    # the monitors and of every Metadata are indexed by position here.
    carried: tuple[str, ...]

    def index(self, lifeline: str) -> int:
        return self._positions[lifeline]

    @functools.cached_property
    def _positions(self) -> dict[str, int]:
        """Lifeline → index: a monitor per lifeline looks itself up (``list.index`` there
        made a replay quadratic in lifelines)."""
        return {name: i for i, name in enumerate(self.lifelines)}

    @property
    def shape(self) -> Shape:
        """The shape of this program's metadata, for ``Metadata.decode``."""
        carried = [self.exports[self.index(b)] for b in self.carried]
        return Shape(tuple(len(e.formulas) for e in carried),
                     tuple(len(e.variables) for e in carried))

    def local(self, lifeline: str) -> SlotProgram:
        return self.locals[self.index(lifeline)]


def compile_guards(guards: Iterable[OwnedFormula], lifelines: Iterable[str], *, prune: bool = True,
                   predicates: Registry = DEFAULT) -> Program:
    """Compile primitive guards (see ``cpl.lang.desugar``) for the given lifelines.

    ``prune=False`` makes every lifeline evaluate and ship every subformula
    and variable, and carries every lifeline: the unpruned monitor the property
    tests compare against.
    """
    guards = tuple(guards)
    lifelines = tuple(lifelines)
    unknown = {g.owner for g in guards if g.owner is not None} - set(lifelines)
    if unknown:
        raise ValueError(f"guard owners {sorted(unknown)} are not lifelines {list(lifelines)}")
    # Equal subformulas of different guards become one object (the first one seen, so a
    # guard from ``cpl.check`` stays itself): slots are then found by identity.
    formulas = ast.shared_all(g.formula for g in guards)
    guards = tuple(OwnedFormula(g.owner, f) for g, f in zip(guards, formulas))
    read = {r.lifeline for f in formulas for r in references(f, where_read=False)
            if r.kind != "var"}
    if read - set(lifelines):
        raise ValueError(f"guards read lifelines {sorted(read - set(lifelines))} that are not "
                         f"lifelines {list(lifelines)}")
    if prune:
        table = exports(formulas)
        nothing = Exports((), ())
        shipped = tuple(table.get(b, nothing) for b in lifelines)
    else:
        everything = _every_subformula(formulas)
        names = tuple(dict.fromkeys(t.name for f in everything for t in ast.terms(f)
                                    if isinstance(t, (ast.Var, ast.Remote))))
        shipped = tuple(Exports(everything, names) for _ in lifelines)
    carried = tuple(b for b, e in zip(lifelines, shipped) if e.formulas or e.variables) \
        if prune else lifelines
    positions = {name: i for i, name in enumerate(lifelines)}
    owned: dict = {}
    for g in guards:
        owned.setdefault(g.owner, []).append(g.formula)
    every = list(_every_subformula(formulas)) if not prune else None
    # A lifeline no guard reads or owns computes only the guards everybody owns, ships
    # nothing and carries no entry: one monitor serves them all, so compiling costs the
    # guards' size plus a constant per lifeline, not a generated module per lifeline.
    plain = None
    locals_ = []
    for index, lifeline in enumerate(lifelines):
        if prune and lifeline not in read and lifeline not in owned:
            if plain is None:
                plain = _compile_local(None, None, owned.get(None, []), positions, shipped,
                                       carried, predicates)
            locals_.append(SlotProgram(lifeline, index, plain.slots, plain.slot_of,
                                       plain.exported_slots, plain.source, plain.factory))
            continue
        roots = every if every is not None else \
            owned.get(None, []) + owned.get(lifeline, []) + list(shipped[index].formulas)
        locals_.append(_compile_local(lifeline, index, roots, positions, shipped, carried,
                                      predicates))
    return Program(lifelines, shipped, tuple(locals_), guards, carried)


def _every_subformula(formulas) -> tuple:
    distinct: dict = {}
    stack = list(reversed(formulas))
    while stack:
        node = stack.pop()
        if node not in distinct:
            distinct[node] = None
            stack.extend(reversed(ast.children(node)))
    return tuple(distinct)


def _compile_local(lifeline, index, roots, positions, shipped, carried,
                   predicates) -> SlotProgram:
    """``lifeline`` and ``index`` None: the monitor shared by every lifeline no guard
    reads or owns (``generate_monitor``)."""
    slot_of: dict = {}
    slots: list = []

    def need(root) -> int:
        """Number ``root``'s slot after those of the subformulas it reads at this lifeline
        (iteratively: a primitive formula may be deeper than Python's recursion limit)."""
        stack = [(root, False)]
        while stack:
            node, ready = stack.pop()
            if node in slot_of:
                continue
            if isinstance(node, ast.At) and node.lifeline == lifeline:
                if node.body in slot_of:  # non-strict: @A(θ) at A is θ here
                    slot_of[node] = slot_of[node.body]
                else:
                    stack += [(node, True), (node.body, False)]
                continue
            below = () if isinstance(node, ast.At) else ast.children(node)
            if not ready and any(child not in slot_of for child in below):
                stack.append((node, True))
                stack.extend((child, False) for child in reversed(below))
                continue
            slot_of[node] = len(slots)
            slots.append(node)
        return slot_of[root]

    for root in roots:
        need(root)
    exported = tuple(need(f) for f in shipped[index].formulas) if index is not None else ()
    source, factory = generate_monitor(lifeline, index, slots, slot_of, roots, positions, shipped,
                                       exported, carried, predicates)
    return SlotProgram(lifeline, index, tuple(slots), slot_of, exported, source, factory)
