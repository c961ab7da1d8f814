"""The release story's system, shared by the client and both services.

An Author asks a Reviewer to approve a version, then asks a Deployer to deploy it. The
Deployer's ``/deploy`` is guarded: the approval of *this exact version* must be in its
causal past, which it can only be through the tokens the Author carried from the Reviewer.

The Reviewer keeps the versions it approved in ``approved`` (a list that only grows), and
the guard asks whether the requested version is among them. ``@Reviewer.version ==
version`` would read only the Reviewer's *latest* review that reached the Deployer: with
several clients at once that is often another client's, and a just-reviewed deploy is
refused. A review in the Deployer's causal past stays in every later ``approved``.
"""

from __future__ import annotations

import os

from cpl.live import System

DEPLOY_GUARD = "member(version, @Reviewer.approved)"
SECRET_VARIABLE = "CPL_RELEASE_SECRET"  # hex; the processes of one run share it


def release_system(secret: bytes | None = None) -> System:
    """The system every process of the story builds alike (its fingerprint must match)."""
    if secret is None and os.environ.get(SECRET_VARIABLE):
        secret = bytes.fromhex(os.environ[SECRET_VARIABLE])
    return System(["Author", "Reviewer", "Deployer"],
                  {"deploy": ("Deployer", DEPLOY_GUARD)},
                  variables=["approved", "version", "deployed"],
                  secret=secret)
