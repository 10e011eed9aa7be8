"""How long an agent waits for the controller's answer to a report or an ACK before it sends
the same message again (docs/scale.md, "Messages at scale")."""

from __future__ import annotations

import random
from collections.abc import Sequence

# a report is sent again after each wait without its receipt: 2 s twice (one or two lost
# copies cost what they did), then 1.5x longer each time up to 8 s (a controller behind on a
# burst of reports is not sent a copy every 2 s), each 0-25% longer at random (a fleet that
# reported together does not re-send together); after the last wait the series starts again.
# Every copy has one reply subject: the receipt of any copy ends the wait
# (Bus.request_patiently). How the waits were chosen: docs/scale.md, "Decisions".
REPORT_WAITS_S = (2.0, 2.0, 3.0, 4.5, 6.75, 8.0, 8.0, 8.0, 8.0, 8.0)
REPORT_JITTER = 0.25


# The join's ACK: the same ACK again, with one reply subject, after 1 s (a controller that
# is up answers in milliseconds), then backing off as a report does; the controller handles
# copies of one ACK once. A new ACK every second from each agent of a large job would flood a
# controller behind on its queue (docs/scale.md, "Messages at scale").
JOIN_WAITS_S = (1.0, *REPORT_WAITS_S[1:])
# how long a join waits for a controller that receives its ACK but does not answer (behind,
# or wedged) before the agent falls back as if no controller were there
JOIN_PATIENCE_S = 600.0


def report_waits(rng: random.Random | None = None) -> list[float]:
    """One report's waits for its receipt (REPORT_WAITS_S, each stretched by the jitter)."""
    return _stretched(REPORT_WAITS_S, rng)


def join_waits(rng: random.Random | None = None) -> list[float]:
    """One ACK's waits for its reply (JOIN_WAITS_S, each stretched by the jitter)."""
    return _stretched(JOIN_WAITS_S, rng)


def _stretched(waits: Sequence[float], rng: random.Random | None) -> list[float]:
    draw = (rng or random).random
    return [w * (1 + REPORT_JITTER * draw()) for w in waits]
