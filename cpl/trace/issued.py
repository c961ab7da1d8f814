"""Which ids a trace has used so far, in little memory for the ids runs give out.

Checking that event ids and message ids are unique means remembering every
one, and a long run has millions.  A run names its events ``A.1, A.2, …``
and its messages ``A:1, A:2, …``: a per-lifeline counter.  ``Issued`` keeps
such a run of names as one count per lifeline and only the other names in a
set, so checking a recorded run keeps a few integers however long it is,
and any naming still works exactly.
"""

from __future__ import annotations


class Issued:
    """A set of names; ``f"{lifeline}{sep}{n}"`` for n = 1, 2, … in order are stored as counts."""

    __slots__ = ("sep", "count", "expect", "other", "used")

    def __init__(self, lifelines, sep: str):
        self.sep = sep
        self.count = dict.fromkeys(lifelines, 0)  # lifeline -> the counter's last n
        self.expect = {name: f"{name}{sep}1" for name in lifelines}  # the counter's next name
        self.other: set[str] = set()
        self.used = False  # whether any counter has run: until then no name can be counted

    def fresh(self, name: str, lifeline=None) -> bool:
        """Whether ``name`` was not added yet (``lifeline``: where it is used, for speed)."""
        if type(lifeline) is str and name == self.expect.get(lifeline):
            return name not in self.other
        return name not in self.other and not (self.used and self._counted(name))

    def add(self, name: str, lifeline: str) -> None:
        """Add a fresh name, used on ``lifeline`` (a known one)."""
        if name == self.expect[lifeline]:
            self.used = True
            n = self.count[lifeline] + 1
            self.count[lifeline] = n
            self.expect[lifeline] = f"{lifeline}{self.sep}{n + 1}"
        else:
            self.other.add(name)

    def _counted(self, name) -> bool:
        prefix, sep, digits = name.rpartition(self.sep)
        if not sep or prefix not in self.count or not (0 < len(digits) < 19 and digits.isascii()
                                                       and digits.isdigit()) or digits[0] == "0":
            return False
        return int(digits) <= self.count[prefix]
