"""What travels on every message: the sender's clock and latest-value views.

One immutable value, one compact msgpack encoding, defined here and nowhere
else.  Views are bitmasks (bit k of ``views[B]`` is the k-th subformula
exported by B); variable views hold values, with ``UNSET`` for a variable
never set there.  Only the lifelines some guard reads have entries
(``Program.carried``, in that order): the others cost nothing, so the size
depends on the guards, not on how many lifelines take part.
"""

from __future__ import annotations

from typing import NamedTuple

import attrs
import msgpack

from ..errors import CplError
from ..lang import UNSET

_UNSET_CODE = 1  # msgpack extension type for UNSET
_WIDE_CODE = 2  # msgpack extension type for a view bitmask past 64 bits (big-endian bytes)
_WIDEST = 1 << 16  # bytes of such a bitmask: far more subformulas than any guard exports


class MetadataError(CplError, ValueError):
    """A metadata frame that does not decode: names what is wrong."""


@attrs.frozen
class Shape:
    """What a program's metadata must look like, per carried lifeline (``Program.shape``):
    how many subformula bits its view may have, how many variables its variable view
    holds.  A frame of another shape would make a monitor read past a view."""

    bits: tuple[int, ...]
    variables: tuple[int, ...]


class Metadata(NamedTuple):
    """Immutable like every value here; a NamedTuple rather than attrs because a
    send builds one per message and ``tuple.__new__`` costs half as much."""

    vc: tuple[int, ...]
    views: tuple[int, ...]
    vars: tuple[tuple, ...]

    def encode(self) -> bytes:
        return msgpack.packb((self.vc, self.views, self.vars), default=_encode_unset,
                             use_bin_type=True)

    @classmethod
    def decode(cls, data: bytes, entries: "int | Shape | None" = None) -> "Metadata":
        """Inverse of ``encode``; checks the shape: ``entries`` entries when given (the
        number of carried lifelines, ``len(Program.carried)``), and with a ``Shape``
        also each view's bits and each variable view's length."""
        try:
            vc, views, variables = msgpack.unpackb(data, ext_hook=_decode_unset, raw=False,
                                                   strict_map_key=False)
        except (ValueError, TypeError, msgpack.UnpackException) as error:
            raise MetadataError(
                f"metadata is not a msgpack [vc, views, vars] triple: {error}") from None
        shape = entries if isinstance(entries, Shape) else None
        n = len(vc) if entries is None else len(shape.variables) if shape else entries
        if not (isinstance(vc, list) and len(vc) == n
                and all(type(c) is int and c >= 0 for c in vc)):
            raise MetadataError(f"metadata clock must be {n} non-negative integers, got {vc!r}")
        if not (isinstance(views, list) and len(views) == n
                and all(type(v) is int and v >= 0 for v in views)):
            raise MetadataError(f"metadata views must be {n} non-negative bitmasks, got {views!r}")
        if not (isinstance(variables, list) and len(variables) == n
                and all(isinstance(v, list) for v in variables)):
            raise MetadataError(f"metadata variable views must be {n} lists, got {variables!r}")
        if shape is not None:
            _check_shape(views, variables, shape)
        return cls(tuple(vc), tuple(views), tuple(tuple(v) for v in variables))


def _check_shape(views, variables, shape: Shape) -> None:
    for b, (mask, values, bits, count) in enumerate(zip(views, variables, shape.bits,
                                                        shape.variables)):
        if mask >> bits:
            raise MetadataError(f"metadata view {b} has bits beyond the {bits} it may have")
        if len(values) != count:
            raise MetadataError(f"metadata variable view {b} must hold {count} values, "
                                f"got {len(values)}")


def _encode_unset(value):
    if value is UNSET:
        return msgpack.ExtType(_UNSET_CODE, b"")
    if type(value) is int and value > 0:  # a view of a lifeline exporting over 64 subformulas
        return msgpack.ExtType(_WIDE_CODE, value.to_bytes((value.bit_length() + 7) // 8, "big"))
    raise TypeError(f"cannot encode {type(value).__name__} in metadata")


def _decode_unset(code, data):
    if code == _UNSET_CODE:
        return UNSET
    if code == _WIDE_CODE and len(data) <= _WIDEST:
        return int.from_bytes(data, "big")
    raise MetadataError(f"unknown msgpack extension type {code} in metadata, or a view wider "
                        f"than {_WIDEST * 8:,} bits")
