"""The stop benchmark's choreography: two lifelines in a long loop, each action holding its
lifeline's only thread for ``pause`` seconds (``time.sleep``, as a synchronous tool call does).

    cpl run bench/stops_loop.py --arg pause=3 --timeout 2

With ``pause=3`` nearly every moment of a run finds one lifeline inside an action: what
``bench/stops.py`` and ``tests/test_runtime_stops.py`` stop; ``pause=0`` is a plain busy
loop (``tests/test_runtime_scope.py``).
"""

import time

from choreo import Choreography

c = stops = Choreography("stops")
A, B = c.lifelines("A", "B")
rounds = c.input("rounds", int, default=100000, at=A)
pause = c.input("pause", float, default=0.0, at=A)
k = c.var("k", int, init={A: 0})


def work(variables, rng):
    time.sleep(variables["pause"])
    return variables["k"] + 1


c.send(A, B, pause, label="pause")
with c.while_("k < rounds", at=A, label="again?"):
    c.act(A, work, assigns=[k], reads=[k, pause])
    c.send(A, B, k, label="k")
    c.act(B, work, assigns=[k], reads=[k, pause])
    c.send(B, A, k, label="back")
