"""The names of the simulator's schedules, in one place.

The simulator (:mod:`choreo.execution.simulate`), ``cpl explore``
(:mod:`choreo.exploration.explore`) and the ``cpl`` command's ``--schedule``
options take them from here; this module imports nothing, so the command's
parser lists them without loading the simulator.  What each schedule does:
:mod:`choreo.execution.simulate`.
"""

RANDOM = "random"  # the default: uniform among every event that can happen
SCHEDULES = (RANDOM, "late", "lifo", "starve")  # how the scheduler picks the next event
MIXED = "mixed"  # cpl explore's default: the schedules in turn, by seed
