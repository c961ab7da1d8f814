"""The guard library: CPL text for each guard of the anomaly catalog (anomalies.md §3, §5.1).

Every function returns a ``Guard``: the canonical text, the role of the lifeline
that evaluates it, its *pattern* and a note on its limits.  The patterns
(anomalies.md §2.3):

* ``OWNER`` — P-owner, exact: every event that can falsify the anomaly is a
  local event of the owner, whose local order is the log;
* ``STABLE`` — P-stable, exact: positive evidence that cannot be revoked
  (irrevocable flags, monotone counters), so an in-transit message cannot fool it;
* ``VISIBLE`` — P-visible: "no *visible* violation".  A rejection is always
  justified, but a concurrent, invisible violation passes: an early-abort hint on
  top of an owner guard, **not prevention**;
* ``DIAGNOSTIC`` — not a guard to decide by: tells an owner whether accepting now
  would be the catalog's anomaly.

The guards read the flattened standard variables of anomalies.md §2.3 (one per
cell, tool, agent or operation: ``ver_c1``, ``has_t1``, ``rd_a1_c1``…), so names
are data that become parts of variable names: cells, tools, agents and
operations must be made of letters, digits and ``_``, lifelines must be
identifiers, and a family whose names would collide is refused (``ValueError``).
Names also appear as string constants (``req_agent == "a1"``): those are printed
by ``cpl.lang.printer.literal_text``, never pasted.  Declare every variable a family
mentions (choreography declarations or a trace's ``vars``): an undeclared one
silently becomes a symbol, a constant string.
"""

from __future__ import annotations

import re

import attrs

from ..lang import ast, check, KEYWORDS, literal_text

OWNER = "P-owner exact"
STABLE = "P-stable exact"
VISIBLE = "P-visible: early-abort hint, NOT prevention"
DIAGNOSTIC = "diagnostic (catalog predicate now), not a guard"
PATTERNS = (OWNER, STABLE, VISIBLE, DIAGNOSTIC)

MAX_PART = 100  # characters of one cell, tool, agent or operation name
MAX_FAMILY = 1000  # members of one family (cells, tools, agents, operations)
_PART = re.compile(r"[A-Za-z0-9_]+")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@attrs.frozen
class Guard:
    """A guard's canonical text, who evaluates it, its pattern and its limits."""
    text: str
    owner: str
    pattern: str
    note: str

    def __str__(self) -> str:
        return self.text

    def variables(self) -> tuple[str, ...]:
        """Every variable name the guard reads (its own and ``@B.x``), sorted: what a
        choreography or a trace must declare so that none becomes a symbol."""
        names = {term.name for node in ast.walk(check(self.text).formula)
                 for term in ast.terms(node) if isinstance(term, (ast.Var, ast.Symbol, ast.Remote))}
        return tuple(sorted(names))


# ------------------------------------------------------------ parameters

def _part(name, what: str) -> str:
    if not isinstance(name, str):
        raise ValueError(f"{what} must be a string, not {type(name).__name__}")
    if not (len(name) <= MAX_PART and _PART.fullmatch(name)):
        raise ValueError(f"{what} {name[:MAX_PART]!r} must be 1 to {MAX_PART} letters, digits "
                         f"or '_' (it becomes part of variable names)")
    return name


def _lifeline(name, what: str = "lifeline") -> str:
    if not (isinstance(name, str) and len(name) <= 200 and _IDENTIFIER.fullmatch(name)
            and name not in KEYWORDS):
        raise ValueError(f"{what} {str(name)[:200]!r} must be an identifier that is not a "
                         f"CPL keyword")
    return name


def _family(names, what: str) -> tuple[str, ...]:
    if isinstance(names, str) or not hasattr(names, "__iter__"):
        raise ValueError(f"{what}s must be a list of names, not {type(names).__name__}")
    names = tuple(names)
    if not names or len(names) > MAX_FAMILY:
        raise ValueError(f"{what}s: give 1 to {MAX_FAMILY} names ({len(names)} given)")
    parts = tuple(_part(name, what) for name in names)
    if len(set(parts)) != len(parts):
        raise ValueError(f"{what}s list a name twice")
    return parts


def _index(value, what: str) -> int:
    if type(value) is not int or not 1 <= value <= 10**6:
        raise ValueError(f"{what} must be an integer from 1 to 10^6, not {value!r}")
    return value


def _distinct(variables, what: str) -> None:
    """Flattened names like rd_<agent>_<cell> can collide (a_b + c, a + b_c)."""
    seen: dict[str, object] = {}
    for name, origin in variables:
        if name in seen and seen[name] != origin:
            raise ValueError(f"{what}: {origin} and {seen[name]} would both use the variable "
                             f"{name!r}; rename one")
        seen[name] = origin


def _q(value) -> str:
    return literal_text(value)


def _all(parts, top: bool = False) -> str:
    """Conjunction; a disjunct-bearing part is parenthesised unless it stands alone at the top."""
    parts = list(parts)
    if top and len(parts) == 1:
        return parts[0]
    return " && ".join(f"({part})" if "||" in part else part for part in parts)


def _any(parts) -> str:
    return " || ".join(parts)  # parts never hold a top-level '->'


def _guard(text: str, owner: str, pattern: str, note: str) -> Guard:
    """The text as written (parenthesised as the spec writes it), once it checks."""
    check(text)
    return Guard(text, owner, pattern, note)


# -------------------------------------------------------- A1 stale generation

def g1_store(cells) -> Guard:
    """G1_store: client-declared read versions (SSI / OCC / ETag)."""
    cells = _family(cells, "cell")
    text = _all((f"!(req_reads_{c} == true) || req_rver_{c} == ver_{c}" for c in cells), top=True)
    return _guard(text, "store", OWNER,
                  "exact for 'no intervening write' when every write to these cells and every "
                  "commit, read-only ones included, is decided on this one Store lifeline; "
                  "conservative for Def. 1's value conjunct (rejects a same-value rewrite); "
                  "needs the request to assign every req_* field")


def g1_dlog(agents, cells) -> Guard:
    """G1_dlog: the S-Bus DeliveryLog — the server's own record of what it served."""
    agents, cells = _family(agents, "agent"), _family(cells, "cell")
    _distinct([(f"dl{kind}_{a}_{c}", (a, c)) for a in agents for c in cells for kind in "rv"],
              "g1_dlog")
    text = _any(f"req_agent == {_q(a)} && "
                + _all(f"!(dlr_{a}_{c} == true) || dlv_{a}_{c} == ver_{c}" for c in cells)
                for a in agents)
    return _guard(text, "store", OWNER,
                  "as G1_store without agent cooperation; a family over agents; sees only reads "
                  "served by this Store (a value that reached the agent another way is invisible)")


def _stale(agent: str, cell: str) -> str:
    return (f"Y(!(op == \"serve\" && op_agent == {_q(agent)}) S (op == \"apply\" && "
            f"w_{cell} == true && writer != {_q(agent)} && val_{cell} != rd_{agent}_{cell}))")


def g1_val(agents, cells) -> Guard:
    """G1_val: value-exact Definition 1 for the committing operation (ABA-correct)."""
    agents, cells = _family(agents, "agent"), _family(cells, "cell")
    _distinct([(f"rd_{a}_{c}", (a, c)) for a in agents for c in cells], "g1_val")
    text = _any(f"req_agent == {_q(a)} && "
                + _all(f"!(req_reads_{c} == true && {_stale(a, c)})" for c in cells)
                for a in agents)
    return _guard(text, "store", OWNER,
                  "exactly Def. 1: any cross-agent apply since the agent's last serve that "
                  "wrote a value other than the one served (rd_<a>_<c>, copied at the serve); "
                  "a family over agents; the serve must serve the whole read set in one event")


def g1_lock_grant(cell) -> Guard:
    """G1_lock, the Store's grant: the lock on ``cell`` is free."""
    cell = _part(cell, "cell")
    return _guard(f"!(holder_{cell} != null)", "store", OWNER,
                  "true while holder_<c> is unset or null; the holder alone releases")


def g1_lock(cell, agent, store: str = "Store") -> Guard:
    """G1_lock, the agent's check before reading and before committing: it holds the lock."""
    cell, agent, store = _part(cell, "cell"), _part(agent, "agent"), _lifeline(store, "store")
    return _guard(f"@{store}.holder_{cell} == {_q(agent)}", "agent", STABLE,
                  "exact only if the lock is taken before the read and is irrevocable (only "
                  "the holder releases); with lease expiry it is not stable: revalidate at "
                  "the owner")


def g1_vis(cells, store: str = "Store") -> Guard:
    """G1_vis: no *visible* newer version of a cell the agent read."""
    cells, store = _family(cells, "cell"), _lifeline(store, "store")
    text = _all((f"!(reads_{c} == true) || @{store}.ver_{c} == rver_{c}" for c in cells), top=True)
    return _guard(text, "agent", VISIBLE,
                  "true while the newer write is in transit or never sent to the agent (the TLC "
                  "interleaving); false only once a Store event after the write is visible "
                  "(an invalidation push): saves a doomed commit, prevents nothing")


# -------------------------------------------------------- A2 phantom tool

def g2_reg(tools) -> Guard:
    """G2_reg: the Registry accepts a dispatch only of a present tool with the pinned signature."""
    tools = _family(tools, "tool")
    text = _any(f"req_tool == {_q(t)} && has_{t} == true && sig_{t} == req_sig" for t in tools)
    return _guard(text, "registry", OWNER,
                  "exact for the L4 model (absence or signature change) when the dispatch is "
                  "the commit point on this lifeline; stricter than Def. 2 (membership only)")


def g2_catalog_now(tools) -> Guard:
    """Def. 2 evaluated by the Registry at a dispatch: accepting now would be A2."""
    tools = _family(tools, "tool")
    text = ("req_saw_tool == true && ("
            + _any(f"req_tool == {_q(t)} && !(has_{t} == true)" for t in tools) + ")")
    return _guard(text, "registry", DIAGNOSTIC,
                  "membership only: silent on a signature change (S5b), on a tool removed and "
                  "re-added, and on a tool the agent never saw (req_saw_tool)")


def g2_pin(tool) -> Guard:
    """G2_pin: the Registry removes ``tool`` only when no in-flight operation pinned it."""
    tool = _part(tool, "tool")
    return _guard(f"pins_{tool} == 0", "registry", OWNER,
                  "snapshot by construction: agents pin after planning and unpin after "
                  "dispatch; a pin counter (CPL cannot count events); removal is deferred")


def g2_vis(tools, registry: str = "Registry") -> Guard:
    """G2_vis: the planned tool is visibly present with the pinned signature."""
    tools, registry = _family(tools, "tool"), _lifeline(registry, "registry")
    text = _any(f"planned == {_q(t)} && @{registry}.has_{t} == true && "
                f"@{registry}.sig_{t} == pinned_sig" for t in tools)
    return _guard(text, "agent", VISIBLE,
                  "true while the removal is not in the agent's causal past (the TLC witness)")


def g2_vis_ver(registry: str = "Registry") -> Guard:
    """G2_vis, conservative form: no visible registry change since the agent listed it."""
    registry = _lifeline(registry, "registry")
    return _guard(f"@{registry}.reg_ver == rreg_ver", "agent", VISIBLE,
                  "also rejects changes to other tools; blind to in-transit changes")


# -------------------------------------------------------- A3 causal cascade

def g3_commit(ops) -> Guard:
    """G3_commit (L2 commit_valid (b)): every predecessor is committed and not aborted."""
    ops = _family(ops, "operation")
    text = _all((f"!(req_dep_{p} == true) || committed_{p} == true && !(aborted_{p} == true)"
                 for p in ops), top=True)
    return _guard(text, "store", OWNER,
                  "exact at commit time on the Store that holds op status; cannot see a later "
                  "abort of a predecessor (G-future): needs the cascade rule; conjoin G1 for "
                  "read freshness")


def g3_cascade(dependent, preds) -> Guard:
    """The cascade rule, at the Store on processing an abort: must ``dependent`` abort too?"""
    dependent, preds = _part(dependent, "operation"), _family(preds, "operation")
    _distinct([(f"dep_{dependent}_{p}", p) for p in preds], "g3_cascade")
    text = (f"({_any(f'dep_{dependent}_{p} == true && aborted_{p} == true' for p in preds)})"
            f" && !(aborted_{dependent} == true)")
    return _guard(text, "store", OWNER,
                  "true → set aborted_<q> and send abort(q) to q's agent; with preds recorded "
                  "as a closure at read time one level suffices; this is what makes Def. 3 "
                  "false of the final history")


def g3_ext(preds, supervisor: str = "Sup") -> Guard:
    """G3_ext: before an irreversible effect, every predecessor is visibly *final*."""
    preds, supervisor = _family(preds, "operation"), _lifeline(supervisor, "supervisor")
    text = _all((f"!(dep_{p} == true) || @{supervisor}.final_{p} == true" for p in preds), top=True)
    return _guard(text, "agent", STABLE,
                  "exact if final_<p> is irrevocable (a final op can no longer abort): a "
                  "released effect never rests on a retracted basis; waits until then")


def g3_vis(preds, supervisor: str = "Sup") -> Guard:
    """G3_vis: no visible abort of a predecessor the agent depends on."""
    preds, supervisor = _family(preds, "operation"), _lifeline(supervisor, "supervisor")
    text = _all(f"!(dep_{p} == true && @{supervisor}.aborted_{p} == true)" for p in preds)
    return _guard(text, "agent", VISIBLE,
                  "true while the abort is in transit: an effect released on it can leak (S6)")


# ----------------------------------------------------- A6 tool-effect reordering

def g6_issue(op, index, world: str = "World") -> Guard:
    """G6_issue: issue effect ``index`` of ``op`` only once effect ``index - 1`` is applied."""
    op, index, world = _part(op, "operation"), _index(index, "index"), _lifeline(world, "world")
    text = "true" if index == 1 else (
        f"P @{world}(applied_op == {_q(op)} && applied_idx == {index - 1})")
    return _guard(text, "agent", STABLE,
                  "exact: an externalization is stable, and the previous effect is then in the "
                  "causal past of the issue (strict serialization: one effect in flight)")


def g6_issue_after(previous_effect, world: str = "World") -> Guard:
    """G6_issue by effect name: issue the next effect once ``previous_effect`` is applied."""
    if not isinstance(previous_effect, str) or len(previous_effect) > 10_000:
        raise ValueError("previous_effect must be a string of at most 10,000 characters")
    world = _lifeline(world, "world")
    return _guard(f"P @{world}(applied == {_q(previous_effect)})", "agent", STABLE,
                  "as g6_issue, for effects named by what they apply")


def g6_sink(op, count) -> Guard:
    """G6_sink: the sink applies effect k of ``op`` only after effect k - 1 (k ≤ ``count``)."""
    op, count = _part(op, "operation"), _index(count, "count")
    cases = ["req_idx == 1"] + [
        f"req_idx == {k} && O(applied_op == {_q(op)} && applied_idx == {k - 1})"
        for k in range(2, count + 1)]
    return _guard(f"req_op == {_q(op)} && ({_any(cases)})", "sink", OWNER,
                  "exact when all of the op's effects land on this one sink; an early effect "
                  "is buffered and the guard re-evaluated (resequencing); a family over k")


def g6_sink_counter(op) -> Guard:
    """G6_sink, unbounded form: the sink's own counter of the next index to apply."""
    op = _part(op, "operation")
    return _guard(f"req_op == {_q(op)} && req_idx == next_idx_{op}", "sink", OWNER,
                  "the sink increments next_idx_<op> at each apply (G-count)")


def g6_seq(index, op=None) -> Guard:
    """G6_seq (commit-order sequencer, L3g): release effect ``index`` once it completed and
    every earlier one was released."""
    index = _index(index, "index")
    suffix = "" if op is None else "_" + _part(op, "operation")
    return _guard(f"completed{suffix}_{index} == true && next_rel{suffix} == {index}",
                  "sequencer", OWNER,
                  "exact under any completion order; next_rel is the sequencer's counter")


# -------------------------------------------------------- L0 lost update

def g_occ(cell=None, *, request: str | None = None, current: str | None = None) -> Guard:
    """G_occ (ETag/OCC): a write must name the current version as its base."""
    suffix = "" if cell is None else "_" + _part(cell, "cell")
    request = _lifeline(request or f"req_base_ver{suffix}", "request variable")
    current = _lifeline(current or f"ver{suffix}", "current variable")
    return _guard(f"{request} == {current}", "store", OWNER,
                  "a blind write (base version null or unset) is rejected; the channel owner "
                  "decides every write")


def g_noclobber(cell, *, request: str | None = None, current: str | None = None) -> Guard:
    """G_noclobber (the reducer contract as a guard): a null update may not clobber a value."""
    cell = _part(cell, "cell")
    request = _lifeline(request or f"req_val_{cell}", "request variable")
    current = _lifeline(current or f"val_{cell}", "current variable")
    return _guard(f"!({request} == null) || {current} == null", "store", OWNER,
                  "rejects only null updates of a non-null value; an unset channel counts as "
                  "a value (initialise it to null); other overwrites need G_occ")


# ------------------------------------------------------------------ Atomix

def atomix_frontier(scopes, orchestrator: str = "Orch", epoch: str = "epoch") -> Guard:
    """The Atomix frontier gate: every scope's frontier reached the transaction's epoch."""
    scopes = _family(scopes, "scope")
    orchestrator = _lifeline(orchestrator, "orchestrator")
    epoch = _lifeline(epoch, "epoch variable")
    text = _all(f"@{orchestrator}.F_{s} >= {epoch}" for s in scopes)
    return _guard(text, "transaction", STABLE,
                  "frontiers are monotone, so a visible F >= epoch stays true; safe only if the "
                  "orchestrator never advances a frontier before every smaller epoch on the "
                  "scope finalized (premature advancement is a safety violation)")


LIBRARY = {
    "G1_store": g1_store, "G1_dlog": g1_dlog, "G1_val": g1_val, "G1_lock_grant": g1_lock_grant,
    "G1_lock": g1_lock, "G1_vis": g1_vis,
    "G2_reg": g2_reg, "G2_catalog_now": g2_catalog_now, "G2_pin": g2_pin, "G2_vis": g2_vis,
    "G2_vis_ver": g2_vis_ver,
    "G3_commit": g3_commit, "G3_cascade": g3_cascade, "G3_ext": g3_ext, "G3_vis": g3_vis,
    "G6_issue": g6_issue, "G6_issue_after": g6_issue_after, "G6_sink": g6_sink,
    "G6_sink_counter": g6_sink_counter, "G6_seq": g6_seq,
    "G_occ": g_occ, "G_noclobber": g_noclobber, "Atomix_frontier": atomix_frontier,
}
