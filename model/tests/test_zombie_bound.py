"""The coldness bound (vrex/zombie_bound.py) on logged reads whose answer is known: a stream whose
questions re-read what they read before (zombie release by use keeps it: the lift is high, the replay
stages almost nothing) and one whose questions are independent of the past reads (lift ~1)."""
from __future__ import annotations

import numpy as np

from vrex import zombie_bound as zb

W, R, REACH, CAP, RES = 4, 16, 2, 4, 5


def stream(reads: list[tuple[int, int, list[int]]], steps: int) -> list[dict]:
    return [{"reads": reads, "device_series": [0] * steps}]


def test_rereads_are_kept_by_use_and_seen_by_the_lift() -> None:
    # Every step asks about region 3 four frames back and selects it and the next frame's: the block
    # selected at t (frame t - 3, in the window) is demanded at t + 1 (then outside the window).
    reads = [(t, t - 4, [(t - 4) * R + 3, (t - 3) * R + 3]) for t in range(6, 40)]
    b = zb.bound(stream(reads, 40), [[20, 20]], W, R, REACH, CAP, RES, reps=50)
    assert b["demand_age"]["age_4"] == 34 and b["demand_age"]["age_5"] == 0
    assert b["use_replay"]["use_4"]["staged"] <= 1 and b["use_replay"]["use_4"]["extra_blocks_per_step"] < 4
    assert b["reread"]["lift"]["mean"] > 10
    # The clairvoyant bound saves what age(5) saves with a sixteenth of its memory (one block a step).
    row = b["vs_window_alone"]["age_5"]
    assert row["bound_over_age"]["mean"] == 1.0 and row["bound_memory_share"]["mean"] < 0.1


def test_independent_questions_give_no_lift() -> None:
    # Questions about a random region 1..12 frames back (each selects the block asked about), the
    # regions drawn independently of the past: a read says nothing about the next reads.
    rng = np.random.default_rng(0)
    reads = []
    for t in range(13, 400):
        for _ in range(4):
            k, r = int(rng.integers(1, 13)), int(rng.integers(0, R))
            reads.append((t, t - k, [(t - k) * R + r]))
    b = zb.bound(stream(reads, 400), [[40] * 10], W, R, REACH, CAP, RES, reps=200)
    lo, hi = b["reread"]["lift"]["ci95"]
    assert lo < 1.0 < hi or abs(b["reread"]["lift"]["mean"] - 1.0) < 0.15
    # The use replay stages about what creation age stages at about its memory (no better rule).
    use, age4, age5 = b["use_replay"]["use_4"], b["staged_age"]["age_4"], b["staged_age"]["age_5"]
    share = use["extra_blocks_per_step"] / 16.0  # of age(5)'s extra frame
    assert use["staged"] >= age4 - share * (age4 - age5) - 0.1 * (age4 - age5)
