"""``cpl eval`` on a 200,000-event trace against a bare ``json.load`` of the same file.

The trace is the mixed workload of ``monitors_mixed.py``, written with
``cpl.trace.files.dump_trace`` as JSON into a temporary directory.  Two measurements:

* library: ``load_trace`` + ``offline.evaluate_trace`` in this process;
* CLI: ``cpl eval TRACE GUARD --format jsonl > /dev/null`` as a subprocess,
  minus the interpreter's start-up (``python -c pass``), also timed here,
  both as the child's CPU time (user + system);
* the CLI's fixed cost: the same command on a one-event trace (imports,
  building the guard parser);
* the same trace as a ``.jsonl`` stream (what ``cpl run --trace`` writes): the CLI
  checks and evaluates it one event at a time; and the peak RSS of ``cpl eval`` on
  the document and on the stream, each in a fresh parent (``timing.peak_rss_kib``).

The breakdown rows (load alone, evaluate alone) say where the time goes.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import subprocess
import sys
import tempfile
from functools import partial
from pathlib import Path

import workloads as w
from timing import Row, child_cpu_seconds, cpu_seconds, interleaved, median, peak_rss_kib

row = partial(Row, "eval_trace")  # every row of this file is under its name

GUARD = w.GUARD_FULL

def peak_rss_mib(command: list[str]) -> float:
    return peak_rss_kib(command) / 1024


def cli_command() -> list[str]:
    """The installed ``cpl`` script beside this interpreter, else ``python -m cpl_cli``."""
    script = Path(sys.executable).with_name("cpl")
    if script.exists():
        return [str(script)]
    found = shutil.which("cpl")
    return [found] if found else [sys.executable, "-m", "cpl_cli"]


def _subprocess_seconds(command: list[str]) -> float:
    return child_cpu_seconds(lambda: subprocess.run(command, stdout=subprocess.DEVNULL,
                                                    check=True))


def run(quick: bool = False) -> list[Row]:
    from cpl.monitor import evaluate_trace
    from cpl.trace import dump_trace, load_trace

    n, repeats = (5_000, 1) if quick else (200_000, 5)
    with tempfile.TemporaryDirectory() as directory:
        path = os.path.join(directory, "trace.json")
        trace = w.mixed_trace(n)
        dump_trace(trace, path)
        stream = os.path.join(directory, "trace.jsonl")
        dump_trace(trace, stream)
        del trace
        size = os.path.getsize(path)
        tiny = os.path.join(directory, "one.json")
        dump_trace(w.mixed_trace(1), tiny)
        gc.collect()

        def json_load():
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)

        def library():
            return evaluate_trace(load_trace(path), GUARD)

        loaded = load_trace(path)
        runs = interleaved({
            "json": lambda: cpu_seconds(json_load),
            "library": lambda: cpu_seconds(library),
            "load": lambda: cpu_seconds(lambda: load_trace(path)),
            "evaluate": lambda: cpu_seconds(lambda: evaluate_trace(loaded, GUARD)),  # noqa: F821
            "cli": lambda: _subprocess_seconds(cli_command() + ["eval", path, GUARD,
                                                                "--format", "jsonl"]),
            "fixed": lambda: _subprocess_seconds(cli_command() + ["eval", tiny, GUARD,
                                                                  "--format", "jsonl"]),
            "stream": lambda: _subprocess_seconds(cli_command() + ["eval", stream, GUARD,
                                                                   "--format", "jsonl"]),
            "startup": lambda: _subprocess_seconds([sys.executable, "-c", "pass"]),
        }, repeats)
        del loaded
        rss = {name: peak_rss_mib(cli_command() + ["eval", file, GUARD, "--format", "jsonl"])
               for name, file in (("document", path), ("stream", stream))}
    cli_net = [c - s for c, s in zip(runs["cli"], runs["startup"])]
    fixed_net = [c - s for c, s in zip(runs["fixed"], runs["startup"])]
    stream_net = [c - s for c, s in zip(runs["stream"], runs["startup"])]
    base = median(runs["json"])
    json_row = f"json.load ({size / 1e6:.1f} MB)"
    return [
        row(f"json.load of the trace ({n:,} events, {size / 1e6:.1f} MB)", base, "s",
            runs["json"]),
        row("library: load_trace + evaluate_trace", median(runs["library"]), "s",
            runs["library"], baseline=json_row, baseline_value=base, target="≤ 2×",
            met=median(runs["library"]) <= 2 * base),
        row("  of which load_trace", median(runs["load"]), "s", runs["load"],
            baseline=json_row, baseline_value=base),
        row("  of which evaluate_trace", median(runs["evaluate"]), "s", runs["evaluate"],
            baseline=json_row, baseline_value=base),
        row("CLI `cpl eval --format jsonl` minus start-up", median(cli_net), "s", cli_net,
            baseline=json_row, baseline_value=base, target="≤ 2×",
            met=median(cli_net) <= 2 * base),
        row("  of which the CLI's fixed cost (1-event trace, minus start-up)",
            median(fixed_net), "s", fixed_net),
        row("  interpreter start-up (`python -c pass`)", median(runs["startup"]), "s",
            runs["startup"]),
        row("CLI `cpl eval` on the same trace as .jsonl, minus start-up",
            median(stream_net), "s", stream_net, baseline=json_row, baseline_value=base,
            target="≤ the document's", met=median(stream_net) <= median(cli_net)),
        row("peak RSS, `cpl eval` of the JSON document", rss["document"], "MiB"),
        row("peak RSS, `cpl eval` of the .jsonl stream", rss["stream"], "MiB",
            baseline="the JSON document", baseline_value=rss["document"]),
    ]
