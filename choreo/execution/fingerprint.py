"""The fingerprint of a run's plan: which choreography, from which source, on which inputs.

Every lifeline process loads the choreography itself — a lifeline on another
host from its own copy of the file.  Two copies that differ would run two
protocols that only look alike, and nothing would say so: the supervisor
hands each lifeline the fingerprint of the plan it loaded, and a lifeline
whose own differs is refused.
"""

from __future__ import annotations

import hashlib
import json
import os

from choreo.authoring import walk


def fingerprint(choreography, inputs: dict, seed: int) -> str:
    """A hash of the choreography's source file and of the files it includes, its name, the
    inputs and the seed (16 hex digits)."""
    digest = hashlib.sha256()
    for path in sources(choreography):
        with open(path, "rb") as source:
            _part(digest, source.read())
    _part(digest, json.dumps([choreography.name, inputs, seed], sort_keys=True).encode())
    return digest.hexdigest()[:16]


def sources(choreography) -> list[str]:
    """The files the choreography's statements and declarations were written in, its own
    first (an included sub-choreography's statements keep pointing at their file)."""
    wheres = [choreography.where, *(s.where for s in walk(choreography.body)),
              *(v.where for v in choreography.variables.values()),
              *(i.where for i in choreography.inputs.values())]
    paths = dict.fromkeys(os.path.abspath(w.path) for w in wheres if w is not None)
    return [path for path in paths if os.path.isfile(path)]


def _part(digest, data: bytes) -> None:
    """Each part with its length first: no two different sequences of parts hash alike."""
    digest.update(len(data).to_bytes(8, "big"))
    digest.update(data)
