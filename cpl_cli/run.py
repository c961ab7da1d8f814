"""``cpl run`` and ``cpl lifeline``: running a choreography, simulated or over processes.

Both forms open the trace *before* the run (an unwritable ``--trace`` costs
no run), stream every event into it, print each lifeline's result, and only
then close the trace with ``meta`` saying how the run ended; the exit code
follows the run's status (``choreo.execution.status.EXIT_CODES``).  A run over
processes is ``runtime.run``, which keeps its lifelines' logs beside the trace
(``T.parts``, locked while it runs) and removes them once the trace is whole: if
the trace cannot be written (a full disk) they stay, for ``cpl merge``, and
the run's results are printed all the same (exit 1).  They stay too when the
merge could not place every event (``incomplete``, exit 1): they hold what the
trace lacks.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import signal
import sys
import tempfile

import attrs

from cpl.errors import TraceError

from .arguments import (
    add_choreography, add_command, add_inputs, add_max_steps, add_schedule, add_seed,
)
from .claim import merge_command, refused
from .usage import UsageError, option_json
from .view import add_ids, add_values
from choreo.execution import Sweep


def cmd_run(args) -> int:
    from choreo import load_one
    from choreo.execution import prepare

    _outputs(args)
    if args.sim and (args.hosts or args.insecure):
        raise UsageError(f"{'--hosts' if args.hosts else '--insecure'} is for a run over "
                         f"processes; --sim runs every lifeline in this process")
    if not args.sim and args.schedule is not None:
        raise UsageError("--schedule picks the simulator's scheduling (--sim); a run over "
                         "processes is scheduled by the operating system")
    if not args.sim and args.max_steps is not None:
        raise UsageError("--max-steps counts the simulator's steps (--sim); a run over "
                         "processes stops with --timeout SECONDS")
    ray = args.launcher == "ray"
    if ray and (args.sim or args.hosts):
        raise UsageError("--launcher ray places every lifeline on Ray; " + (
            "--sim runs them all in this process" if args.sim else "--hosts places them by hand"))
    if not ray and (args.place or args.ray_address):
        raise UsageError(f"{'--place' if args.place else '--ray-address'} is for --launcher ray")
    if args.join_timeout is not None and not (args.hosts or ray):
        raise UsageError("--join-timeout is how long to wait for the lifelines placed with "
                         "--hosts or --launcher ray")
    if args.join_timeout is not None and not 0 < args.join_timeout < math.inf:
        raise UsageError(f"--join-timeout {args.join_timeout:g}: give a number of seconds > 0")
    render_format = _render_format(args.render)
    for option in ("values", "ids"):
        if getattr(args, option) is not None and not args.render:
            raise UsageError(f"--{'' if getattr(args, option) else 'no-'}{option} is for the "
                             f"picture of --render OUT")
    plan = prepare(load_one(args.choreo, args.name))
    inputs = plan.inputs(args.arg)
    with contextlib.ExitStack() as cluster:  # Ray joined or started before the trace opens:
        args.on_ray = _on_ray(args, plan, cluster) if ray else None  # no trace for a usage error
        trace_path = args.trace
        if args.render and not trace_path:  # the picture is drawn from a trace: keep one aside
            handle, trace_path = tempfile.mkstemp(suffix=".jsonl", prefix="cpl-run-")
            os.close(handle)
            try:
                return _run(args, plan, inputs, trace_path, render_format)
            finally:
                os.unlink(trace_path)
        return _run(args, plan, inputs, trace_path, render_format)


def _run(args, plan, inputs, trace_path, render_format) -> int:
    code = (_simulated if args.sim else _over_processes)(args, plan, inputs, trace_path)
    if args.render:
        code = _render_run(trace_path, args.render, render_format, args.values,
                           args.ids) or code
    return code


def _over_processes(args, plan, inputs, trace_path) -> int:
    """The run as ``runtime.run`` makes it (its parts claimed, its trace written, its parts
    settled), its lifelines placed as the options say; what it says, printed."""
    import runtime
    from runtime.supervisor import Taken, launchers_for
    listen, placement = read_hosts(args.hosts, plan.lifelines) if args.hosts \
        else ("127.0.0.1", {})
    listen, launchers = args.on_ray or \
        (listen, launchers_for(plan.lifelines, placement, args.join_timeout))
    told: list[str] = []  # the error said as the run ended, before its last merge
    try:
        result = runtime.run(
            args.choreo, name=args.name, seed=args.seed, trace=trace_path,
            keep_parts=bool(args.trace) and not args.trace_stream,  # a device's: elsewhere
            timeout=args.timeout, secure=not args.insecure, host=listen, launchers=launchers,
            plan=plan, inputs=inputs, opened=_insecure if args.insecure else None,
            tell=lambda ended: _tell(ended, told),
            ended=lambda meta: _print_results(plan, meta, meta.get("results", {})))
    except Taken as taken:
        raise refused(taken, args.trace) from None
    except runtime.TraceRefused as error:
        raise UsageError(f"--{'trace' if args.trace else 'render'}: {error}") from None
    return _said(args, result.meta, told, bool(args.trace) and result.written,
                 result.write_error, result.parts, result.unmerged, result.exit_code)


def _simulated(args, plan, inputs, trace_path) -> int:
    """The run simulated in this process, its trace written as it goes: its exit code."""
    from choreo.execution import EXIT_CODES, RANDOM, Simulator, simulate_watched
    from cpl.trace import Recording, TraceWriter

    writer = None
    if trace_path:  # checked before the run: an unwritable path must not cost a run
        try:
            writer = TraceWriter.open(trace_path, **plan.header(inputs))
        except TraceError as error:
            raise UsageError(f"--{'trace' if args.trace else 'render'}: {error}") from None
    write = Recording(writer)
    # Leaving the block without close() (an error of ours, a second Ctrl-C) still ends
    # the trace, as failed or interrupted.
    with writer or contextlib.nullcontext(), Sweep():  # no process of the run outlives it
        # SIGTERM ends a simulated run as Ctrl-C does (interrupted, 130), like a
        # process run's supervisor: the trace says so instead of stopping mid-line.
        signal.signal(signal.SIGTERM, signal.default_int_handler)
        if args.timeout is not None:  # kept even by an action that never returns
            meta, results = simulate_watched(plan, seed=args.seed, values=inputs,
                                             max_steps=args.max_steps, timeout=args.timeout,
                                             sink=write if writer else None,
                                             schedule=args.schedule or RANDOM)
        else:
            result = Simulator.of(plan).run(  # a sink even without a trace: Ctrl-C
                seed=args.seed, values=inputs, max_steps=args.max_steps, record=False,
                sink=write if writer else _unwritten,  # is told apart
                schedule=args.schedule or RANDOM)
            meta, results = dict(result.trace.meta), result.results
        _print_results(plan, meta, results)
        write.close(meta)
    code, lost = EXIT_CODES[meta["status"]], write.failed
    return _said(args, meta, [], bool(args.trace) and not lost, lost, None, False,
                 code or 1 if lost else code)


def _print_results(plan, meta: dict, results: dict) -> None:
    """Each lifeline's results, on standard output: first, before the trace is closed."""
    dead = (meta.get("died") or {}).get("lifeline")  # killed: it may have had no time
    for lifeline in plan.lifelines:
        names = plan.choreography.reported_names(lifeline, results.get(lifeline, {}))
        got = results.get(lifeline, {})
        shown = ", ".join(f"{n} = {json.dumps(got[n])}" if n in got
                          else f"{n} = {_unset(n, lifeline == dead)}" for n in names)
        print(f"{lifeline}: {shown or '(nothing)'}", flush=True)


def _said(args, meta: dict, told: list, written: bool, write_error, parts, unmerged: bool,
          code: int) -> int:
    """How the run ended, on standard error (unless ``told`` already), with where its
    trace or its parts are; the exit code."""
    if meta["status"] != "ok" and told == [meta.get("error")]:
        if written:
            print(f"cpl run: trace written to {args.trace}", file=sys.stderr)
    elif meta["status"] != "ok":
        print(f"cpl run: {meta.get('error', meta['status'])}"
              + (f"\n{meta['traceback']}" if meta.get("traceback") else "")  # an action's own
              + (f"\n  (trace written to {args.trace})" if written else ""), file=sys.stderr)
    if write_error is not None:
        print(f"cpl run: {write_error}" + (f"\n  the lifelines' logs are kept in {parts}: "
                                           f"`{merge_command(parts, args.trace)}` rebuilds "
                                           f"the trace once there is room" if parts else ""),
              file=sys.stderr)
    elif unmerged:
        print(f"cpl run: stopped while merging: {args.trace} lacks events the lifelines "
              f"logged; `{merge_command(parts, args.trace)}` writes the whole trace",
              file=sys.stderr)
    return code


def _insecure() -> None:
    print("cpl run: --insecure: no keys, so anyone who can reach this run's ports "
          "can read its messages and steer the run", file=sys.stderr, flush=True)


def _tell(meta: dict, told: list) -> None:
    """Name a lifeline that died or is unresponsive now, on standard error: the stop, the
    last merge and the trace's end come after, and may take seconds on a busy machine."""
    told.append(meta.get("error"))
    print(f"cpl run: {meta.get('error', meta['status'])}", file=sys.stderr, flush=True)


def _on_ray(args, plan, cluster):
    """The supervisor's address and the one launcher of a run on Ray, its cluster joined
    (or started) in ``cluster``'s scope; ``--place`` read, and checked against it."""
    from runtime.frames import HELLO_TIMEOUT
    from runtime.supervisor import RayActors, ray_installed
    from .cluster import MISSING, checked_on_cluster, joined, read_place
    if not ray_installed():
        raise UsageError(MISSING)
    places = read_place(args.place, plan.lifelines) if args.place else {}
    listen = joined(args.ray_address or "auto", cluster)
    places = checked_on_cluster(args.place, places) if places else {}
    patience = HELLO_TIMEOUT if args.join_timeout is None else args.join_timeout
    return listen, [RayActors(plan.lifelines, places, patience)]


def _unset(name: str, died: bool) -> str:
    """A result the lifeline never set: after its death, because it had no time to."""
    return f"(died before it set {name})" if died else "(unset)"


def _unwritten(event) -> None:
    """The sink of a simulated run without ``--trace``: with a sink, the simulator tells a
    Ctrl-C from a ``KeyboardInterrupt`` an action raises (``choreo.execution.actions.own``)."""


def _outputs(args) -> None:
    """``--trace`` and ``--render`` looked at before the run (``cpl_cli.outputs``): a
    trace's suffix says its form; a directory, socket or block device is refused, and so
    is standard output, which carries the run's results.  A trace into a device or FIFO
    keeps its lifelines' logs in a temporary folder: nothing beside it is the run's."""
    from .outputs import Output, trace_suffix
    trace_suffix(args.trace, "--trace")
    args.trace_stream = False
    for option, given in (("--trace", args.trace), ("--render", args.render)):
        output = given and Output.of(given, option)
        if output and output.to_stdout:
            raise UsageError(f"{option} {given}: standard output carries the run's results; "
                             f"name a file (or /dev/stderr)")
        if output and option == "--trace":
            args.trace_stream = output.stream


def _render_format(path: str | None) -> str | None:
    """``--render OUT``'s format, checked before the run like ``--trace``."""
    if path is None:
        return None
    from cpl.view import format_of, missing
    form = format_of(path)
    if form is None or form == "shiviz":
        raise UsageError(f"--render {path}: give a file ending in .svg, .png, .pdf, .dot "
                         f"or .html")
    lacking = missing(form)
    if lacking is not None:  # not after a run that may have taken hours
        raise UsageError(f"--render {path}: {lacking}")
    return form


def _render_run(trace_path: str, out: str, form: str, values: bool | None = None,
                ids: bool | None = None) -> int:
    """Draw the run's trace (failing runs too), keeping only the drawn window of a
    stream; 1 if the picture could not be made."""
    from cpl.trace import open_trace
    from cpl.view import render_parts
    from .outputs import Output
    from .view import drawn
    try:
        source = open_trace(trace_path)
        Output.of(out, "--render").write(drawn(lambda: render_parts(source, form,
                                                                    values=values, ids=ids)))
    except TraceError as error:
        print(f"cpl run: --render: {error}", file=sys.stderr)
        return 1
    except UsageError as error:  # made unwritable during the run: said, as a failed write
        print(f"cpl run: {error}", file=sys.stderr)
        return 1
    return 0


def read_hosts(path: str, lifelines) -> tuple[str, dict[str, str]]:
    """``--hosts FILE``: the supervisor's address and lifeline -> host for the placed ones."""
    data = option_json("--hosts", path)
    hosts = data.get("hosts") if isinstance(data, dict) else None
    listen = data.get("supervisor", "127.0.0.1") if isinstance(data, dict) else None
    if not isinstance(hosts, dict) or not isinstance(listen, str):
        raise UsageError(f'--hosts: {path} must be {{"supervisor": "HOST", "hosts": '
                         f'{{"HOST": ["Lifeline", ...]}}}}')
    placement: dict[str, str] = {}
    for host, names in hosts.items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise UsageError(f"--hosts: {path}: the lifelines of {host!r} must be a list of names")
        for name in names:
            if name not in lifelines:
                raise UsageError(f"--hosts: {path}: {name!r} is not a lifeline of this "
                                 f"choreography ({', '.join(lifelines)})")
            if name in placement:
                raise UsageError(f"--hosts: {path}: {name!r} is placed twice")
            placement[name] = host
    return listen, placement


def cmd_lifeline(args) -> int:
    from runtime.frames import Ticket
    from runtime.lifeline import main

    if args.stdin:
        connection = Ticket.from_json(sys.stdin.readline(), "standard input")
    elif args.connection:
        connection = Ticket.read(args.connection, args.lifeline)
    else:
        raise UsageError("give --stdin (started by cpl run) or --connection FILE")
    if connection.lifeline != args.lifeline:
        raise UsageError(f"the connection is for {connection.lifeline!r}, not {args.lifeline!r}")
    if args.choreo:  # the choreography lives elsewhere on this host
        connection = attrs.evolve(connection, choreography=args.choreo)
    if args.join and args.join != connection.supervisor:
        raise UsageError(f"--join {args.join} differs from the connection's supervisor "
                         f"{connection.supervisor}")
    return main(connection, watch_stdin=args.stdin)


def add_run_commands(commands) -> None:
    run = add_command(
        commands, "run", cmd_run, help="run a choreography and print each lifeline's result",
        description="Run a choreography and print each lifeline's result: one OS process per "
        "lifeline over ZeroMQ (CURVE-encrypted) on this machine, or with --sim every lifeline "
        "in this process under a seeded scheduler with non-FIFO delivery (the same seed, the "
        "same trace).")
    add_choreography(run)
    run.add_argument("--sim", action="store_true", help="simulate in one process")
    add_seed(run, "N", "seed of the scheduler and of the actions' rng (default 0)")
    add_schedule(run, "with --sim: how the scheduler picks the next event (default random; "
                 "cpl explore's report names each seed's schedule, to replay it)", mixed=False)
    add_inputs(run)
    run.add_argument("--trace", metavar="OUT.json|OUT.jsonl|OUT.msgpack",
                     help="write the cpl-msc/1 trace as the run goes (.jsonl: streamed line "
                     "by line, so a killed run keeps what it did); also when the run fails")
    run.add_argument("--render", metavar="OUT.svg|.png|.pdf|.dot|.html",
                     help="draw the run's MSC at the end (failing runs too); see cpl render")
    add_values(run, "with --render: ")
    add_ids(run, "with --render: ")
    run.add_argument("--timeout", type=float, metavar="SECONDS", help="stop after this long")
    add_max_steps(run, "stop after N events (--sim)")
    run.add_argument("--hosts", metavar="FILE",
                     help='place lifelines on other hosts: JSON {"supervisor": "HOST", '
                     '"hosts": {"HOST": ["Lifeline", ...]}}; the others run here')
    run.add_argument("--launcher", choices=("local", "ray"), default="local",
                     help="where the lifelines run: processes here (default), or each a Ray "
                     "actor (pip install 'causal-guards[ray]')")
    run.add_argument("--ray-address", metavar="auto|local|ADDRESS",
                     help="with --launcher ray: the cluster to join (default auto: the one "
                     "running, else start one on 127.0.0.1; local: always start one)")
    run.add_argument("--place", metavar="FILE",
                     help='with --launcher ray: JSON {"Lifeline": {"resources": ["NAME"]} or '
                     '{"node": "ID or ADDRESS"}}; the others go where Ray puts them')
    run.add_argument("--join-timeout", type=float, metavar="SECONDS",
                     help="with --hosts or --launcher ray: how long to wait for the placed "
                     "lifelines to join (default 300 with --hosts, 60 on Ray; then the run "
                     "ends 'not joined')")
    run.add_argument("--insecure", action="store_true",
                     help="no CURVE encryption or authentication between processes (debugging)")

    lifeline = add_command(
        commands, "lifeline", cmd_lifeline, help="run one lifeline of a run (started by cpl run)",
        description="Run one lifeline of a run whose supervisor listens at ADDRESS. cpl run "
        "starts these itself; the keys come through standard input or a connection file "
        "readable by its owner only, never on the command line.")
    lifeline.add_argument("lifeline", metavar="NAME")
    lifeline.add_argument("--join", metavar="ADDRESS", help="the supervisor, tcp://HOST:PORT")
    lifeline.add_argument("--connection", metavar="FILE", help="the connection file")
    lifeline.add_argument("--choreo", metavar="CHOREO.py",
                          help="the choreography's path on this host, if not the supervisor's")
    lifeline.add_argument("--stdin", action="store_true",
                          help="read the connection from standard input and exit when it closes")
