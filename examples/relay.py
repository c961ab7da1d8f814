"""Two relays and a stale message: why a guard reads ``@Device.on``.

The Device's switch goes on, the value travels Device → RelayA → Indicator;
then it goes off, and that value travels Device → RelayB → Indicator.  The
relays forward concurrently and delivery is not FIFO, so the *older* value
may be the last message the Indicator gets: its copy ``on`` is then stale.
The Indicator's decision reads ``@Device.on`` — the Device's value at the
latest Device event in the Indicator's causal past — which is the newer
value whichever message came last: RelayB's message carries the Device's
later state, and the monitor keeps the latest, not the last received.

    cpl show examples/relay.py --lifeline Indicator
    cpl run examples/relay.py --sim --seed 3
"""

from choreo import Choreography

c = relay = Choreography("relay")
Device, RelayA, RelayB, Indicator = c.lifelines("Device", "RelayA", "RelayB", "Indicator")

on = c.var("on", bool)
lit = c.var("lit", bool)


def switch_on(variables, rng):
    return True


def switch_off(variables, rng):
    return False


c.act(Device, switch_on, assigns=[on])
c.send(Device, RelayA, on, label="on")
c.act(Device, switch_off, assigns=[on])
c.send(Device, RelayB, on, label="off")
with c.parallel():
    with c.thread():
        c.send(RelayA, Indicator, on, label="relayed by A")
    with c.thread():
        c.send(RelayB, Indicator, on, label="relayed by B")
with c.if_("@Device.on", at=Indicator, label="light on?"):
    c.set(Indicator, lit=True)
with c.else_():
    c.set(Indicator, lit=False)

c.result(Indicator, on, lit)
c.result(Device, on)
