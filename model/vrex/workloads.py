"""Stream workloads for vrex.run (`--workload`): how a stream's frames are cut from its split's clips.

  edited    task.edited_stream: segments of 16-64 frames, each from a RANDOM start of a clip other
            than the previous segment's (the model issue's streams: cuts land anywhere in a clip)
  cutback   an interview-style edit between shots: segments of 8-24 frames, shots taken in turn,
            and each shot CONTINUES where the stream left it (a shot ends: back to its start). Every
            cut back returns to a view the stream saw some 8-48 frames earlier -- past the age cap
            and the device's resident frames, so only blocks demoted to the host tier can serve it.
            Shots are the split's clips; a split of one clip (validation) gives two shots, its halves.

Both return task.Segment lists (consecutive segments are cuts: task.cut_frames).
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from . import task

CUTBACK_SEG = (8, 24)


def cutback_stream(lengths: dict[str, int], frames: int, rng: np.random.Generator,
                   seg_min: int = CUTBACK_SEG[0], seg_max: int = CUTBACK_SEG[1]) -> list[task.Segment]:
    """@frames frames cutting between shots that each continue where they were left (see above)."""
    if frames < 1 or seg_min < 1 or seg_max < seg_min:
        raise ValueError(f"cutback: frames {frames}, segments {seg_min}..{seg_max}")
    keys = sorted(lengths)
    shots: list[tuple[str, int, int]] = []  # (clip, first frame, frames)
    if len(keys) == 1:
        n = lengths[keys[0]]
        if n < 2 * seg_min:
            raise ValueError(f"cutback: clip {keys[0]} has {n} frames, too few for two shots")
        shots = [(keys[0], 0, n // 2), (keys[0], n // 2, n - n // 2)]
    else:
        shots = [(k, 0, lengths[k]) for k in keys]
    cursor = [int(rng.integers(0, s[2])) for s in shots]
    out: list[task.Segment] = []
    left, prev = frames, -1
    while left > 0:
        pool = [i for i in range(len(shots)) if i != prev]
        i = pool[int(rng.integers(len(pool)))]
        clip, first, n_shot = shots[i]
        n = min(left, int(rng.integers(seg_min, seg_max + 1)))
        while n > 0:  # a shot that ends goes back to its start (one more cut)
            take = min(n, n_shot - cursor[i])
            out.append(task.Segment(clip, first + cursor[i], take))
            cursor[i] = (cursor[i] + take) % n_shot
            n -= take
            left -= take
        prev = i
    return out


WORKLOADS: dict[str, Callable[[dict[str, int], int, np.random.Generator], list[task.Segment]]] = {
    "edited": task.edited_stream,
    "cutback": cutback_stream,
}
