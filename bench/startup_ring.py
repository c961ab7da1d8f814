"""The start-up benchmark's wide choreography: 32 lifelines passing a token round a ring.

L00 sets the token and sends it to L01, which forwards it to L02, and so on
until L31 hands it back to L00: one round, 32 messages, every lifeline busy.

    cpl run bench/startup_ring.py --trace t.jsonl
"""

from choreo import Choreography

SIZE = 32

c = ring = Choreography("startup_ring")
names = [f"L{i:02d}" for i in range(SIZE)]
lifelines = c.lifelines(*names)
token = c.var("token", int)

c.set(lifelines[0], token=1)
for i, here in enumerate(lifelines):
    c.send(here, lifelines[(i + 1) % SIZE], token, label=f"token {i}")

c.result(lifelines[0], token)
