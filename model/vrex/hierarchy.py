"""The KV memory hierarchy of one stream: device blocks, host memory, disk (issue 22 item 1).

The rules live ONCE, in C++ (vrex::lcp::KvTiers, model/cpp/include/vrex/lcp/tiers.hpp, bound as
hal.KvTiers): which blocks are cold, demotion, the spill to disk, dropping, promotion, staging, the
byte peaks and counters. The C++ runner uses it directly; this class drives it for the Python path
and keeps only what needs torch: the runner's views of every block (`runner.views`) follow each
move the C++ side reports -- to the host or disk copy (a zero-copy view of the C++ memory), to zeros
when dropped, back to the device memory when promoted -- and the runner's pins (`runner.pinned`).

The device tier is the HAL's block memory (the runner's block views, pinned). A cold block is
DEMOTED instead of dropped: its bytes are copied to host memory (beyond `host_blocks`, the copy
referenced least recently goes to a file on disk in `disk_dir`), the runner's views of it are
swapped to the copy, and its pin is dropped, so the device's zombie rule gives its memory back.
With recall, `on_demote` also hands the copy to the policy, which indexes it in the SHIE's host tier
(a fixed pool of host memory the HAL imported: vrex/lcp.py, model/cpp policy.hpp) so that a
similarity lookup finds it again. A question that selects it reads it back through `fetch` into a
device staging area of at most `fetch_blocks` blocks (the emulation has no DMA engine the binding
exposes: staging is a host tensor counted as device bytes). A block the device still holds (its
SHIE entry is live) and a new frame reuses is re-pinned: promoted without a copy.

Coldness (when a block leaves the device):
  zombie   unreferenced for more than `resident_frames` frames (the device's aging rule: what
           the HAL's zombie release retires; `resident_frames` = the device's zombie_frames)
  fifo     computed more than `resident_frames` frames ago, referenced or not (no zombie release:
           nothing tells the host a block went cold); a demoted block a window frame still
           references is staged back on the device for the window's attention every frame
  use      zombie release by use: unreferenced AND unread for more than `resident_frames` frames.
           A read counts when the questions' position-aware ReSV/WiCSum selection picks the block
           (`touch`: anchors.Managed, where a question's reach holds a demoted block and the
           selection runs) or when a recall installs a new frame's region from it. With refresh
           every block is referenced by its own frame only, so zombie = fifo; the reads are what
           tells the blocks the questions need from the ones they do not.

Bytes are counted per step: device = pinned blocks + blocks staged this step + metadata the
selectors keep on the device; total = device + host + disk.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
import torch

from . import lcp

TIERS = ("device", "host", "disk", "dropped")  # the C++ Tier codes, in order
COLDNESS = ("zombie", "fifo", "use")
Key = tuple[int, int]


class Entry(NamedTuple):
    """What the hierarchy knows of one block (a snapshot: KvTiers.entry)."""
    tier: str
    created: int                # frame that computed it
    last_ref: int               # last frame that referenced it
    last_read: int              # last frame whose read selected it or whose recall installed from it


@dataclass
class Bytes:
    device_peak: int = 0
    total_peak: int = 0
    host_peak: int = 0
    disk_peak: int = 0
    demoted: int = 0            # blocks demoted (device -> host)
    spilled: int = 0            # blocks host -> disk
    dropped: int = 0
    fetched: int = 0            # blocks staged back for a read
    promoted: int = 0           # demoted blocks a new frame reused while the device still held them
    recalled: int = 0           # blocks fetched back for a prefill (recall: a region installed from them)
    device_series: list[int] = field(default_factory=list)  # device bytes of every step (the plot's curve)
    fetched_series: list[int] = field(default_factory=list)  # blocks staged back in every step


class KvTiers:
    """Tiers of the distinct blocks of one StreamRunner (vrex/lcp.py). @drop: cold blocks are
    dropped (the no-demotion control: their views become zeros and reads of them are refused)."""

    def __init__(self, runner: Any, resident_frames: int, coldness: str = "zombie", drop: bool = False,
                 host_blocks: int = 0, disk_dir: str | None = None):
        if host_blocks < 0:
            raise ValueError("host_blocks must be >= 0 (0: no limit)")
        c = runner.s.model.c
        self.run = runner
        self.resident = resident_frames
        self.coldness = coldness
        self.drop = drop
        self.host_blocks = host_blocks
        self.block_bytes = runner.s.alloc.block_bytes
        self._regions = c.regions
        self._closed = Bytes()
        self._t: Any = lcp.hal.KvTiers(self.block_bytes, c.regions, c.window, resident_frames, coldness, drop,
                                  host_blocks, disk_dir or "")
        self.slot_key: list[list[Key]] = []  # per frame, the key of each region's block
        self.flat_keys: list[Key] = []       # the same, flat (slot = frame * 16 + region)
        self.meta_bytes = 0                  # selector metadata resident on the device
        self.on_drop: Any = None             # called with the key of every dropped block
        self.on_demote: Any = None           # called with (key, host copy) of every demoted block

    # ---- views (what needs torch) ---------------------------------------------------------------
    def _copy(self, key: Key) -> torch.Tensor:
        """A zero-copy tensor of block @key's host or disk copy (C++ memory; the array's base keeps
        the hierarchy alive), valid until the block moves again."""
        arr = self._t.copy(key)
        if arr is None:
            raise KeyError(f"block {key} has no host or disk copy")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            return self._block(arr)

    def _block(self, arr: np.ndarray) -> torch.Tensor:
        """The C++ side's bytes of one block @arr as the runner's block tensor (no copy)."""
        return torch.from_numpy(arr).view(torch.float32).view(self.run.s.shape)

    def _on_device(self, key: Key, staged: np.ndarray | None) -> torch.Tensor:
        """Block @key's bytes for this step: its device memory, or the copy @staged back from host/disk."""
        return self.run.s.view(self.run.pinned[key]) if staged is None else self._block(staged).clone()

    def _point(self, key: Key, tensor: torch.Tensor, frames: int) -> None:
        """Every view of block @key in frames before @frames reads @tensor."""
        for s in self._t.slots(key):
            f, r = divmod(s, self._regions)
            if f < frames:
                self.run.views[f][r] = tensor

    def _moved(self, left: list[Key], spilled: list[Key]) -> None:
        """Blocks left the device (demoted or dropped) and host copies went to disk: views and pins
        follow, then the policy hears of them (in the order they left)."""
        frames = len(self.slot_key)
        for key in left:
            del self.run.pinned[key]
            if self.drop:
                self._point(key, torch.zeros(self.run.s.shape), frames)
        if not self.drop:
            for key in dict.fromkeys([*left, *spilled]):
                self._point(key, self._copy(key), frames)
        for key in left:
            if self.drop:
                if self.on_drop is not None:
                    self.on_drop(key)
            elif self.on_demote is not None:
                self.on_demote(key, self._copy(key))  # the SHIE's host tier indexes a copy (recall: vrex/lcp.py)

    # ---- frames -------------------------------------------------------------------------------
    def add_frame(self, t: int, blocks: list[Any]) -> None:
        """The 16 region blocks of frame @t (just ended), computed or reused."""
        keys = [(b.id, b.generation) for b in blocks]
        frames = len(self.slot_key)
        for key in self._t.add_frame(self.run.st, t, blocks):
            # Promoted (pinned again): every view goes back to the device memory (the same bytes).
            b = blocks[keys.index(key)]
            self.run.pinned[key] = b
            self._point(key, self.run.s.view(b), frames)
        self.slot_key.append(keys)
        self.flat_keys.extend(keys)

    def slot_tiers(self) -> np.ndarray:
        """TIERS index of every slot's block so far (frame-major)."""
        return self._t.slot_tiers()

    def touch(self, key: Key, t: int) -> None:
        """Frame @t's read selected block @key (or a recall installed from it): with coldness `use`
        it stays warm for `resident_frames` more frames."""
        self._t.touch(key, t)

    def cold(self, key: Key, t: int) -> bool:
        """Whether block @key is cold after frame @t - 1 (the rule `age` applies)."""
        return self._t.cold(key, t)

    def age(self, t: int) -> None:
        """After frame @t - 1 ended (t = frames seen): demote (or drop) every cold device block."""
        self._moved(*self._t.age(self.run.st, t))

    # ---- moves --------------------------------------------------------------------------------
    def demote(self, key: Key) -> None:
        """Device block @key leaves the device now (an eviction rule's choice)."""
        self._moved([key], self._t.demote(self.run.st, key))

    def fetch(self, key: Key) -> torch.Tensor:
        """The bytes of block @key on the device: its own memory, or a copy staged from host/disk
        (counted as device bytes for this step: questions are answered one after the other, so the
        staging area holds one read at a time). A dropped block cannot be fetched (KeyError)."""
        return self._on_device(key, self._t.fetch(key))

    def fetch_prefill(self, key: Key) -> torch.Tensor:
        """Block @key's bytes for a new frame's region (a recall): its device memory when it is
        still there, else staged back from host/disk for this step's prefill."""
        return self._on_device(key, self._t.fetch_prefill(key))

    def end_read(self) -> None:
        """One question's read is over: its staging area is free again."""
        self._t.end_read()

    # ---- what it knows --------------------------------------------------------------------------
    def __contains__(self, key: Key) -> bool:
        return self._t.entry(key) is not None

    def entry(self, key: Key) -> Entry:
        e = self._t.entry(key)
        if e is None:
            raise KeyError(f"block {key} is not in the hierarchy")
        return Entry(TIERS[e[0]], e[1], e[2], e[3])

    def readable(self, key: Key) -> bool:
        return self.entry(key).tier != "dropped"

    def on_device(self, key: Key) -> bool:
        return self.entry(key).tier == "device"

    def keys_on(self, tier: str) -> list[Key]:
        """The blocks on @tier, in the order they entered."""
        return self._t.keys_on(TIERS.index(tier))

    def slots(self, key: Key) -> list[tuple[int, int]]:
        """(frame, region) of every slot that references block @key, in order."""
        return [divmod(s, self._regions) for s in self._t.slots(key)]

    def copy(self, key: Key) -> torch.Tensor:
        """Block @key's host or disk copy (a view: valid until the block moves again)."""
        return self._copy(key)

    def count(self, tier: str) -> int:
        return self._t.count(TIERS.index(tier))

    # ---- accounting ---------------------------------------------------------------------------
    def stage_window(self, t: int) -> None:
        """The frames the next prefill reads (the visual window) must be on the device: fifo
        coldness demotes blocks they still reference, which are staged back."""
        self._t.stage_window(t)

    def account(self) -> None:
        """Records this step's bytes into the peaks and clears the staging area."""
        self._t.account(self.meta_bytes)

    @property
    def bytes(self) -> Bytes:
        return self._closed if self._t is None else Bytes(**self._t.bytes)

    def close(self) -> None:
        """Lets the C++ hierarchy go (its host memory and its disk file, which has no name: nothing
        is left behind) once no view of its copies is left; the bytes stay readable."""
        if self._t is not None:
            self._closed = self.bytes
            self._t = None
        self.on_drop = self.on_demote = None
