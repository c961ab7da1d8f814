"""The fast path for JSON documents (cpl.trace.typed) accepts only what the exact checker accepts.

It may decline anything (the exact checker then runs and words the problem), but
what it accepts must be the very trace the checker builds, and every document the
checker rejects must be declined: a repeated key above all, which msgspec would
silently resolve to the last value.
"""

import json
import random

import pytest

from cpl.errors import TraceError
from cpl.trace import Event, Trace
from cpl.trace.typed import typed_trace
from cpl.trace.files import _decode, dumps_trace, loads_trace, parse_trace


class Pairs(list):
    """An object written member by member, so a key may repeat."""


def encode(value, spaced=False) -> str:
    colon = " : " if spaced else ": "
    if isinstance(value, Pairs):
        return "{" + ", ".join(f"{json.dumps(k)}{colon}{encode(v, spaced)}" for k, v in value) + "}"
    if isinstance(value, dict):
        return encode(Pairs(value.items()), spaced)
    if isinstance(value, list):
        return "[" + ", ".join(encode(item, spaced) for item in value) + "]"
    return json.dumps(value)


def exact(raw: bytes):
    """What the checker alone makes of the bytes: the trace, or the error text."""
    try:
        return parse_trace(_decode(raw, "t", False), "t", owned=True)
    except TraceError as error:
        return str(error)


def loaded(raw: bytes):
    try:
        return loads_trace(raw, "t")
    except TraceError as error:
        return str(error)


def check(raw: bytes) -> bool:
    """The fast path agrees with the checker; True if it accepted."""
    fast, expected = typed_trace(raw, "t"), exact(raw)
    if fast is not None:
        assert isinstance(expected, Trace), (raw[:300], expected)
        assert fast == expected and fast.events == expected.events
        assert [e.to_dict() for e in fast.events] == [e.to_dict() for e in expected.events]
        assert fast.meta == expected.meta and fast.init == expected.init
    assert loaded(raw) == expected
    return fast is not None


def base() -> dict:
    return {"format": "cpl-msc/1", "lifelines": ["A", "B"], "vars": ["x", "s"],
            "events": [
                {"id": "A.1", "lifeline": "A", "kind": "act", "set": {"x": 1, "s": "a:b"}},
                {"id": "A.2", "lifeline": "A", "kind": "send", "to": "B", "msg": "A:1",
                 "vc": {"A": 2}},
                {"id": "B.1", "lifeline": "B", "kind": "recv", "msg": "A:1", "set": {"x": 2},
                 "time": 1.5, "vc": {"A": 2, "B": 1}},
                {"id": "B.2", "lifeline": "B", "kind": "choice", "guard": "x == 1",
                 "outcome": False, "label": "go: on"},
                {"id": "A.3", "lifeline": "A", "kind": "act", "payload": {"k": [1, {"n": None}]}},
            ],
            "meta": {"seed": 1}}


def test_a_plain_document_takes_the_fast_path():
    assert check(encode(base()).encode())
    assert check(dumps_trace(loads_trace(encode(base()).encode())))


@pytest.mark.parametrize("where", ["top", "vars", "event", "set", "vc", "payload", "meta",
                                   "init"])
@pytest.mark.parametrize("spaced", [False, True])
def test_a_repeated_key_is_never_accepted(where, spaced):
    data = base()
    events = data["events"]
    if where == "top":
        data = Pairs(list(data.items()) + [("format", "cpl-msc/1")])
    elif where == "vars":
        data = Pairs(list(data.items()) + [("vars", ["x", "s"])])
    elif where == "event":
        events[3] = Pairs(list(events[3].items()) + [("outcome", True)])
    elif where == "set":
        events[0]["set"] = Pairs([("x", 1), ("s", "a"), ("x", 2)])
    elif where == "vc":
        events[2]["vc"] = Pairs([("A", 2), ("B", 1), ("A", 2)])
    elif where == "payload":
        events[4]["payload"] = {"k": Pairs([("n", 1), ("n", 1)])}
    elif where == "meta":
        data["meta"] = Pairs([("seed", 1), ("seed", 1)])
    else:
        data["init"] = {"A": Pairs([("x", 0), ("x", 0)])}
    raw = encode(data, spaced).encode()
    assert typed_trace(raw, "t") is None
    assert "occurs twice in one object; keep one of them" in loaded(raw)
    check(raw)


def test_a_key_spelled_with_escapes_or_a_colon_inside_strings():
    raw = encode(base()).encode()
    # "\u0069d" is "id": a second id in other letters; colons inside strings around it
    twice = raw.replace(b'"id": "B.2",', b'"id": "B.2", "\\u0069d": "B:9",')
    assert typed_trace(twice, "t") is None and "occurs twice" in loaded(twice)
    # an escaped colon in a string would hide one member from the count: never fast
    escaped = raw.replace(b'"go: on"', b'"go\\u003a on"')
    assert typed_trace(escaped, "t") is None
    check(escaped)
    hidden = escaped.replace(b'"kind": "choice",', b'"kind": "choice", "kind": "choice",')
    assert typed_trace(hidden, "t") is None and "occurs twice" in loaded(hidden)


def test_explicit_nulls_and_odd_values_are_left_to_the_checker():
    data = base()
    data["events"][0]["to"] = None
    data["events"][1]["label"] = None
    check(encode(data).encode())
    for value in (1.5, [1, 2], {"a": {"b": []}}, 10**30, -0.0, "é\u2028"):
        data = base()
        data["events"][0]["set"]["x"] = value
        data["events"][2]["payload"] = value
        assert check(encode(data).encode())


_VALUES = [None, True, 0, -1, 2**70, 1.5, 1e308, "", "A", "B", "C", "A:1", "x", "act", "send",
           "recv", "choice", [], ["A"], {}, {"A": 1}, {"x": 1}, {"A": -1}, {"A": True},
           [[[[]]]], "\\u003a"]
_FIELDS = list(Event._fields) + ["extra", "ID"]


def _mutate(rng: random.Random, data: dict):
    events = data.get("events") if isinstance(data.get("events"), list) else []
    events = [event for event in events if type(event) is dict] and events
    choice = rng.randrange(9)
    event = rng.choice(events) if events else None
    if type(event) is not dict:
        choice = 4
    if choice == 0:
        event[rng.choice(_FIELDS)] = rng.choice(_VALUES)
    elif choice == 1:
        event.pop(rng.choice(_FIELDS), None)
    elif choice == 2 and events:
        i, j = rng.randrange(len(events)), rng.randrange(len(events))
        events[i], events[j] = events[j], events[i]
    elif choice == 3:
        events.insert(rng.randrange(len(events) + 1), dict(event))
    elif choice == 4:
        data[rng.choice(["lifelines", "vars", "symbols", "init", "meta", "parts",
                         "predicates", "format"])] = rng.choice(_VALUES)
    elif choice == 5 and event:
        key = rng.choice(list(event))
        index = events.index(event)
        events[index] = Pairs(list(event.items()) + [(key, rng.choice([event[key]] + _VALUES))])
    elif choice == 6:
        if isinstance(event.get("set"), dict):
            event["set"] = Pairs(list(event["set"].items()) + [("x", 1)])
    elif choice == 7:
        data.pop(rng.choice(["vars", "meta", "events", "lifelines"]), None)
    elif choice == 8:
        event["set"] = {"x": rng.choice(_VALUES), "s": rng.choice(_VALUES)}


def test_mutated_documents_agree_with_the_checker():
    rng = random.Random(19)
    accepted = 0
    for _ in range(3000):
        data = base()
        for _ in range(rng.randrange(1, 4)):
            _mutate(rng, data)
        accepted += check(encode(data, rng.random() < 0.2).encode())
    assert accepted > 100  # the fast path is exercised, not only declined


# ------------------------------------------------------------ .jsonl streams


def stream_of(data, spaced=False) -> bytes | None:
    """The document as a ``.jsonl`` stream: header, one event a line, the end line."""
    if type(data) is not dict or not isinstance(data.get("events"), list):
        return None
    header = {key: value for key, value in data.items() if key not in ("events", "meta")}
    lines = [encode(header)] + [encode(event, spaced) for event in data["events"]]
    return ("\n".join(lines + [encode({"end": data.get("meta", {})})]) + "\n").encode()


def read(raw: bytes, fast: bool):
    from cpl.trace.lines import JsonLines
    warned = []
    reader = JsonLines(raw, "t", warned.append)
    reader._fast = fast
    try:
        return reader.trace(), reader.checker.variables(), warned
    except TraceError as error:
        return str(error), warned


@pytest.fixture
def small_batches(monkeypatch):
    import cpl.trace.typed
    monkeypatch.setattr(cpl.trace.typed, "BATCH", 2)  # declines after batches were yielded


def check_stream(raw: bytes) -> None:
    assert read(raw, True) == read(raw, False)


def test_streams_agree_with_the_checker(small_batches):
    rng = random.Random(20)
    for _ in range(1500):
        data = base()
        data.pop("vars") if rng.random() < 0.3 else None
        for _ in range(rng.randrange(0, 4)):
            _mutate(rng, data)
        raw = stream_of(data, rng.random() < 0.2)
        if raw is not None:
            check_stream(raw)
            check_stream(raw[:rng.randrange(len(raw))])  # cut off anywhere
            check_stream(raw.replace(b'{"end"', b'{"x": 1}\n{"end"'))


def test_a_stream_with_a_repeated_key_in_a_later_batch(small_batches):
    data = base()
    data["events"][4] = Pairs(list(data["events"][4].items()) + [("kind", "act")])
    fast, exact = read(stream_of(data), True), read(stream_of(data), False)
    assert fast == exact and "line 6: not a valid trace: the key 'kind' occurs twice" in fast[0]
