"""The three agents of the send_email story and the one guard they share.

Both processes build the same ``System`` (same lifelines, guard and variables,
hence the same fingerprint) with the same secret, so each accepts the other's
tokens and nobody else's.
"""

from cpl.live import System

LIFELINES = ["Drafter", "Approver", "Mailer"]
SEND = "send"  # the guard's label
GUARD = "@Approver(approved == true) && @Approver.draft == draft"
SECRET_VARIABLE = "MAIL_SECRET"  # the environment variable run.py passes the secret in


def mail_system(secret: bytes) -> System:
    """The Mailer sends a draft only if an approval of that very draft is in its causal
    past: the approval reached it through the messages it received, not a shared flag."""
    return System(LIFELINES, {SEND: ("Mailer", GUARD)}, variables=["approved", "draft"],
                  secret=secret)
