"""``cpl eval``'s one-pass path (``Pending.stepped``, ``JsonLines.stepped`` with
``value_step``) decides exactly what the exact path decides.

The pass steps the monitors while it checks, so it may raise after some steps
(the CLI then prints nothing and reads the trace again, checked before it is
evaluated).  What it must never do is finish on a trace the checker rejects, or
finish with values other than ``evaluations`` of the checked trace.
"""

import random

import pytest

from cpl.errors import TraceError
from cpl.monitor import evaluations, value_step
from cpl.trace.typed import typed_document
from cpl.trace.lines import JsonLines
from test_tracefast import _mutate, base, encode, exact, read, stream_of
from test_tracefast import small_batches  # noqa: F401 (a fixture: pytest finds it here)

GUARDS = ("x == 1 && @A(x == 1 S x == 2)", "@B.x == 2 || s == \"a:b\"")


def expected(trace, guard, lifeline):
    return [(event.id, event.lifeline, value)
            for event, value in evaluations(trace, guard, lifeline)]


def stepped(source, guard, lifeline):
    """The one-pass rows, or None if it raised (anything: the CLI falls back)."""
    try:
        schema = source.schema()
        if schema is None:
            return None
        step, values = value_step(source, guard, lifeline, schema=schema)
        rows = []
        for _ in source.stepped(step):
            rows += values
            values.clear()
        return rows + values
    except Exception:
        return None


def check_document(raw: bytes, guard: str, lifeline) -> bool:
    truth = exact(raw)
    pending = typed_document(raw, "t")
    rows = None if pending is None else stepped(pending, guard, lifeline)
    if rows is not None:
        assert not isinstance(truth, str), (raw[:300], truth)
        assert rows == expected(truth, guard, lifeline)
    return rows is not None


def check_stream(raw: bytes, guard: str, lifeline) -> bool:
    truth = read(raw, False)
    try:
        reader = JsonLines(raw, "t", lambda _: None)
        reader.header()
    except TraceError:
        return False
    rows = stepped(reader, guard, lifeline)
    if rows is not None:
        assert len(truth) == 3, (raw[:300], truth)
        assert rows == expected(truth[0], guard, lifeline)
    return rows is not None


@pytest.mark.usefixtures("small_batches")
def test_a_plain_trace_is_evaluated_in_one_pass():
    raw = encode(base()).encode()
    for guard in GUARDS:
        for lifeline in (None, "A", "B"):
            assert check_document(raw, guard, lifeline)
            assert check_stream(stream_of(base()), guard, lifeline)


@pytest.mark.usefixtures("small_batches")
def test_mutated_traces_agree_with_the_exact_path():
    rng = random.Random(21)
    taken = 0
    for _ in range(1500):
        data = base()
        for _ in range(rng.randrange(0, 4)):
            _mutate(rng, data)
        guard, lifeline = rng.choice(GUARDS), rng.choice((None, "A", "B"))
        taken += check_document(encode(data, rng.random() < 0.2).encode(), guard, lifeline)
        raw = stream_of(data)
        if raw is not None:
            taken += check_stream(raw, guard, lifeline)
            check_stream(raw[:rng.randrange(len(raw))], guard, lifeline)
            check_stream(raw.replace(b'{"end"', b'{"x": 1}\n{"end"'), guard, lifeline)
    assert taken > 100  # the one-pass path is exercised, not only declined


@pytest.mark.parametrize("name", ["t.json", "t.jsonl"])
def test_cpl_eval_takes_the_one_pass_path_and_prints_the_same(tmp_path, monkeypatch, capsys,
                                                              name):
    import json

    import cpl.trace
    from cpl_cli import main

    path = tmp_path / name
    path.write_bytes(stream_of(base()) if name.endswith("l") else encode(base()).encode())
    opened = []
    real = cpl.trace.open_trace
    monkeypatch.setattr(cpl.trace, "open_trace",
                        lambda *args, **kw: opened.append(kw) or real(*args, **kw))
    assert main(["eval", str(path), GUARDS[0], "--format", "jsonl"]) == 0
    assert opened == [{"pending": True}]  # read once: not declined
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    trace = cpl.trace.load_trace(path)
    assert rows == [{"event": event_id, "lifeline": lifeline, "value": value}
                    for event_id, lifeline, value in expected(trace, GUARDS[0], None)]
