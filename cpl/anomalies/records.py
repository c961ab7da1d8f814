"""The operation record of the anomaly catalog, and its JSON form.

An ``OpRecord`` is one committed operation of an append-only log ``h``: the
detectors (``cpl.anomalies.detectors``) are predicates over a sequence of them.
The fields are those of the catalog's TLA+ record (spec anomalies.md §1.2)
without ``pending``, which is always false in a log.  Positions in ``h`` and
times are 1-based, as in the spec: ``h[i]`` is ``history[i - 1]`` and a
well-formed log has ``write_time == i``.

Records travel as JSON (an emitter's JSON-Lines, a report), so ``from_json``
treats its input as hostile: it names the field that is wrong and bounds every
size, and a record it returns is always one the detectors can read.
"""

from __future__ import annotations

from typing import Mapping

import attrs

from ..errors import CplError
from ..trace import value_problem

MAX_ITEMS = 10_000  # cells of a read or write set, tools of a snapshot, entries of io/co, preds
MAX_NAME = 200  # characters of an agent, cell or tool name
MAX_TIME = 2**53  # times and indices stay exact in JSON numbers
FIELDS = ("agent", "read_set", "read_values", "read_registry", "planned_tool", "read_time",
          "write_set", "write_values", "write_registry", "write_time", "io", "co", "aborted",
          "preds")


class RecordError(CplError, ValueError):
    """A record (or its JSON) that the catalog's schema cannot hold; the message names the field."""


def _names(value) -> frozenset:
    return frozenset(value)


def _values(value) -> Mapping:
    return dict(value)


def _pairs(value) -> tuple:
    return tuple((cell, item) for cell, item in value)


@attrs.frozen(eq=False)
class OpRecord:
    """One committed operation (anomalies.md §1.2).

    ``read_values``/``write_values`` map the cells of ``read_set``/``write_set`` to
    the value read/written (a cell absent from the map reads as ``None``, NULL);
    ``io``/``co`` are (cell, value) pairs in issuance and commit order; ``preds``
    holds 1-based positions in the log.
    """

    agent: str
    read_set: frozenset = attrs.field(factory=frozenset, converter=_names)
    read_values: Mapping = attrs.field(factory=dict, converter=_values)
    read_registry: frozenset = attrs.field(factory=frozenset, converter=_names)
    planned_tool: str | None = None
    read_time: int = 0
    write_set: frozenset = attrs.field(factory=frozenset, converter=_names)
    write_values: Mapping = attrs.field(factory=dict, converter=_values)
    write_registry: frozenset = attrs.field(factory=frozenset, converter=_names)
    write_time: int = 0
    io: tuple = attrs.field(default=(), converter=_pairs)
    co: tuple = attrs.field(default=(), converter=_pairs)
    aborted: bool = False
    preds: frozenset = attrs.field(factory=frozenset, converter=_names)

    def read_value(self, cell: str):
        """``read_values[c]``: total, NULL (``None``) for a cell the map does not hold."""
        return self.read_values.get(cell)

    def write_value(self, cell: str):
        return self.write_values.get(cell)

    # Equality by the JSON form: values are JSON values (lists, dicts), not hashable.
    def __eq__(self, other):
        return type(other) is OpRecord and self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]  # unhashable, as its values are

    def to_json(self) -> dict:
        """A JSON-ready dict, sets sorted so equal records print equal."""
        return {
            "agent": self.agent,
            "read_set": sorted(self.read_set),
            "read_values": {cell: self.read_values[cell] for cell in sorted(self.read_values)},
            "read_registry": sorted(self.read_registry),
            "planned_tool": self.planned_tool,
            "read_time": self.read_time,
            "write_set": sorted(self.write_set),
            "write_values": {cell: self.write_values[cell] for cell in sorted(self.write_values)},
            "write_registry": sorted(self.write_registry),
            "write_time": self.write_time,
            "io": [[cell, value] for cell, value in self.io],
            "co": [[cell, value] for cell, value in self.co],
            "aborted": self.aborted,
            "preds": sorted(self.preds),
        }

    @classmethod
    def from_json(cls, data) -> OpRecord:
        """The record of a ``to_json`` dict; ``RecordError`` naming the field otherwise.

        Every field must be present (an emitter that forgets one is a bug worth
        hearing about); none may be of another type; no collection may hold more
        than ``MAX_ITEMS`` items, no name more than ``MAX_NAME`` characters.
        """
        if not isinstance(data, dict):
            raise RecordError(f"an operation record is a JSON object, not {_kind(data)}")
        unknown = sorted(str(key)[:MAX_NAME] for key in data if key not in FIELDS)
        if unknown:
            raise RecordError(f"unknown field {unknown[0]!r}; the fields are {', '.join(FIELDS)}")
        missing = [name for name in FIELDS if name not in data]
        if missing:
            raise RecordError(f"missing field {missing[0]!r}")
        agent = _name(data["agent"], "agent")
        planned = data["planned_tool"]
        return cls(
            agent=agent,
            read_set=_name_list(data["read_set"], "read_set"),
            read_values=_value_map(data["read_values"], "read_values"),
            read_registry=_name_list(data["read_registry"], "read_registry"),
            planned_tool=None if planned is None else _name(planned, "planned_tool"),
            read_time=_time(data["read_time"], "read_time"),
            write_set=_name_list(data["write_set"], "write_set"),
            write_values=_value_map(data["write_values"], "write_values"),
            write_registry=_name_list(data["write_registry"], "write_registry"),
            write_time=_time(data["write_time"], "write_time"),
            io=_sequence(data["io"], "io"),
            co=_sequence(data["co"], "co"),
            aborted=_flag(data["aborted"], "aborted"),
            preds=_index_list(data["preds"], "preds"),
        )


def history_from_json(data) -> tuple[OpRecord, ...]:
    """A log from a JSON list of records; the error names the record's 1-based position."""
    if not isinstance(data, list):
        raise RecordError(f"a history is a JSON list of records, not {_kind(data)}")
    if len(data) > MAX_ITEMS:
        raise RecordError(f"a history of {len(data)} records is more than {MAX_ITEMS}")
    records = []
    for position, item in enumerate(data, 1):
        try:
            records.append(OpRecord.from_json(item))
        except RecordError as error:
            raise RecordError(f"record {position}: {error}") from None
    return tuple(records)


def history_to_json(history) -> list:
    return [record.to_json() for record in history]


# ------------------------------------------------------------------ checks

def _kind(value) -> str:
    names = {type(None): "null", bool: "a boolean", int: "a number", float: "a number",
             str: "a string", list: "a list", dict: "an object"}
    return names.get(type(value), f"a {type(value).__name__}")


def _name(value, field: str) -> str:
    if not isinstance(value, str):
        raise RecordError(f"{field} must be a string, not {_kind(value)}")
    if not value or len(value) > MAX_NAME:
        raise RecordError(f"{field} must be a name of 1 to {MAX_NAME} characters "
                          f"({len(value)} given)")
    return value


def _sized(value, field: str, kind=list):
    if not isinstance(value, kind):
        raise RecordError(f"{field} must be {_kind(kind())}, not {_kind(value)}")
    if len(value) > MAX_ITEMS:
        raise RecordError(f"{field} holds {len(value)} items, more than {MAX_ITEMS}")
    return value


def _name_list(value, field: str) -> frozenset:
    names = [_name(item, f"{field} item") for item in _sized(value, field)]
    if len(set(names)) != len(names):
        raise RecordError(f"{field} lists a name twice; it is a set")
    return frozenset(names)


def _json_value(value, field: str):
    problem = value_problem(value)
    if problem:
        raise RecordError(f"{field} {problem}")
    return value


def _value_map(value, field: str) -> dict:
    return {_name(cell, f"{field} key"): _json_value(item, f"{field}[{cell!r}]")
            for cell, item in _sized(value, field, dict).items()}


def _sequence(value, field: str) -> tuple:
    pairs = []
    for position, item in enumerate(_sized(value, field), 1):
        if not (isinstance(item, list) and len(item) == 2):
            raise RecordError(f"{field} entry {position} must be a [cell, value] pair, "
                              f"not {_kind(item)}")
        pairs.append((_name(item[0], f"{field} entry {position} cell"),
                      _json_value(item[1], f"{field} entry {position} value")))
    return tuple(pairs)


def _time(value, field: str) -> int:
    if type(value) is not int:
        raise RecordError(f"{field} must be an integer, not {_kind(value)}")
    if not 0 <= value <= MAX_TIME:
        raise RecordError(f"{field} must be between 0 and {MAX_TIME}, not {value}")
    return value


def _index_list(value, field: str) -> frozenset:
    indices = [_time(item, f"{field} item") for item in _sized(value, field)]
    if any(index < 1 for index in indices):
        raise RecordError(f"{field} holds positions in the log, which start at 1")
    return frozenset(indices)


def _flag(value, field: str) -> bool:
    if type(value) is not bool:
        raise RecordError(f"{field} must be true or false, not {_kind(value)}")
    return value
