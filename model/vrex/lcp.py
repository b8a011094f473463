"""The LCP layer: the decoder's KV cache IS vrex KV blocks, and region reuse skips prefill.

`vrex.enable(model)` returns a `Session` bound to a libvrex-hal device and allocator whose geometry is
the model's. `Session.stream()` gives a `StreamRunner`; `StreamRunner.step(luma, tokens, q_region,
q_target)` prefills one frame and answers its questions.

The cache: one KV block per (frame, region), layout [layer][K=0,V=1][kv_head][token][head_dim] fp32,
viewed as a torch tensor over the block's device memory (buffer protocol, no copy). K is stored
BEFORE RoPE (decoder.py), so a reused block takes the position of the frame that references it. A
long stream keeps every frame's blocks (the questions read the whole cache): the runner pins each
block it computes, so the device's zombie rule retires only the block's SHIE entry (it stops being a
reuse candidate) and never its memory. Blocks are unpinned when the runner closes.

Which regions reuse which block is the POLICY's decision (`Policy`, chosen by name in
`Options.policy`; `POLICIES` is the registry another policy plugs into):
  exact   every region computed (the baseline: the full, growing cache)
  vrex    the C++ policy over libvrex-hal (model/cpp, vrex/lcp/policy.hpp: the one the C++ runner
          uses too), driven through the binding: candidates from the HAL (temporal lookup at offset
          -1, similarity lookup at the frame's fingerprint within `radius`, past frames only; with
          fcc=False the temporal candidate counts whatever the fingerprints say) in one lookup batch
          per frame, a guard (sign-random-projection hash, 32 bits, of the region's layer-0
          pre-rotation keys -- torch computes it -- against the hash recorded when the candidate
          was computed: Hamming <= guard_bits) and an age cap (at most max_age frames since the
          block was computed). The values are frozen on the validation clip (docs/model.md).
Whatever the policy, a frame's blocks are applied in one call (hal.apply_frame: alias the chosen
blocks, allocate and pin the rest), so a frame costs five calls into the HAL: begin_frame, choose,
apply_frame, computed, end_frame (FrameStats.emu_s times them).

Two ways of reusing a region without aliasing (issue 22), both skipping its prefill:
  install   a policy answers a region with an `Install` (bytes + the block they came from) instead of
            a block: the region gets a new block filled with those bytes (the recall of a block past
            the device's candidates, fetched back from the memory hierarchy: vrex/anchors.py)
  refresh   (Options.refresh) every reused region gets a new block holding the candidate's KV with
            layer 0 written fresh: the layer-0 keys the guard computed anyway and the layer-0
            values, which are the frame's own encoder features (no FLOPs). The question's answer
            reads layer-0 values (decoder.py), so the answer never reads stale features; the deeper
            layers (the prefill's cost) stay reused. It costs memory (no aliasing), not compute.
"""
from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
import torch

from . import script
from .decoder import Config, Decoder, step_flops

try:
    import _vrexhal as hal  # type: ignore[import-not-found]
except ImportError as e:  # pragma: no cover - message for a missing build
    raise ImportError("vrex: the _vrexhal extension is not on PYTHONPATH (cmake builds it into "
                      "build/model)") from e

HASH_BITS = script.HASH_BITS
HASH_SEED = script.HASH_SEED
# Emulated device memory for long streams: every block of every frame stays resident.
EMU_BANKS = 64
EMU_BANK_MIB = 16


@dataclass
class Options:
    policy: str = "vrex"        # a key of POLICIES
    fcc: bool = True            # filter the temporal candidate by the FCC fingerprint radius
    radius: int = 20            # fingerprint Hamming radius (0..31)
    guard_bits: int = 1         # max Hamming distance of the key hashes (frozen on validation: vrex.tune)
    max_age: int = 2            # reuse a block at most this many frames after it was computed (0: no cap)
    similar: bool = True        # also ask the similarity lookup
    recall: bool = False        # also recall blocks past the device's candidates (the SHIE's host tier)
    recall_radius: int = 8      # FCC appearance-bit radius of a recall (0..31: a SHIE similarity lookup)
    host_slots: int = 4096      # blocks of host memory recall's host tier holds (its bound; oldest reused)
    recall_guard_bits: int = 0  # key-hash distance of a recall (0..32)
    recall_candidates: int = 8  # host-tier entries a recall walks, nearest first (1..8; 1: nearest only)
    tiered: bool = True         # SHIE lookups by tier (device candidates: device; recall: host). False: any
    refresh: bool = False       # reused regions get a new block with layer 0 written fresh (see above)
    # Region motion gate: a region whose FCC region motion (begin_frame's region_motion, 1/16 grid
    # px, reported by the device) exceeds this takes no earlier block from the device's candidates;
    # decided by the C++ policy (ReuseOptions::motion_gate) on both paths. None: off; needs fcc.
    motion_gate: int | None = None
    backend: str = "emulated"
    extra: dict[str, Any] = field(default_factory=dict)  # a plugged-in policy's own parameters (vrex/anchors.py)


@dataclass
class FrameStats:
    step_s: float = 0.0          # thread CPU time of the whole step, HAL calls included (one clock)
    step_wall_s: float = 0.0
    emu_s: float = 0.0           # thread CPU time inside the vrex layer's calls (FCC, lookups, policy, blocks)
    tokens: int = 0              # visual tokens prefilled
    reused: int = 0
    regions: int = 0
    flops: int = 0               # decoder.step_flops of this step
    reused_region: list[bool] = field(default_factory=list)
    # The C++ path only: emu_s per stage of the vrex layer (vrex/lcp/runner.hpp kStageNames), and
    # with profiling the FCC's own work within begin_frame (None otherwise).
    stages: dict[str, float] = field(default_factory=dict)
    fcc_s: float | None = None
    # Of step_s: the questions' half (the read rule's selection and staging, Decoder.ask); the rest
    # of the step is the visual prefill (FCC, guard, reuse, installs, Decoder.prefill, HAL calls).
    # Both paths time it (the C++ runner: StepStats::ask_s); None when not timed.
    ask_s: float | None = None
    # The C++ path only: the rest of step_s (outside emu_s) per part of the engine
    # (vrex/lcp/runner.hpp kEngineNames: prepare, install, prefill, select, ask, after, resv_read,
    # resv_insert, host_prep, dma_read, dma_move).
    engine: dict[str, float] = field(default_factory=dict)


def hash_planes(c: Config) -> torch.Tensor:
    """The guard's SRP hyperplanes (fixed seed)."""
    return script.hash_planes(c.kv_heads, c.tokens_per_region, c.head_dim)


def frame_flops(c: Config, fresh: int, t: int, q_target: torch.Tensor, guard: bool) -> int:
    """decoder.step_flops of frame @t with @fresh regions computed, the questions' reach windows
    clipped to the stream (both paths count the same way)."""
    reach = c.question_reach
    q_keys = int(((q_target + reach).clamp_max(t) - (q_target - reach).clamp_min(0) + 1).sum()) * c.visual
    return step_flops(c, fresh, t, len(q_target), guard, q_keys)


class Session:
    def __init__(self, model: Decoder, opts: Options):
        if opts.policy not in POLICIES:
            raise ValueError(f"unknown policy '{opts.policy}' ({', '.join(POLICIES)})")
        if not 0 <= opts.radius <= 31 or not 0 <= opts.guard_bits <= HASH_BITS or opts.max_age < 0:
            raise ValueError("radius must be 0..31, guard_bits 0..32 and max_age >= 0")
        if opts.motion_gate is not None and not 0 <= opts.motion_gate <= 255:
            raise ValueError(f"motion_gate must be 0..255 (1/16 grid px) or None, not {opts.motion_gate}")
        c = model.c
        self.model = model
        self.opts = opts
        # extra["device"] = i: an emulated device of its own (the emulation shares one device, 16
        # streams and 16 ReSV heads, per geometry: a bank i MiB larger is another device).
        emu = opts.backend == "emulated"
        self.device = hal.Device.open(opts.backend, banks=EMU_BANKS if emu else 0,
                                      bank_mib=EMU_BANK_MIB + int(opts.extra.get("device", 0)) if emu else 0)
        self.alloc = hal.KvAllocator(self.device, c.layers, c.kv_heads, c.head_dim, c.tokens_per_region)
        self.shape = (c.layers, 2, c.kv_heads, c.tokens_per_region, c.head_dim)
        if self.alloc.block_bytes != int(np.prod(self.shape)) * 4:
            raise RuntimeError(f"block is {self.alloc.block_bytes} B, the model needs {int(np.prod(self.shape)) * 4}")
        if opts.max_age > self.device.zombie_frames:
            raise RuntimeError(f"max_age {opts.max_age} exceeds the device's zombie threshold "
                               f"{self.device.zombie_frames}: candidates would be retired before the guard allows them")
        self.planes = hash_planes(c)

    def stream(self) -> "StreamRunner":
        return StreamRunner(self, self.alloc.create_stream())

    def view(self, block: "hal.KvBlock") -> torch.Tensor:
        """The block's memory as a [L, 2, KVH, T, hd] fp32 tensor (aliases the block, no copy)."""
        arr = np.frombuffer(memoryview(block), dtype=np.float32)  # keeps @block (and its stream) alive
        if arr.flags.writeable:
            return torch.from_numpy(arr).view(self.shape)
        # A published block is read-only for every stream, its owner included (docs/hal.md
        # "Concurrency and publication"). Attention only reads it: alias it (torch warns about any
        # non-writable array), never copy it.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
            return torch.from_numpy(arr).view(self.shape)

    def key_hash(self, k0: torch.Tensor) -> list[int]:
        """SRP hash per region of layer-0 pre-rotation keys @k0 [KVH, 64, hd] -> 16 x 32-bit ints."""
        return script.key_hashes(k0, self.planes, self.model.c.regions).tolist()


def enable(model: Decoder, **kw: object) -> Session:
    """Binds @model to a vrex device: its KV cache becomes vrex blocks (see the module docstring)."""
    model.eval()
    s = Session(model, Options(**kw))  # type: ignore[arg-type]
    model.vrex = s  # type: ignore[assignment]
    return s


# ---- policies --------------------------------------------------------------------------------

@dataclass
class Install:
    """A region filled from bytes instead of computed: @data [L, 2, KVH, T, hd] (a view or a copy of
    the block @source = (id, generation) held)."""
    data: torch.Tensor
    source: tuple[int, int]


class Policy:
    """Decides, per frame, which regions take an earlier block instead of being computed. One
    instance per stream. The exact policy: never."""

    needs_hash = False

    def __init__(self, runner: "StreamRunner"):
        self.run = runner

    def choose(self, fp: tuple[int, int], hashes: list[int]) -> dict[int, "hal.KvBlock"]:
        """region -> block to reuse (the runner calls Stream.reuse), for the frame just begun."""
        return {}

    def computed(self, region: int, block: "hal.KvBlock", key_hash: int) -> None:
        """@block was just computed for @region of the current frame."""

    def computed_frame(self, regions: list[int], blocks: list["hal.KvBlock"], hashes: list[int]) -> None:
        """The frame's fresh @regions were computed into @blocks (@hashes: every region's key hash).
        The runner calls this once per frame; the default hands each region to computed()."""
        for r, b in zip(regions, blocks):
            self.computed(r, b, hashes[r])

    def installed(self, regions: list[int], blocks: list["hal.KvBlock"], sources: list[tuple[int, int]]) -> None:
        """@regions of the frame were filled into new @blocks from the blocks @sources (Install, refresh)."""

    # Hooks for policies that also manage the cache (vrex/anchors.py); the defaults do nothing.
    def begin(self, luma: np.ndarray, tokens: torch.Tensor) -> None:
        """Frame t begins (before choose): its luma and encoder tokens."""

    def question_bias(self, q_region: torch.Tensor, q_target: torch.Tensor) -> torch.Tensor | None:
        """Additive mask [Q, (t+1)*64] over the keys the questions of frame t may read (None: all)."""
        return None

    def frame_done(self) -> None:
        """Frame t - 1 ended (its views are in runner.views)."""

    def stats(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        """The runner closes (before it unpins its blocks)."""


class VrexPolicy(Policy):
    """The C++ policy (hal.ReusePolicy, model/cpp) bound to this runner's stream: candidates, guard
    and age cap are decided there, in one call per frame."""

    needs_hash = True

    def __init__(self, runner: "StreamRunner"):
        super().__init__(runner)
        o = runner.s.opts
        self.core = hal.ReusePolicy(runner.s.model.c.regions, fcc=o.fcc, radius=o.radius,
                                    guard_bits=o.guard_bits, max_age=o.max_age, similar=o.similar,
                                    recall=o.recall, recall_radius=o.recall_radius,
                                    recall_guard_bits=o.recall_guard_bits, motion_gate=o.motion_gate,
                                    recall_candidates=o.recall_candidates, tiered=o.tiered)
        self.install_recalls = True  # anchors.Managed installs them from its tiers instead
        # Recall's host tier: blocks demoted to host memory stay findable by the SHIE (their copies
        # are indexed there). The HAL indexes within an open frame: demotions wait for begin().
        self.hosting = o.recall and o.fcc
        if self.hosting:
            self.core.attach_host_tier(runner.st, o.host_slots)
        self.to_host: list[tuple[tuple[int, int], Any]] = []
        self.by_frame: list[list[tuple[int, int]]] = []  # plain runner: computed keys per frame

    def host_put(self, key: tuple[int, int], data: torch.Tensor) -> None:
        """Block @key was demoted, its bytes are @data: indexed in the host tier at the next begin()."""
        if self.hosting and self.core.recallable(key):
            self.to_host.append((key, data))

    def begin(self, luma: np.ndarray, tokens: torch.Tensor) -> None:
        if not self.hosting:
            return
        old = self.run.t - self.run.s.opts.max_age - 1
        if self.install_recalls and self.run.s.opts.max_age and 0 <= old < len(self.by_frame):
            # The plain runner keeps every block on the device: a block past the age cap, which only
            # recall can reach, gets its host-tier copy (the device's zombie rule retires its entry).
            for key in self.by_frame[old]:
                b = self.run.pinned.get(key)
                if b is not None:
                    self.host_put(key, self.run.s.view(b))
            self.by_frame[old] = []
        for key, data in self.to_host:
            self.core.demote(self.run.st, key, data.contiguous().numpy())
        self.to_host.clear()

    def choose(self, fp: tuple[int, int], hashes: list[int]) -> dict[int, Any]:
        # The device's region motion of this frame (begin_frame): the C++ policy's gate reads it.
        out = self.core.choose(self.run.st, fp, hashes, self.run.t, self.run.frame_info["region_motion"])
        if self.run.s.opts.recall and self.install_recalls:
            # The runner keeps every block pinned (the whole cache on the device): a recalled block's
            # bytes are its own memory (a policy with a memory hierarchy fetches them: anchors.Managed).
            for r, (key, _f, _hd, _fd) in self.core.recalled().items():
                b = self.run.pinned.get((int(key[0]), int(key[1])))
                if b is not None:
                    out[r] = Install(self.run.s.view(b), (b.id, b.generation))
        return out

    def computed(self, region: int, block: "hal.KvBlock", key_hash: int) -> None:
        self.core.computed([block], [key_hash], self.run.t)

    def computed_frame(self, regions: list[int], blocks: list["hal.KvBlock"], hashes: list[int]) -> None:
        self.core.computed(blocks, [hashes[r] for r in regions], self.run.t)
        if self.hosting and self.install_recalls:
            self.by_frame.append([(b.id, b.generation) for b in blocks])

    def installed(self, regions: list[int], blocks: list["hal.KvBlock"], sources: list[tuple[int, int]]) -> None:
        self.core.installed(blocks, sources, self.run.t)

    def recalled(self) -> dict[int, tuple[tuple[int, int], int, int, int]]:
        """region -> ((id, generation), frame, hash distance, appearance distance) of the blocks the
        last choose() recalled through the SHIE's host tier (Options.recall)."""
        return self.core.recalled()


POLICIES: dict[str, Callable[["StreamRunner"], Policy]] = {"exact": Policy, "vrex": VrexPolicy}


# ---- the stream ------------------------------------------------------------------------------

class StreamRunner:
    def __init__(self, session: Session, stream: "hal.Stream"):
        self.s = session
        self.st = stream
        self.t = 0
        self.policy = POLICIES[session.opts.policy](self)
        self.views: list[list[torch.Tensor]] = []     # per frame, the block tensor of each region
        # The stepped frames as attention reads them (Decoder.step writes them: K rotated to its
        # frame, layer-major, [L, KVH, capacity, hd]), gathered from the blocks once per frame: what a
        # paged-attention kernel would read from the blocks in place; kept so a step does not
        # re-gather and re-rotate the whole stream.
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None
        self.pinned: dict[tuple[int, int], "hal.KvBlock"] = {}  # every distinct block the cache holds
        self.frame_info: dict[str, Any] = {}  # begin_frame's result for frame t (fp, region_motion, ...)
        self.closed = False

    @torch.no_grad()
    def step(self, luma: np.ndarray, tokens: torch.Tensor, q_region: torch.Tensor,
             q_target: torch.Tensor) -> tuple[torch.Tensor, FrameStats]:
        """Prefills frame t. @tokens [64, C] standardised encoder tokens; questions about regions
        @q_region at frames @q_target (<= t) -> logits [Q, codes]."""
        if self.closed:
            raise RuntimeError("stream runner is closed")
        m, c = self.s.model, self.s.model.c
        if tokens.shape != (c.visual, c.feat_dim):
            raise ValueError(f"tokens must be [{c.visual}, {c.feat_dim}], not {list(tokens.shape)}")
        if len(q_target) and (int(q_target.max()) > self.t or int(q_target.min()) < 0):
            raise ValueError(f"question targets must be frames 0..{self.t}")
        fs = FrameStats(regions=c.regions)
        tt = time.thread_time
        t0, w0 = tt(), time.perf_counter()
        info = self.st.begin_frame(luma)
        self.frame_info = info
        emu = tt() - t0
        self.policy.begin(luma, tokens)
        vis = m.embed_frame(tokens)
        k0 = m.layer0_keys(vis) if self.policy.needs_hash else None
        hashes = self.s.key_hash(k0) if k0 is not None else [0] * c.regions
        e0 = tt()
        reuse = self.policy.choose(info["fp"], hashes)
        alias, install = self._split(reuse)
        blocks, fresh = hal.apply_frame(self.st, alias, c.regions)
        emu += tt() - e0
        for r in fresh:
            b = blocks[r]
            self.pinned[(b.id, b.generation)] = b
        cur = [self.s.view(b) for b in blocks]
        if install:
            v0 = m.value0(tokens) if self.s.opts.refresh else None  # one op for every refreshed region
            for r, ins in install.items():
                self._fill(cur[r], ins.data, r, k0, v0)
        fresh = [r for r in fresh if r not in install]
        computed = [blocks[r] for r in fresh]
        cache = self._reserve()
        m.prefill(tokens, vis, fresh, cur, cache, self.t)
        a0 = tt()
        logits = m.ask(cache, self.t, q_region, q_target, self.policy.question_bias(q_region, q_target))
        fs.ask_s = tt() - a0
        e0 = tt()
        self.policy.computed_frame(fresh, computed, hashes)
        if install:
            regs = sorted(install)
            self.policy.installed(regs, [blocks[r] for r in regs], [install[r].source for r in regs])
        self.st.end_frame()
        fs.emu_s = emu + tt() - e0
        fs.step_s = time.thread_time() - t0
        fs.step_wall_s = time.perf_counter() - w0
        fs.reused = len(reuse)
        fs.reused_region = [r in reuse for r in range(c.regions)]
        fs.tokens = len(fresh) * c.tokens_per_region
        fs.flops = frame_flops(c, len(fresh), self.t, q_target, self.policy.needs_hash)
        self.views.append(cur)
        self.t += 1
        self.policy.frame_done()
        return logits, fs

    def _split(self, reuse: dict[int, Any]) -> tuple[dict[int, Any], dict[int, Install]]:
        """The policy's choice -> (regions to alias, regions to fill from bytes). With refresh every
        reused region is filled (from the candidate's own memory)."""
        alias, install = {}, {}
        for r, b in reuse.items():
            if isinstance(b, Install):
                install[r] = b
            elif self.s.opts.refresh:
                install[r] = Install(self.s.view(b), (b.id, b.generation))
            else:
                alias[r] = b
        return alias, install

    def _fill(self, dst: torch.Tensor, src: torch.Tensor, r: int, k0: torch.Tensor | None,
              v0: torch.Tensor | None) -> None:
        """A new block of region @r from @src; with refresh its layer 0 is the frame's own (the keys
        the guard computed @k0, the values @v0 = the frame's features, Decoder.value0: no prefill
        FLOPs), both [KVH, 64, hd]."""
        dst.copy_(src)
        if self.s.opts.refresh:
            if k0 is None or v0 is None:
                raise RuntimeError("refresh needs the guard's layer-0 keys (a policy with needs_hash)")
            tpr = self.s.model.c.tokens_per_region
            sl = slice(r * tpr, (r + 1) * tpr)
            dst[0, 0].copy_(k0[:, sl])
            dst[0, 1].copy_(v0[:, sl])

    def _reserve(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The attention-ready cache with room for frame t (grown by doubling, contents kept)."""
        c = self.s.model.c
        n0, n1 = self.t * c.visual, (self.t + 1) * c.visual
        if self._k is None or self._v is None or self._k.shape[2] < n1:
            cap = max(64 * c.visual, 2 * n1)
            k = torch.empty(c.layers, c.kv_heads, cap, c.head_dim)
            v = torch.empty_like(k)
            if self._k is not None and self._v is not None:
                k[:, :, :n0] = self._k[:, :, :n0]
                v[:, :, :n0] = self._v[:, :, :n0]
            self._k, self._v = k, v
        return self._k, self._v

    def cache_tokens(self) -> int:
        """Visual tokens the cache holds (what exact attention reads)."""
        return len(self.views) * self.s.model.c.visual

    def distinct_blocks(self) -> int:
        return len(self.pinned)

    def close(self) -> None:
        """Unpins every block (the device then frees them at its next aging pass or stream end)."""
        if self.closed:
            return
        self.policy.close()
        hal.unpin_all(self.st, list(self.pinned.values()))
        self.pinned.clear()
        self.views.clear()
        self._k = self._v = None
        self.closed = True
