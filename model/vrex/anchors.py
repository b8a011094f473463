"""V-Rex against the streaming-video KV anchors at equal device memory (issue 22).

Each run is a `Managed` policy (registered in lcp.POLICIES) = a PREFILL rule (which regions are
computed) + a MEMORY rule (which blocks stay on the device, where cold ones go) + a READ rule
(which past blocks each question reads). Budgets are in KV blocks (one block = one region of one
frame, 4 tokens, every layer); `Options.extra` carries them:

  prefill   exact        every region computed
            vrex         lcp.VrexPolicy: FCC/SHIE candidates (temporal and similarity), the guard
            dtd          TimeChat-Online style: the regions whose encoder tokens changed least
                         (cosine vs the previous frame) are dropped, at the rate the V-Rex run
                         reused so far (`match`): the previous frame's block stands in for them
  memory    full         everything stays on the device (the accuracy ceiling)
            sink_window  StreamingLLM: frame 0's blocks (sinks) + the newest blocks, `budget` in all
            infinipot    InfiniPot-V style: at a `budget` cap, blocks outside the visual window are
                         evicted by score = (1 - temporal redundancy) + value norm (each scaled to
                         [0, 1]); redundancy = cosine of the block's keys with the same region's
                         newest block
            recent       the blocks referenced in the last frames that fit `budget` (DTD's memory)
            tiers        vrex/hierarchy.py: blocks unreferenced for `resident` frames demoted to host
                         (dropped with `drop`; computed > `resident` frames ago with coldness fifo;
                         unreferenced and unread with coldness use: the read's selection and the
                         recall keep a block warm)
  read      device       a question reads what is on the device
            rekv         + the past frames whose mean layer-0 key scores highest, up to `fetch` blocks
            quest        + the blocks of highest Quest bound (per-block min/max of the keys)
            random       + `fetch` random past blocks
            resv         + the blocks the HAL's ReSV/WiCSum selects (keys hashed once, when their frame
                         ends, into one ResvHead per 64 frames: a head holds 4096 tokens), capped at
                         `fetch` blocks (newest first when WiCSum picked more); q.k only
            resv_pos     V-Rex's read: position-aware ReSV. Each key is hashed ONCE at insertion (32
                         sign bits of the layer-0 key, 4 B a token: the HAL's resv_hash, lib/resv.c's HCU). A question's estimated weight of
                         a token = MASS LUT[Hamming(query hash, key hash)] (the hash's estimate of
                         exp(q.k), the LUT calibrated to the model) x exp(the learned position bias of
                         the token's frame distance and slot), which the decoder adds to the logit
                         (known per position, so a hardware selector may add it: a second table).
                         WiCSum over the blocks the question can attend to: heaviest first until
                         `ratio` of the estimated mass, capped at `fetch` blocks (the HAL's
                         resv_select_blocks: lib/resv.c, the one copy of the math)

Every read rule considers only the keys the question can attend to: the frames within the decoder's
question_reach of the frame it asks about (a structural mask, like a sliding window: a key outside
it has no attention mass, so fetching it would waste the budget of every rule alike).

Selection signals use layer 0: the question's layer-0 query (its region embedding rotated to the
frame asked about) against the cached layer-0 keys rotated to their frames' positions, the heads
concatenated (scores summed over heads). Every read rule is judged on the same questions by
attention-mass recall (the layer-0 softmax, mean over heads) at the bytes ReSV chose (`resv.*`).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from . import lcp
from .decoder import rotate, step_flops
from .hierarchy import KvTiers

hal = lcp.hal
PREFILLS = ("exact", "vrex", "dtd")
MEMORIES = ("full", "sink_window", "infinipot", "recent", "tiers")
READS = ("device", "rekv", "quest", "random", "resv", "resv_pos")
RESV_FRAMES = 64   # frames per ReSV head (4096 tokens)
RESV_TH = 7
POS_HASH_SEED = 22  # the HCU seed of the position-aware selector's hash (lib/resv.c expands its +-1 planes)


def mass_lut(scale: float) -> list[int]:
    """The WTU's MASS weight per Hamming distance d of two 32-bit key hashes: the softmax weight
    round(65535 exp(scale (cos(pi d / 32) - 1))) of a key at the angle d estimates, for a logit scale
    |q| |k| of @scale; floor 1 so that every cluster keeps a weight (docs/hw/resv.md §2.3). The
    HAL's table (vrex::resv_mass_lut), which the C++ runner's read uses too."""
    return list(hal.resv_mass_lut(scale))


def dtd_pick(cur: torch.Tensor, prev: torch.Tensor, n: int) -> list[int]:
    """The @n regions whose unit token vectors @cur [R, D] are most similar (cosine) to the previous
    frame's @prev: the ones TimeChat-Online's frame difference drops (ties: lower region)."""
    sim = (cur * prev).sum(-1)
    return torch.argsort(-sim, stable=True)[:n].tolist()


def infinipot_order(redundancy: list[float], value_norm: list[float]) -> list[int]:
    """Eviction order (first = evicted first) by keep score (1 - redundancy) + value norm, each
    min-max scaled to [0, 1]: redundant over time and small values go first."""
    def scaled(x: list[float]) -> np.ndarray:
        a = np.array(x, dtype=float)
        return (a - a.min()) / (a.max() - a.min()) if len(a) and a.max() > a.min() else np.zeros(len(a))

    return np.argsort((1.0 - scaled(redundancy)) + scaled(value_norm), kind="stable").tolist()


def quest_bound(q: torch.Tensor, keys: torch.Tensor, page: int) -> torch.Tensor:
    """Quest's per-page upper bound of q.k: sum over dimensions of max(q_d max_d, q_d min_d) over the
    page's keys; @keys [pages * page, D] -> [pages]."""
    kb = keys.view(-1, page, keys.shape[-1])
    return quest_bound_minmax(q, kb.min(1).values, kb.max(1).values)


def quest_bound_minmax(q: torch.Tensor, kmin: torch.Tensor, kmax: torch.Tensor) -> torch.Tensor:
    """quest_bound from the pages' per-dimension key minima/maxima @kmin/@kmax [pages, D] (what Quest
    keeps per page, computed once when the page is complete)."""
    return torch.maximum(q * kmax, q * kmin).sum(-1)


def rekv_frame_order(frame_keys: list[torch.Tensor], q: torch.Tensor) -> list[int]:
    """ReKV: past frames by the score of the question against each frame's mean key, best first."""
    return torch.argsort(torch.stack([k.mean(0) for k in frame_keys]) @ q, descending=True, stable=True).tolist()


class ReuseMeter:
    """The V-Rex run's reuse rate (pooled over its streams), read by the DTD run. vrex.run rotates the
    runs' order every frame, so at frame t the V-Rex run may or may not have decided frame t yet:
    rate(before=t) counts only its frames before t, which makes the DTD run's matched rate the same
    whatever the order (and whichever other runs share the process)."""

    def __init__(self) -> None:
        self.reused = 0
        self.regions = 0
        self._by_frame: dict[int, list[int]] = {}  # frame -> [reused, regions] of that frame

    def add(self, frame: int, reused: int, regions: int) -> None:
        self.reused += reused
        self.regions += regions
        counts = self._by_frame.setdefault(frame, [0, 0])
        counts[0] += reused
        counts[1] += regions

    def rate(self, before: int | None = None) -> float:
        reused, regions = self.reused, self.regions
        if before is not None:
            reused -= sum(v[0] for f, v in self._by_frame.items() if f >= before)
            regions -= sum(v[1] for f, v in self._by_frame.items() if f >= before)
        return reused / regions if regions else 0.0


class DtdPrefill(lcp.Policy):
    """Frame-difference token dropping at a matched rate (a carry keeps the running count exact)."""

    def __init__(self, runner: Any, meter: ReuseMeter):
        super().__init__(runner)
        self.meter = meter
        self.prev: torch.Tensor | None = None
        self.cur: torch.Tensor | None = None
        self.dropped = 0
        self.seen = 0

    def begin(self, luma: np.ndarray, tokens: torch.Tensor) -> None:
        c = self.run.s.model.c
        self.cur = F.normalize(tokens.view(c.regions, c.tokens_per_region * c.feat_dim), dim=-1)

    def choose(self, fp: tuple[int, int], hashes: list[int]) -> dict[int, Any]:
        c = self.run.s.model.c
        out: dict[int, Any] = {}
        assert self.cur is not None
        if self.prev is not None:
            want = round(self.meter.rate(before=self.run.t) * (self.seen + c.regions)) - self.dropped
            n = max(0, min(c.regions, want))
            for r in dtd_pick(self.cur, self.prev, n):
                got = self.run.st.retrieve_temporal(r, -1)
                if got is not None:
                    out[r] = got["block"]
        self.dropped += len(out)
        self.seen += c.regions
        self.prev = self.cur
        return out


class Managed(lcp.Policy):
    def __init__(self, runner: Any):
        super().__init__(runner)
        ex = dict(runner.s.opts.extra)
        self.cfg = ex
        c = runner.s.model.c
        self.c = c
        pre = ex.get("prefill", "exact")
        self.memory = ex.get("memory", "full")
        self.read = ex.get("read", "device")
        if pre not in PREFILLS or self.memory not in MEMORIES or self.read not in READS:
            raise ValueError(f"anchors: prefill {pre} / memory {self.memory} / read {self.read} "
                             f"(one of {PREFILLS} / {MEMORIES} / {READS})")
        self.budget = int(ex.get("budget", 0))
        self.fetch_blocks = int(ex.get("fetch", 0))
        if self.memory in ("sink_window", "infinipot", "recent") and self.budget < c.window * c.regions + c.regions:
            raise ValueError(f"anchors: budget {self.budget} blocks cannot hold the visual window and one more frame")
        if self.read != "device" and self.fetch_blocks <= 0:
            raise ValueError(f"anchors: read rule {self.read} needs fetch > 0 blocks")
        self.meter: ReuseMeter | None = ex.get("meter")
        if pre == "vrex":
            self.prefill: lcp.Policy = lcp.VrexPolicy(runner)
        elif pre == "dtd":
            if not isinstance(ex.get("match"), ReuseMeter):
                raise ValueError("anchors: dtd prefill needs match=ReuseMeter (the V-Rex run's)")
            self.prefill = DtdPrefill(runner, ex["match"])
        else:
            self.prefill = lcp.Policy(runner)
        self.needs_hash = self.prefill.needs_hash
        resident = int(ex.get("resident", 0)) or runner.s.device.zombie_frames
        self.tiers = KvTiers(runner, resident if self.memory == "tiers" else max(c.window, 1),
                             ex.get("coldness", "zombie"), bool(ex.get("drop", False)) or self.memory != "tiers",
                             int(ex.get("host_blocks", 0)), ex.get("disk_dir"))
        self.frame_blocks: list[Any] = [None] * c.regions
        if isinstance(self.prefill, lcp.VrexPolicy):
            self.prefill.install_recalls = False
            core = self.prefill.core
            self.tiers.on_drop = lambda key: core.forget([key])
            self.tiers.on_demote = self.prefill.host_put  # recall finds it through the SHIE's host tier
        self.gen = torch.Generator().manual_seed(int(ex.get("seed", 0)))
        blk = runner.s.model.blocks[0]
        # Selection signals: layer-0 keys rotated to their frames (per frame [64, KVH*hd]), region
        # queries (rotated per question), per-block min/max and per-frame mean keys.
        self.k0: list[torch.Tensor] = []
        self.kmin: list[torch.Tensor] = []  # per frame [16, KVH*hd]: each block's key minima / maxima
        self.kmax: list[torch.Tensor] = []
        with torch.no_grad():
            self.q0 = blk.attn.wq(blk.norm1(runner.s.model.question_embed)).view(c.regions, c.heads, c.head_dim)
        self.heads: list[Any] = []
        self.thash: list[np.ndarray] = []  # resv_pos: per frame, the 64 key hashes (computed once)
        attn0 = blk.attn
        # The learned question bias of layer 0 as the selector's position table (mean over heads):
        # rel[bucket of key frame - target frame] + slot[region asked, key slot].
        self.pos_rel = attn0.rel.detach().mean(0)
        self.pos_slot = attn0.slot.detach().mean(0)
        self.reach = int(getattr(c, "question_reach", 1 << 30))
        # The ReSV recall measurement (resv.*: every past question's attention mass over the whole
        # history, the oracle, Quest and the HAL's ReSV beside it) costs more CPU than the run itself.
        self.measure = bool(ex.get("measure_resv", True))
        # The questions' selections (step, selected slots), for the coldness bound (ablations.
        # zombie_bound): what any residency rule could have kept on the device for them.
        self.log_reads = bool(ex.get("log_reads", False))
        self.reads: list[tuple[int, int, list[int]]] = []  # (step, frame asked about, selected slots)
        self.lut_scale = 0.0
        self.fresh: list[int] = []
        self.pending: list[tuple[torch.Tensor, list[int], int, int]] = []  # (query, ReSV slots, region, target)
        self.rec: dict[str, list[float]] = {k: [] for k in ("recall_resv", "recall_oracle", "recall_quest",
                                                            "recall_random", "bytes_ratio", "capped",
                                                            "recall_quest_bias", "recall_resv_qk",
                                                            "bytes_ratio_resv_qk", "fetched_q")}

    # ---- prefill -----------------------------------------------------------------------------
    def begin(self, luma: np.ndarray, tokens: torch.Tensor) -> None:
        self.prefill.begin(luma, tokens)

    def choose(self, fp: tuple[int, int], hashes: list[int]) -> dict[int, Any]:
        out = self.prefill.choose(fp, hashes)
        self.frame_blocks = [None] * self.c.regions
        for r, b in out.items():
            self.frame_blocks[r] = b
        if isinstance(self.prefill, lcp.VrexPolicy) and self.run.s.opts.recall:
            # Blocks past the device's candidates, found by the SHIE in its host tier: fetched back
            # from whatever tier holds them (dropped ones were forgotten: tiers.on_drop).
            for r, (key, _frame, _hd, _fd) in self.prefill.recalled().items():
                key = (int(key[0]), int(key[1]))
                if key in self.tiers and self.tiers.readable(key):
                    out[r] = lcp.Install(self.tiers.fetch_prefill(key), key)
                    self.tiers.touch(key, self.run.t)  # a recall is a read (coldness `use`)
        if self.meter is not None:
            self.meter.add(self.run.t, len(out), self.c.regions)
        self.fresh.append(self.c.regions - len(out))
        return out

    def computed(self, region: int, block: Any, key_hash: int) -> None:
        self.prefill.computed(region, block, key_hash)
        self.frame_blocks[region] = block

    def installed(self, regions: list[int], blocks: list[Any], sources: list[tuple[int, int]]) -> None:
        self.prefill.installed(regions, blocks, sources)
        for r, b in zip(regions, blocks):
            self.frame_blocks[r] = b

    # ---- signals -----------------------------------------------------------------------------
    def frame_keys(self, f: int) -> torch.Tensor:
        """Layer-0 keys of frame @f's 64 tokens rotated to position f: [64, KVH*hd]."""
        c = self.c
        k = torch.stack([v[0, 0] for v in self.run.views[f]], dim=1)  # KVH 16 T hd
        k = k.reshape(c.kv_heads, c.visual, c.head_dim)
        cos, sin = self.run.s.model.rope(torch.full((c.visual,), f))
        return rotate(k, cos, sin).transpose(0, 1).reshape(c.visual, c.kv_heads * c.head_dim).contiguous()

    def query(self, region: int, target: int) -> torch.Tensor:
        return self.queries(torch.tensor([region]), torch.tensor([target]))[0]

    def queries(self, regions: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """The questions' layer-0 queries rotated to the frames they ask about, scaled, the heads
        concatenated: [Q, H*hd] (one RoPE table for all of them)."""
        c = self.c
        cos, sin = self.run.s.model.rope(targets)
        q = rotate(self.q0[regions].transpose(0, 1), cos, sin).transpose(0, 1)  # Q H hd
        return (q * c.head_dim**-0.5).reshape(len(regions), -1)

    def _insert(self, f: int) -> None:
        k = self.frame_keys(f)
        self.k0.append(k)
        kb = k.view(self.c.regions, self.c.tokens_per_region, -1)
        self.kmin.append(kb.min(1).values)
        self.kmax.append(kb.max(1).values)
        if self.read not in ("resv", "resv_pos"):
            return
        if self.read == "resv_pos":  # hashed once, by the HAL (lib/resv.c's HCU)
            self.thash.append(hal.resv_hash(np.ascontiguousarray(k.numpy()), POS_HASH_SEED))
        if f % RESV_FRAMES == 0:
            if not self.heads:
                # The WTU's MASS table calibrated to the model: the logit scale |q| |k| of this
                # stream's first frame and the model's region queries (the angle the hash estimates
                # becomes a softmax weight).
                qn = self.q0.reshape(self.c.regions, -1).norm(dim=-1).median() * self.c.head_dim**-0.5
                self.lut_scale = float(qn * k.norm(dim=-1).median())
            self.heads.append(hal.ResvHead(self.run.s.device, k.shape[1], RESV_TH, float(self.cfg.get("ratio", 0.5)),
                                           "mass", lut=mass_lut(self.lut_scale), tokens_per_block=self.c.tokens_per_region,
                                           bytes_per_token=2 * k.shape[1] * 4))
        self.heads[-1].append(np.ascontiguousarray(k.numpy()))

    # ---- memory ------------------------------------------------------------------------------
    def frame_done(self) -> None:
        t = self.run.t - 1  # the frame that just ended
        tiers = self.tiers
        # Runs after the runner stopped the step's clock: the recall measurement, and the demotion
        # copies below (a background offload in a real system).
        if self.pending:
            kall = torch.cat(self.k0)
            for q, sel, qr, qg in self.pending:
                self._recall(q, kall, sel, t, qr, qg)
            self.pending.clear()
        if self.memory == "tiers":
            tiers.stage_window(t)
        tiers.add_frame(t, self.frame_blocks)
        self._insert(t)
        tiers.meta_bytes = self.meta_bytes()
        tiers.account()
        self._evict(t + 1)

    def meta_bytes(self) -> int:
        """Selector state the device keeps: ReSV a hash and a cluster id per token (4 B each), ReKV a
        mean key per frame, Quest a min and a max key per block (fp32, layer 0)."""
        c, frames = self.c, len(self.k0)
        d = c.kv_heads * c.head_dim
        return {"resv": frames * c.visual * 8, "resv_pos": frames * c.visual * 4, "rekv": frames * d * 4,
                "quest": frames * c.regions * 2 * d * 4}.get(self.read, 0)

    def _evict(self, t: int) -> None:
        tiers, c = self.tiers, self.c
        if self.memory == "full":
            return
        if self.memory == "tiers":
            tiers.age(t)
            return
        dev = tiers.keys_on("device")
        over = len(dev) - (self.budget - c.regions)  # room for the next frame's blocks
        if over <= 0:
            return
        window = {k for f in range(max(0, t - c.window), t) for k in tiers.slot_key[f]}
        cand = [k for k in dev if k not in window]
        if self.memory == "sink_window":
            sinks = set(tiers.slot_key[0])
            cand = sorted((k for k in cand if k not in sinks), key=lambda k: tiers.entry(k).last_ref)
        elif self.memory == "recent":
            cand.sort(key=lambda k: tiers.entry(k).last_ref)
        else:  # infinipot
            cand = self._infinipot_order(cand, t)
        for k in cand[:over]:
            tiers.demote(k)

    def _infinipot_order(self, cand: list[tuple[int, int]], t: int) -> list[tuple[int, int]]:
        """Redundancy: cosine of the block's keys (every layer) with the same region's block in the
        newest frame; value norm: the mean L2 norm of its value vectors."""
        newest = self.run.views[t - 1]
        red, vn = [], []
        for k in cand:
            v = self.run.s.view(self.run.pinned[k])
            r = self.tiers.slots(k)[-1][1]
            red.append(float(F.cosine_similarity(v[:, 0].reshape(1, -1), newest[r][:, 0].reshape(1, -1))))
            vn.append(float(v[:, 1].norm(dim=-1).mean()))
        return [cand[i] for i in infinipot_order(red, vn)]

    # ---- reads -------------------------------------------------------------------------------
    def question_bias(self, q_region: torch.Tensor, q_target: torch.Tensor) -> torch.Tensor | None:
        t, c = self.run.t, self.c
        if self.memory == "full" or len(q_region) == 0 or t == 0:
            return None
        tiers = self.tiers
        codes = tiers.slot_tiers()
        dev = codes == 0
        want = (codes != 0) & (codes != 3)  # demoted, readable: what a read rule may fetch
        # One row of allowed blocks per question, then one mask for all of them (the per-question
        # work left is the read rule's own: selection and staging).
        allow = np.repeat(dev[None, :], len(q_region), axis=0)
        qs = self.queries(q_region, q_target) if self.read != "device" and want.any() else None
        for i, (r, g) in enumerate(zip(q_region.tolist(), q_target.tolist())):
            if qs is not None:
                allow[i] |= self._fetch(qs[i], want, t, r, g)
            tiers.end_read()
        bias = torch.zeros(len(q_region), (t + 1) * c.visual)
        hidden = torch.from_numpy(~allow).repeat_interleave(c.tokens_per_region, dim=1)
        bias[:, : t * c.visual].masked_fill_(hidden, float("-inf"))
        return bias

    def _fetch(self, q: torch.Tensor, want: np.ndarray, t: int, r: int, g: int) -> np.ndarray:
        """Slots this question reads beyond the device's, in the read rule's order, staged through
        tiers.fetch until `fetch` distinct blocks (reused blocks serve several slots)."""
        c, n = self.c, len(want)
        lo, hi = max(0, g - self.reach), min(t - 1, g + self.reach)
        reach = np.zeros(n, dtype=bool)
        reach[lo * c.regions : (hi + 1) * c.regions] = True
        if self.read == "resv":
            sel = self._resv_slots(q, n)
            if g < t and self.measure:  # recall of the questions about the past, off the step's clock
                self.pending.append((q, sel, r, g))
            order = np.array(sorted(set(sel), reverse=True), dtype=np.int64)
        elif self.read == "resv_pos":
            sel = self._resv_pos_slots(q, r, g, t)
            if g < t and self.measure:
                self.pending.append((q, sel, r, g))
            order = np.array(sel, dtype=np.int64)
            if self.log_reads:
                self.reads.append((t, g, [int(s) for s in sel]))
            if self.tiers.coldness == "use" and (want & reach).any():
                # Zombie release by use: the device blocks the read selected stay warm. Only where
                # the reach holds a demoted block (elsewhere the question reads its whole reach on
                # the device and the C++ runner runs no selection: the same rule on both paths).
                keys = self.tiers.flat_keys
                for s in sel:
                    if self.tiers.on_device(keys[s]):
                        self.tiers.touch(keys[s], t)
        elif self.read == "rekv":
            fr = np.array(rekv_frame_order(self.k0, q), dtype=np.int64)
            order = (fr[:, None] * c.regions + np.arange(c.regions)[None, :]).reshape(-1)
        elif self.read == "quest":
            order = torch.argsort(self._quest(q), descending=True).numpy()
        else:
            order = torch.randperm(n, generator=self.gen).numpy()
        order = order[want[order] & reach[order]] if len(order) else order
        keys = self.tiers.flat_keys
        allow = np.zeros(n, dtype=bool)
        taken: set[tuple[int, int]] = set()
        capped = False
        for s in order.tolist():
            k = keys[s]
            if k not in taken:
                if len(taken) >= self.fetch_blocks:
                    capped = True
                    continue
                taken.add(k)
                self.tiers.fetch(k)
            allow[s] = True
        if self.read in ("resv", "resv_pos"):
            self.rec["capped"].append(float(capped))
            self.rec["fetched_q"].append(float(len(taken)))
        return allow

    def _quest(self, q: torch.Tensor, frames: int | None = None) -> torch.Tensor:
        f = len(self.kmin) if frames is None else frames
        return quest_bound_minmax(q, torch.cat(self.kmin[:f]), torch.cat(self.kmax[:f]))

    def _resv_slots(self, q: torch.Tensor, n: int) -> list[int]:
        qa = np.ascontiguousarray(q.numpy())
        out: list[int] = []
        for hi, h in enumerate(self.heads):
            base = hi * RESV_FRAMES * self.c.regions
            for first, count in h.select(qa, True)["ranges"]:
                out.extend(s for s in range(base + first, base + first + count) if s < n)
        return out

    def pos_bias(self, r: int, g: int, frames: torch.Tensor) -> torch.Tensor:
        """The position table's bias [len(frames), 64] of question (region @r, target @g)."""
        from .decoder import rel_bucket
        return self.pos_rel[rel_bucket(frames - g)][:, None] + self.pos_slot[r][None, :]

    def _resv_pos_slots(self, q: torch.Tensor, r: int, g: int, t: int) -> list[int]:
        """V-Rex's position-aware WiCSum over the blocks of frames g - reach .. g + reach (< t):
        per token LUT[Hamming(query hash, key hash)] x exp(position bias), summed per block;
        heaviest blocks first until `ratio` of the estimated mass."""
        c = self.c
        lo, hi = max(0, g - self.reach), min(t - 1, g + self.reach)
        if hi < lo:
            return []
        qh = int(hal.resv_hash(np.ascontiguousarray(q[None].numpy()), POS_HASH_SEED)[0])
        kh = np.concatenate(self.thash[lo : hi + 1])  # frames x 64
        b = self.pos_bias(r, g, torch.arange(lo, hi + 1)).double()
        pos = torch.exp(b - b.max()).reshape(-1).float().numpy()
        # The HAL's block WiCSum (lib/resv.c): LUT[Hamming] x position weight per token, per block.
        pick = hal.resv_select_blocks(kh, pos, qh, mass_lut(self.lut_scale), float(self.cfg.get("ratio", 0.5)),
                                      c.tokens_per_region)
        return (lo * c.regions + pick).tolist()

    def _recall(self, q: torch.Tensor, kall: torch.Tensor, sel: list[int], t: int, qr: int, qg: int) -> None:
        """Layer-0 attention-mass recall over the past (mean of the heads' softmax, with the model's
        learned frame-distance/slot bias of the question: the attention the model really computes)
        of ReSV's blocks, and of the oracle's, Quest's and random blocks at the same count."""
        c = self.c
        n = t * c.regions
        qh = q.view(c.heads, c.head_dim)
        kh = kall.view(t * c.visual, c.kv_heads, c.head_dim)
        frame = torch.arange(t).repeat_interleave(c.visual)
        slot = torch.arange(c.visual).repeat(t)
        with torch.no_grad():
            learned = self.run.s.model.blocks[0].attn.question_bias(torch.tensor([qr]), torch.tensor([qg]), frame, slot)
        # The model's question reads only the frames within question_reach of its target.
        out = (frame - qg).abs() > getattr(c, "question_reach", t)
        logits = (torch.einsum("hd,nhd->hn", qh, kh) + learned[:, 0]).masked_fill(out[None], float("-inf"))
        p = torch.softmax(logits, dim=-1).mean(0)  # H = KVH here
        mass = p.view(n, c.tokens_per_region).sum(1)
        b = len(set(sel))
        if b == 0:
            return
        top = torch.argsort(mass, descending=True)[:b]
        qb = torch.argsort(self._quest(q, t), descending=True)[:b]
        rnd = torch.randperm(n, generator=self.gen)[:b]
        self.rec["recall_resv"].append(float(mass[list(set(sel))].sum()))
        self.rec["recall_oracle"].append(float(mass[top].sum()))
        self.rec["recall_quest"].append(float(mass[qb].sum()))
        self.rec["recall_random"].append(float(mass[rnd].sum()))
        self.rec["bytes_ratio"].append(b / n)
        # Quest with the same position table added to its page bound (bias max over the page's
        # tokens): the strongest page selector at these bytes.
        frames = torch.arange(t)
        pb = self.pos_bias(qr, qg, frames).view(t * c.regions, c.tokens_per_region).max(1).values
        qbb = torch.argsort(self._quest(q, t) + pb, descending=True)[:b]
        self.rec["recall_quest_bias"].append(float(mass[qbb].sum()))
        if self.read == "resv_pos" and self.heads:
            # The HAL's q.k-only ReSV (the same keys, hashed once in its heads) at its own bytes.
            qk = sorted(set(self._resv_slots(q, n)))
            self.rec["recall_resv_qk"].append(float(mass[qk].sum()) if qk else 0.0)
            self.rec["bytes_ratio_resv_qk"].append(len(qk) / n)

    # ---- report ------------------------------------------------------------------------------
    def stats(self) -> dict[str, Any]:
        b = self.tiers.bytes
        c = self.c
        pf = [step_flops(c, fr, t, 0, self.needs_hash) for t, fr in enumerate(self.fresh)]
        ex = [step_flops(c, c.regions, t, 0, False) for t in range(len(self.fresh))]
        return {"device_bytes_peak": b.device_peak, "total_bytes_peak": b.total_peak, "host_bytes_peak": b.host_peak,
                "disk_bytes_peak": b.disk_peak, "demoted": b.demoted, "dropped": b.dropped, "spilled": b.spilled,
                "fetched": b.fetched, "promoted": b.promoted, "recalled": b.recalled,
                "policy_counters": ({**dict(self.prefill.core.counters), **self.prefill.stats()}
                                    if isinstance(self.prefill, lcp.VrexPolicy) else {}), "device_series": list(b.device_series),
                "fetched_series": list(b.fetched_series), "prefill_flops": pf, "prefill_flops_exact": ex,
                "lut_scale": self.lut_scale, **({"reads": list(self.reads)} if self.log_reads else {}),
                **{k: list(v) for k, v in self.rec.items()}}

    def close(self) -> None:
        self.tiers.close()
        self.heads.clear()


lcp.POLICIES["managed"] = Managed


# V-Rex's frame-reuse knobs in the anchors runs. Aliasing (the model issue's vrex run, lcp.Options'
# defaults G = 1, A = 2) loses the questions whose region a stale block answers; V-Rex here refreshes
# layer 0 of every reused region (lcp.Options.refresh) and recalls blocks past the device's candidates
# from the host tier (lcp.Options.recall). Frozen on the validation clip by `vrex.tune --refresh` and
# `vrex.tune --recall` (docs/model.md): guard bits, age cap, recall radius (FCC appearance bits) and
# the recall's key-hash bits.
VREX_REUSE: dict[str, Any] = {"refresh": True, "guard_bits": 8, "max_age": 2,
                              "recall": True, "recall_radius": 24, "recall_guard_bits": 8}
# Aliasing with the model issue's frozen knobs and no recall (its knobs were frozen for refresh): the
# V-Rex of session 7 (docs/model.md), the no_refresh ablation.
ALIAS_REUSE: dict[str, Any] = {"refresh": False, "guard_bits": 1, "max_age": 2, "recall": False}
# The deep variant (decoder.VARIANTS: the answer reads the deepest layer, which refresh does not
# rewrite), frozen on cutback streams of the validation clip (docs/model.md "Session 9"): refresh, the
# guard's bits and the FCC radius by `vrex.tune --variant deep --fcc` (model/tune-deep-fcc.json: every
# setting with recall loses >= 8 points, the least at G = 0, radius 4), then the age cap and the recall
# at that radius by `vrex.tune --variant deep --age 4` (model/tune-deep-age.json: without recall G = 0,
# A = 2 loses 0.8 points). The recall's radius stays VREX_REUSE's, its key-hash bits the guard's. Its
# no_refresh is the same knobs with refresh off (one mechanism off).
DEEP_REUSE: dict[str, Any] = {"refresh": True, "guard_bits": 0, "max_age": 2, "radius": 4,
                              "recall": False, "recall_radius": 24, "recall_guard_bits": 0}
DEEP_ALIAS: dict[str, Any] = {**DEEP_REUSE, "refresh": False}
# (V-Rex's knobs, the aliasing runs' knobs) per model variant (vrex.run --variant).
REUSE: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {"builtin": (VREX_REUSE, ALIAS_REUSE),
                                                           "deep": (DEEP_REUSE, DEEP_ALIAS)}


# Resident frames of creation age where blocks are aliased (the alias_no_zombie_r* study runs): with
# alias_no_zombie (`resident`) the curve on which ablations.zombie_by_reference places no_refresh.
# Frozen on the validation clip (model/anchors-val-s14-zombie-alias-*.json, 4-16 frames): no_refresh's
# traffic fell between 6 and 7 frames, its bytes between 5 and 6, no_refresh_r4's between 4 and 6; 8
# is the margin.
ALIAS_CURVE = (4, 6, 7, 8)


def anchor_runs(budget: int, resident: int, fetch: int, meter: ReuseMeter, ratio: float,
                vrex: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """The anchors and V-Rex at the same device budget (blocks): retrieval rules keep @resident
    frames on the device and stage up to @fetch blocks per question; eviction rules keep @budget.
    @vrex: V-Rex's lcp.Options (VREX_REUSE)."""
    def m(**kw: Any) -> dict[str, Any]:
        return {"policy": "managed", "extra": kw}

    return {
        "streaming_llm": m(memory="sink_window", budget=budget),
        "infinipot_v": m(memory="infinipot", budget=budget),
        "rekv": m(memory="tiers", resident=resident, read="rekv", fetch=fetch),
        "timechat_dtd": m(prefill="dtd", memory="recent", budget=budget, match=meter),
        "quest": m(memory="tiers", resident=resident, read="quest", fetch=fetch),
        "random": m(memory="tiers", resident=resident, read="random", fetch=fetch),
        "vrex_hierarchy": {**m(prefill="vrex", memory="tiers", resident=resident, read="resv_pos", fetch=fetch,
                               meter=meter, ratio=ratio), **(VREX_REUSE if vrex is None else vrex)},
    }


def ablation_runs(resident: int, fetch: int, ratio: float, frames_per_fetch: int,
                  vrex: dict[str, Any] | None = None, alias: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """V-Rex with one mechanism off, at the same device budget: rules without a selector spend the
    fetch budget on @frames_per_fetch more resident frames. @vrex: V-Rex's lcp.Options; @alias: the
    aliasing runs' (ALIAS_REUSE)."""
    v = dict(VREX_REUSE if vrex is None else vrex)
    al = dict(ALIAS_REUSE if alias is None else alias)
    base = {"prefill": "vrex", "memory": "tiers", "resident": resident, "read": "resv_pos", "fetch": fetch, "ratio": ratio}

    def m(opts: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        return {"policy": "managed", **v, **(opts or {}), "extra": {**base, **kw}}

    more = resident + frames_per_fetch
    # A recall stages one frame's regions (16 blocks) for the prefill: a run that recalls and spends
    # the whole fetch budget on resident frames would go past the budget by that frame (no_resv did,
    # 128 blocks of 112, once mire-2 was read at its task step), so it keeps that frame's room.
    more_recalling = more - 1 if v.get("recall", False) and frames_per_fetch >= 1 else more
    return {
        # No FCC: the temporal candidate whatever the fingerprints say; without fingerprints no SHIE
        # similarity lookup either, so neither the device's nor the recall through the host tier.
        "no_fcc": m({"fcc": False}),
        # No SHIE similarity lookup, the FCC kept: the temporal candidate alone (no similar
        # candidate from the device tier, no recall from the host tier: both are that lookup).
        "temporal_only": m({"similar": False, "recall": False}),
        "no_guard": m({"guard_bits": lcp.HASH_BITS, "recall_guard_bits": lcp.HASH_BITS}),
        # The FCC's region motion gate alone off (its fingerprint filter stays), where V-Rex's knobs
        # have it on (vrex.run --vrex-knobs '{"motion_gate": ...}'); no_fcc turns both off.
        "no_gate": m({"motion_gate": None}),
        "no_zombie": m(coldness="fifo"),
        # Zombie release by use (hierarchy.py coldness `use`): a block the questions' ReSV read
        # selected or a recall installed from stays warm; beside it the control's memory curve
        # (creation age at one resident frame less and more) and the rule at one frame less.
        "zombie_use": m(coldness="use"),
        "zombie_use_r4": m(coldness="use", resident=resident - 1),
        "no_zombie_r4": m(coldness="fifo", resident=resident - 1),
        "no_zombie_r6": m(coldness="fifo", resident=resident + 1),
        # The control at the window alone, logging every question's selection (Python path): the
        # bound on any coldness rule (ablations.zombie_bound).
        "zombie_bound": m(coldness="fifo", resident=resident - 1, log_reads=True),
        "no_demotion": m(drop=True, read="device", fetch=0, resident=more),
        "no_resv": m(read="device", fetch=0, resident=more_recalling),
        # The design change's control: the HAL's ReSV on q.k alone (no position table).
        "resv_qk_only": m(read="resv"),
        # No frame reuse (every region computed): the memory hierarchy and its reads alone.
        "no_reuse": m(prefill="exact"),
        # No host-tier entries: the SHIE's similarity lookup over the device tier only (the last
        # frames; demoted blocks are not indexed).
        "no_recall": m({"recall": False}),
        # The recall on where V-Rex's frozen knobs have it off (the deep variant: anchors.DEEP_REUSE).
        "recall_on": m({"recall": True}),
        # The SHIE query of session 10 (issue 22): both lookups over every tier, the recall seeing the
        # nearest entry only; then each half of the session-11 query alone.
        "shie_nearest_only": m({"tiered": False, "recall_candidates": 1}),
        "shie_untiered": m({"tiered": False}),
        "shie_one_candidate": m({"recall_candidates": 1}),
        # Aliasing reused blocks (no layer-0 refresh), with the aliasing knobs frozen for it.
        "no_refresh": m(al),
        # The FCC and the guard where accuracy depends on what is reused (aliasing, no refresh).
        "alias_no_fcc": m({**al, "fcc": False}),
        "alias_no_guard": m({**al, "guard_bits": lcp.HASH_BITS, "recall_guard_bits": lcp.HASH_BITS}),
        # Zombie release and the similarity lookup where reused blocks are aliased (referenced by later
        # frames: coldness is not creation age) -- with refresh no_zombie is V-Rex itself.
        "alias_no_zombie": m(dict(al), coldness="fifo"),
        # The same where blocks are aliased (ablations.zombie_by_reference): the aliasing V-Rex at the
        # window, and creation age at the resident frames of ALIAS_CURVE, the curve its traffic is placed on.
        "no_refresh_r4": m(al, resident=resident - 1),
        **{f"alias_no_zombie_r{r}": m(dict(al), coldness="fifo", resident=r) for r in ALIAS_CURVE},
        "alias_temporal_only": m({**al, "similar": False, "recall": False}),
    }


def flop_ratio(st: list[dict[str, Any]]) -> float:
    num = sum(sum(s["prefill_flops"]) for s in st)
    den = sum(sum(s["prefill_flops_exact"]) for s in st)
    return num / den if den else math.nan
