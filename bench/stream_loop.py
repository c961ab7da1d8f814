"""stream_throughput.py's choreography: A sends B ``count`` data messages, one per loop iteration.

A owns the loop ``n < count``; every decision is also a control message to B
(the loop's outcome, which B's projection waits for), so B receives
``2 * count + 1`` messages in all: ``count`` data messages carrying ``n`` and
``count + 1`` control messages (the last says ``false``).

    cpl run bench/stream_loop.py --arg count=1000 --trace t.jsonl
"""

from choreo import Choreography

c = stream = Choreography("stream_loop")
A, B = c.lifelines("A", "B")

count = c.input("count", int, default=1000, at=A)
n = c.var("n", int, init={A: 0})


def step(variables, rng):
    return variables["n"] + 1


with c.while_("n < count", at=A, label="more?"):
    c.act(A, step, assigns=[n], reads=[n])
    c.send(A, B, n, label="data")

c.result(A, n)
c.result(B, n)
