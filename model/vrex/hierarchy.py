"""The KV memory hierarchy of one stream: device blocks, host memory, disk (issue 22 item 1).

The device tier is the HAL's block memory (the runner's block views, pinned). A cold block is
DEMOTED instead of dropped: its bytes are copied to host memory (beyond `host_blocks`, to a file on
disk), the runner's views of it are swapped to the copy, and its pin is dropped, so the device's
zombie rule gives its memory back. With recall, `on_demote` also hands the copy to the policy,
which indexes it in the SHIE's host tier (a fixed pool of host memory the HAL imported: vrex/lcp.py,
model/cpp policy.hpp) so that a similarity lookup finds it again. A question that selects it reads it back through `fetch` into a
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

import os
import tempfile
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

TIERS = ("device", "host", "disk", "dropped")
COLDNESS = ("zombie", "fifo", "use")


@dataclass
class Entry:
    block: Any                  # the hal.KvBlock (its handle; memory valid while pinned or SHIE-live)
    created: int                # frame that computed it
    last_ref: int               # last frame that referenced it
    last_read: int = -1         # last frame whose read selected it or whose recall installed from it
    tier: str = "device"
    host: torch.Tensor | None = None   # host or disk copy (disk: a memmap-backed tensor)
    disk_slot: int = -1
    slots: list[tuple[int, int]] = field(default_factory=list)  # (frame, region) that reference it


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
        if coldness not in COLDNESS:
            raise ValueError(f"coldness must be one of {', '.join(COLDNESS)}, not '{coldness}'")
        if resident_frames < runner.s.model.c.window:
            raise ValueError(f"resident_frames {resident_frames} is below the visual window "
                             f"{runner.s.model.c.window}: the prefill reads those frames every step")
        if host_blocks < 0:
            raise ValueError("host_blocks must be >= 0 (0: no limit)")
        self.run = runner
        self.resident = resident_frames
        self.coldness = coldness
        self.drop = drop
        self.host_blocks = host_blocks
        self.block_bytes = runner.s.alloc.block_bytes
        self.entries: dict[tuple[int, int], Entry] = {}
        self.slot_key: list[list[tuple[int, int]]] = []  # per frame, the key of each region's block
        self.flat_keys: list[tuple[int, int]] = []       # the same, flat (slot = frame * 16 + region)
        self._codes = np.zeros(1024, dtype=np.int8)      # per slot, TIERS index of its block
        self.bytes = Bytes()
        self._fetched_at_account = 0               # bytes.fetched at the last account()
        self.staged: set[tuple[int, int]] = set()  # keys staged for the current read (one question)
        self.stage_peak = 0                        # most blocks one read of this step staged
        self.window_staged: set[tuple[int, int]] = set()  # staged for this step's prefill window
        self.meta_bytes = 0                        # selector metadata resident on the device
        self._disk_dir = disk_dir
        self._disk: np.memmap | None = None
        self._disk_path: str | None = None
        self._disk_used = 0
        self._free_disk: list[int] = []
        self.on_drop: Any = None                   # called with the key of every dropped block
        self.on_demote: Any = None                 # called with (key, host copy) of every demoted block

    # ---- frames -------------------------------------------------------------------------------
    def add_frame(self, t: int, blocks: list[Any]) -> None:
        """The 16 region blocks of frame @t (just ended), computed or reused."""
        keys = []
        for r, b in enumerate(blocks):
            key = (b.id, b.generation)
            e = self.entries.get(key)
            if e is None:
                e = self.entries[key] = Entry(b, t, t)
            elif e.tier != "device":
                self._promote(key, e)
            e.last_ref = t
            e.slots.append((t, r))
            keys.append(key)
        self.slot_key.append(keys)
        base = len(self.flat_keys)
        self.flat_keys.extend(keys)
        if len(self.flat_keys) > len(self._codes):
            self._codes = np.concatenate([self._codes, np.zeros(len(self._codes), dtype=np.int8)])
        for r, key in enumerate(keys):
            self._codes[base + r] = TIERS.index(self.entries[key].tier)

    def slot_tiers(self) -> np.ndarray:
        """TIERS index of every slot's block so far (frame-major)."""
        return self._codes[: len(self.flat_keys)]

    def _set_tier(self, e: Entry, tier: str) -> None:
        e.tier = tier
        code = TIERS.index(tier)
        n = self.run.s.model.c.regions
        for f, r in e.slots:
            if f * n + r < len(self.flat_keys):
                self._codes[f * n + r] = code

    def _promote(self, key: tuple[int, int], e: Entry) -> None:
        """A demoted block the device still holds was reused by a new frame: pin it again; every view
        of it goes back to the device memory (same bytes), the copy is freed."""
        st = self.run.st
        st.pin(e.block)
        self.run.pinned[key] = e.block
        dev = self.run.s.view(e.block)
        if e.host is not None and not torch.equal(dev, e.host):
            raise RuntimeError(f"block {key}: device bytes differ from its demoted copy")
        for f, r in e.slots:
            self.run.views[f][r] = dev
        self._free_copy(e)
        self._set_tier(e, "device")
        self.bytes.promoted += 1

    def touch(self, key: tuple[int, int], t: int) -> None:
        """Frame @t's read selected block @key (or a recall installed from it): with coldness `use`
        it stays warm for `resident_frames` more frames."""
        e = self.entries[key]
        e.last_read = max(e.last_read, t)

    def cold(self, e: Entry, t: int) -> bool:
        if self.coldness == "zombie":
            ref = e.last_ref
        elif self.coldness == "use":
            ref = max(e.last_ref, e.last_read)
        else:
            ref = e.created
        return t - ref >= self.resident

    def age(self, t: int) -> None:
        """After frame @t - 1 ended (t = frames seen): demote (or drop) every cold device block."""
        for key, e in self.entries.items():
            if e.tier == "device" and self.cold(e, t):
                self.demote(key)

    # ---- moves --------------------------------------------------------------------------------
    def demote(self, key: tuple[int, int]) -> None:
        e = self.entries[key]
        if e.tier != "device":
            raise ValueError(f"block {key} is not on the device ({e.tier})")
        dev = self.run.s.view(e.block)
        if self.drop:
            copy = torch.zeros_like(dev)
            self._set_tier(e, "dropped")
            self.bytes.dropped += 1
        else:
            copy = dev.clone()
            self._set_tier(e, "host")
            self.bytes.demoted += 1
        for f, r in e.slots:
            self.run.views[f][r] = copy
        e.host = None if self.drop else copy
        if self.drop and self.on_drop is not None:
            self.on_drop(key)
        if not self.drop and self.on_demote is not None:
            self.on_demote(key, copy)  # the SHIE's host tier indexes a copy (recall: vrex/lcp.py)
        self.run.st.unpin(e.block)
        del self.run.pinned[key]
        if not self.drop and self.host_blocks and self.count("host") > self.host_blocks:
            self._spill()

    def _spill(self) -> None:
        """Host over its limit: the least recently referenced host block goes to disk."""
        key, e = min(((k, x) for k, x in self.entries.items() if x.tier == "host"), key=lambda kv: kv[1].last_ref)
        if self._free_disk:
            slot = self._free_disk.pop()
        else:
            slot = self._disk_used
            self._disk_used += 1
        mm = self._disk_file()
        assert e.host is not None
        mm[slot] = e.host.numpy()
        mm.flush()
        e.disk_slot = slot
        self._set_tier(e, "disk")
        self._point_at_disk(e)
        self.bytes.spilled += 1

    def _point_at_disk(self, e: Entry) -> None:
        assert self._disk is not None
        e.host = torch.from_numpy(np.asarray(self._disk[e.disk_slot])).view(self.run.s.shape)
        for f, r in e.slots:
            self.run.views[f][r] = e.host

    def _disk_file(self) -> np.memmap:
        """The spill file, grown (doubling) to hold every used slot; views move to the new mapping."""
        if self._disk is not None and self._disk.shape[0] >= self._disk_used:
            return self._disk
        if self._disk_path is None:
            fd, self._disk_path = tempfile.mkstemp(prefix="vrex-kv-", suffix=".bin", dir=self._disk_dir)
            os.close(fd)
        rows = max(64, self._disk_used, 2 * (self._disk.shape[0] if self._disk is not None else 0))
        os.truncate(self._disk_path, rows * self.block_bytes)
        self._disk = np.memmap(self._disk_path, dtype=np.float32, mode="r+", shape=(rows, *self.run.s.shape))
        for e in self.entries.values():
            if e.tier == "disk":
                self._point_at_disk(e)
        return self._disk

    def _free_copy(self, e: Entry) -> None:
        if e.tier == "disk":
            self._free_disk.append(e.disk_slot)
            e.disk_slot = -1
        e.host = None

    def fetch(self, key: tuple[int, int], window: bool = False) -> torch.Tensor:
        """The bytes of block @key on the device: its own memory, or a copy staged from host/disk
        (counted as device bytes for this step: questions are answered one after the other, so the
        staging area holds one read at a time; @window: staged for the prefill's window, which
        every read of the step sees). A dropped block cannot be fetched."""
        e = self.entries[key]
        if e.tier == "device":
            return self.run.s.view(e.block)
        if e.tier == "dropped" or e.host is None:
            raise KeyError(f"block {key} was dropped: nothing to fetch")
        staged = self.window_staged if window else self.staged
        if key not in staged:
            staged.add(key)
            self.bytes.fetched += 1
        return e.host.clone()

    def fetch_prefill(self, key: tuple[int, int]) -> torch.Tensor:
        """Block @key's bytes for a new frame's region (a recall): its device memory when it is
        still there, else staged back from host/disk for this step's prefill."""
        self.bytes.recalled += 1
        return self.fetch(key, window=True)

    def end_read(self) -> None:
        """One question's read is over: its staging area is free again."""
        self.stage_peak = max(self.stage_peak, len(self.staged - self.window_staged))
        self.staged.clear()

    def readable(self, key: tuple[int, int]) -> bool:
        return self.entries[key].tier != "dropped"

    def on_device(self, key: tuple[int, int]) -> bool:
        return self.entries[key].tier == "device"

    # ---- accounting ---------------------------------------------------------------------------
    def count(self, tier: str) -> int:
        return sum(1 for e in self.entries.values() if e.tier == tier)

    def stage_window(self, t: int) -> None:
        """The frames the next prefill reads (the visual window) must be on the device: fifo
        coldness demotes blocks they still reference, which are staged back."""
        w = self.run.s.model.c.window
        for f in range(max(0, t - w + 1), t):
            for key in self.slot_key[f]:
                if not self.on_device(key) and self.readable(key):
                    self.fetch(key, window=True)

    def account(self) -> None:
        """Records this step's bytes into the peaks and clears the staging area."""
        bb = self.block_bytes
        self.end_read()
        dev = (self.count("device") + len(self.window_staged) + self.stage_peak) * bb + self.meta_bytes
        host = self.count("host") * bb
        disk = self.count("disk") * bb
        b = self.bytes
        b.device_peak = max(b.device_peak, dev)
        b.host_peak = max(b.host_peak, host)
        b.disk_peak = max(b.disk_peak, disk)
        b.total_peak = max(b.total_peak, dev + host + disk)
        b.device_series.append(dev)
        b.fetched_series.append(b.fetched - self._fetched_at_account)
        self._fetched_at_account = b.fetched
        self.stage_peak = 0
        self.window_staged.clear()

    def close(self) -> None:
        self._disk = None
        if self._disk_path is not None:
            os.unlink(self._disk_path)
            self._disk_path = None
