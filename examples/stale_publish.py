"""Publishing on a stale fact, a detector of your own for it, and the guard that prevents it.

A Source states a fact (version 1) and hands it to a Writer.  While the
Writer drafts from it, the Source reviews the fact: half the time it corrects
it (version 2); either way its review is final, and it tells the Publisher.
Unguarded, the Publisher publishes the draft as soon as it arrives, so when
the correction came first the draft goes out on a stale fact.  No catalog
anomaly describes this (there is no Store here), so ``cpl explore`` counts it
only with a detector of yours: ``published_stale`` below, a function of the
trace that returns the events where the bad outcome happened
(docs/anomalies.md, "Your own bad outcomes").

    cpl explore examples/stale_publish.py --name unguarded --runs 12 \\
        --detect examples/stale_publish.py:published_stale
    cpl run examples/stale_publish.py --name unguarded --sim --seed 0 --trace bad.jsonl
    cpl detect bad.jsonl --detect examples/stale_publish.py:published_stale

Guarded, the Publisher publishes once the review has reached it, choosing by
a stable fact (pattern P-stable): ``final`` is set by the review, after which
the fact never changes, so ``@Source.final == true && @Source.version ==
draft`` holds only once nothing can change it.  True: the draft is fresh,
publish it; false: publish the reviewed version.  (Here the choice waits for
the review, so ``@Source.version == draft`` alone would do too; ``final`` keeps
the guard right if the choice were moved before the review arrives.)
"""

from choreo import Choreography, coin

FRESH = "@Source.final == true && @Source.version == draft"


def state_fact(variables, rng):
    return 1, False


def review_fact(variables, rng):
    """Half the time the fact needs a correction; either way the review is final."""
    return variables["version"] + coin(rng, 0.5), True


def write_draft(variables, rng):
    return variables["version"]


def publish(variables, rng):
    return variables["draft"]


def publish_reviewed(variables, rng):
    return variables["version"]


def _build(name: str, guarded: bool) -> Choreography:
    c = Choreography(name)
    Source, Writer, Publisher = c.lifelines("Source", "Writer", "Publisher")
    version = c.var("version", int)
    final = c.var("final", bool)
    draft = c.var("draft", int)
    published = c.var("published", int)

    c.act(Source, state_fact, assigns=[version, final])
    c.send(Source, Writer, version, label="fact")
    with c.parallel():
        with c.thread():
            c.act(Writer, write_draft, assigns=[draft], reads=[version])
            c.send(Writer, Publisher, draft, label="draft")
            if not guarded:  # publishes as soon as the draft is in
                c.act(Publisher, publish, assigns=[published], reads=[draft])
        with c.thread():
            c.act(Source, review_fact, assigns=[version, final], reads=[version])
            c.send(Source, Publisher, version, final, label="review")
    if guarded:  # after both: on a visibly final fact, the draft or the reviewed version
        with c.if_(FRESH, at=Publisher, label="draft fresh?"):
            c.act(Publisher, publish, assigns=[published], reads=[draft])
        with c.else_():
            c.act(Publisher, publish_reviewed, assigns=[published], reads=[version])
    c.result(Publisher, draft, published)
    c.result(Source, version)
    return c


unguarded = _build("unguarded", guarded=False)
guarded = _build("guarded", guarded=True)


def published_stale(trace):
    """The Publisher's events that publish a version older than the Source's latest one at
    that moment of the run (a trace lists events in an order they happened in)."""
    latest = None
    for event in trace.events:
        if event.lifeline == "Source" and "version" in event.set:
            latest = event.set["version"]
        if event.lifeline == "Publisher" and "published" in event.set \
                and latest is not None and event.set["published"] < latest:
            yield event
