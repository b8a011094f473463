"""The anchors, V-Rex's memory hierarchy and its ablations in ONE run at equal device memory (issue 22).

`python3 -m vrex.run --anchors CLIP...` (what `vrexctl run --model builtin` runs) adds, beside the
model issue's runs (exact, vrex, control_radius0), every run of vrex/anchors.py on the same streams
and questions, and these JSON sections:

  anchors.{full_cache, streaming_llm, infinipot_v, rekv, timechat_dtd, quest, random, vrex_hierarchy}
  ablations.{no_fcc, temporal_only, no_guard, no_zombie, no_demotion, no_resv, resv_qk_only, no_reuse}
      accuracy {"mean", "ci95"}, accuracy_change vs full cache (CI), accuracy_change_vs_vrex (paired
      against vrex_hierarchy per question, CI; when it ran; alias_* runs: accuracy_change_vs_alias against
      no_refresh), device_bytes_peak and
      total_bytes_peak (summed over the streams: each stream's peak), device_ratio (vs the full
      cache's device peak), reuse_rate, prefill.{flops_ratio (visual prefill, questions left out),
      time_ratio (whole step, CI)}, device_bytes_by_length (peak up to each quarter of the stream)
  zombie_by_use.{zombie_use, zombie_use_r4}
      zombie release by use against creation age's curve (no_zombie_r4 / no_zombie / no_zombie_r6):
      device bytes at equal staging traffic, blocks staged back at equal device bytes (CIs)
  zombie_by_reference.{no_refresh, no_refresh_r4}
      zombie release against creation age where blocks are aliased: the aliasing V-Rex at 5 and 4
      resident frames on the curve of alias_no_zombie at anchors.ALIAS_CURVE's resident frames, the
      same two figures (vrex/on_curve.py)
  zombie_bound
      from the zombie_bound run's logged selections (vrex/zombie_bound.py): creation age and use
      replayed, the clairvoyant bound on any coldness rule, and whether a read predicts a read
  resv.{recall_mean, kv_bytes_ratio}, resv.{oracle, quest, quest_bias, random}.recall_mean,
  resv.qk_only.{recall_mean, kv_bytes_ratio}
      V-Rex's position-aware ReSV vs the exact top-k oracle, Quest, Quest + position table and random
      at the same block count, and the HAL's q.k-only ReSV at its own bytes, on every question the
      V-Rex run asked about the past (layer-0 attention mass over the whole history)

The full cache is the exact run (every block on the device, nothing evicted): its device peak is
the `kv_bytes.exact_peak` of the model issue.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import anchors, on_curve, task, zombie_bound
from .decoder import Config

# The aliasing zombie-release study's runs (zombie_by_reference): the aliasing V-Rex at the window, and
# creation age at the resident frames of anchors.ALIAS_CURVE.
ALIAS_STUDY_RUNS = ("no_refresh_r4", *(f"alias_no_zombie_r{r}" for r in anchors.ALIAS_CURVE))
ANCHORS = ("streaming_llm", "infinipot_v", "rekv", "timechat_dtd", "quest", "random", "vrex_hierarchy")
ABLATIONS = ("no_fcc", "temporal_only", "no_guard", "no_zombie", "no_demotion", "no_resv", "resv_qk_only", "no_reuse",
             "no_recall", "no_refresh", "alias_no_fcc", "alias_no_guard", "recall_on", "alias_no_zombie",
             "alias_temporal_only", "no_gate", "zombie_use", "zombie_use_r4", "no_zombie_r4", "no_zombie_r6",
             "zombie_bound", "shie_nearest_only", "shie_untiered", "shie_one_candidate", *ALIAS_STUDY_RUNS)


def runs(budget: int, resident: int, ratio: float, regions: int = 16, only: tuple[str, ...] | None = None,
         vrex: dict[str, Any] | None = None, measure_resv: bool = True,
         alias: dict[str, Any] | None = None) -> dict[str, dict[str, Any]]:
    """Every anchor and ablation run at @budget device blocks per stream, @resident frames resident
    for the retrieval rules (the rest of the budget is their per-question fetch). @only: these runs
    alone (the default leaves out STUDY_RUNS); @vrex: V-Rex's reuse options (anchors.VREX_REUSE); @alias: the aliasing runs' (no_refresh,
    alias_*; anchors.ALIAS_REUSE); anchors.REUSE has both per model variant; @measure_resv: the resv.*
    recall measurement."""
    fetch = budget - resident * regions
    if fetch <= 0:
        raise ValueError(f"budget {budget} blocks leaves nothing to fetch beyond {resident} resident frames")
    meter = anchors.ReuseMeter()
    out = anchors.anchor_runs(budget, resident, fetch, meter, ratio, vrex)
    out.update(anchors.ablation_runs(resident, fetch, ratio, fetch // regions, vrex, alias))
    if only is None:
        out = {k: v for k, v in out.items() if k not in STUDY_RUNS}
    else:
        unknown = set(only) - set(out)
        if unknown:
            raise ValueError(f"no run {', '.join(sorted(unknown))} ({', '.join(out)})")
        if "timechat_dtd" in only and "vrex_hierarchy" not in only:
            raise ValueError("timechat_dtd matches vrex_hierarchy's reuse rate: run both")
        out = {k: v for k, v in out.items() if k in only}
    for i, (name, kw) in enumerate(out.items()):
        kw["extra"]["device"] = i + 1  # its own emulated device: 16 streams and ReSV heads each
        # The resv.* section reads vrex_hierarchy's recall only: the others would spend CPU for nothing.
        kw["extra"]["measure_resv"] = measure_resv and name == "vrex_hierarchy"
    return out


# Runs of the zombie-release study (docs/model.md "Session 11: zombie release by use"), left out of
# the default set (vrexctl run, make bench): name them in `only` (vrex.run --anchor-runs).
STUDY_RUNS = ("zombie_use", "zombie_use_r4", "no_zombie_r4", "no_zombie_r6", "zombie_bound", *ALIAS_STUDY_RUNS)
# Zombie release by use (coldness `use`) and the creation-age control's curve around it: each use run
# with the two creation-age runs whose residency brackets it (one frame less, the same).
ZOMBIE_BRACKETS = {"zombie_use_r4": ("no_zombie_r4", "no_zombie"), "zombie_use": ("no_zombie", "no_zombie_r6")}
# Zombie release where blocks are aliased (docs/model.md "Session 14"): the aliasing V-Rex's runs and
# their resident frames relative to `resident`, each placed on creation age's curve (alias_no_zombie*).
ZOMBIE_ALIAS = {"no_refresh": 0, "no_refresh_r4": -1}


def zombie_by_use(stats: dict[str, list[dict[str, Any]]], seg_lengths: list[list[int]], reps: int = 2000,
                  seed: int = 0) -> dict[str, Any]:
    """Each use run against creation age's chord between its two ZOMBIE_BRACKETS residencies (the
    lower one is the same residency; vrex/on_curve.py): device bytes at equal staging traffic, blocks
    staged back at equal device bytes, and the use run minus the same-residency control, with CIs."""
    return {run: on_curve.against_curve(stats, seg_lengths, run, [lo, hi], lo, reps, seed)
            for run, (lo, hi) in ZOMBIE_BRACKETS.items() if all(n in stats for n in (run, lo, hi))}


def zombie_by_reference(stats: dict[str, list[dict[str, Any]]], seg_lengths: list[list[int]], resident: int,
                        reps: int = 2000, seed: int = 0) -> dict[str, Any]:
    """Zombie release (coldness `zombie`) against creation age where blocks are aliased: each
    ZOMBIE_ALIAS run placed on the curve of the alias_no_zombie runs present (ordered by their resident
    frames), beside the control at its own resident frames (vrex/on_curve.py)."""
    # At another --resident one of ALIAS_CURVE's runs is alias_no_zombie again: a flat chord.
    frames = {"alias_no_zombie": resident, **{f"alias_no_zombie_r{r}": r for r in anchors.ALIAS_CURVE if r != resident}}
    curve = sorted((n for n in frames if n in stats), key=frames.__getitem__)
    out: dict[str, Any] = {}
    for run, r in ZOMBIE_ALIAS.items():
        same = next((n for n in curve if frames[n] == resident + r), None)
        if run in stats and same is not None and len(curve) >= 2:
            out[run] = {**on_curve.against_curve(stats, seg_lengths, run, curve, same, reps, seed),
                        "control_resident_frames": [frames[n] for n in curve]}
    return out


def report(res: dict[str, Any], budget: int, resident: int,
           runs_opts: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """Moves res['policy_stats'] (vrex/run.py) into the anchors/ablations/resv sections."""
    stats: dict[str, list[dict[str, Any]]] = res.pop("policy_stats")
    runs_opts = runs_opts or {}
    acc = res["task"]["accuracy"]
    full_dev = res["kv_bytes"]["exact_peak"]

    def row(name: str) -> dict[str, Any]:
        st = stats[name]
        r = res[name]
        dev = on_curve.total(st, "device_bytes_peak")
        return {"accuracy": acc[name], "accuracy_change": res["quality"][name]["accuracy_change"],
                "accuracy_change_vs_vrex": res["quality"][name].get("accuracy_change_vs_vrex"),
                "accuracy_change_vs_alias": res["quality"][name].get("accuracy_change_vs_alias"),
                "device_bytes_by_length": by_length(st),
                "device_bytes_peak": dev, "total_bytes_peak": on_curve.total(st, "total_bytes_peak"),
                "host_bytes_peak": on_curve.total(st, "host_bytes_peak"),
                "disk_bytes_peak": on_curve.total(st, "disk_bytes_peak"),
                "device_ratio": dev / full_dev, "reuse_rate": r["reuse_rate"],
                "blocks": {k: on_curve.total(st, k)
                           for k in ("demoted", "dropped", "spilled", "fetched", "promoted", "recalled")},
                # The C++ path's host pool (vrex.run --host-reserve): slots reserved when each stream's
                # tiers were created (outside every step), their setup CPU/wall seconds, slots grown past them.
                "host_pool": {k: sum(s.get(f"host_{k}", 0) for s in st)
                              for k in ("reserved", "grown", "reserve_cpu_s", "reserve_wall_s")},
                "policy_counters": {k: int(sum(s.get("policy_counters", {}).get(k, 0) for s in st))
                                    for k in ("candidates", "unknown", "too_old", "hash_far", "gated", "reused",
                                              "recalled", "recalled_past_nearest", "installed")},
                "options": {k: v for k, v in runs_opts.get(name, {}).items() if k not in ("extra", "policy")},
                "prefill": {"flops_ratio": anchors.flop_ratio(st), "flops_ratio_ci": flops_ci(st),
                            # This run's visual FLOP ratio minus V-Rex's, paired per frame (same streams).
                            "flops_ratio_change_vs_vrex": flops_change_ci(st, stats.get("vrex_hierarchy")),
                            "time_ratio": r["prefill"]["time_ratio"],
                            "step_flops_ratio": r["prefill"]["flops_ratio"],
                            # The visual prefill alone (the step minus its questions' half), paired per frame.
                            "visual": r["prefill"].get("visual"),
                            # Both halves without the vrex layer's calls (the emulated hardware's time).
                            "engine": r["prefill"].get("engine")}}

    def flops_ci(st: list[dict[str, Any]]) -> dict[str, Any]:
        """Visual prefill FLOPs / exact's, ratio of sums with its CI by bootstrap over stream segments."""
        num, den, grp = [], [], []
        for si, s in enumerate(st):
            lengths = [seg[2] for seg in res["streams"][si]["segments"]]
            seg_of = np.repeat(np.arange(len(lengths)), lengths)[: len(s["prefill_flops"])]
            num.append(np.asarray(s["prefill_flops"], dtype=float))
            den.append(np.asarray(s["prefill_flops_exact"], dtype=float))
            grp.append(si * 10000 + seg_of)
        return task.ci_dict(np.concatenate(num), np.concatenate(grp), ratio_of=np.concatenate(den))

    def flops_change_ci(st: list[dict[str, Any]], base: list[dict[str, Any]] | None) -> dict[str, Any] | None:
        """(FLOPs - V-Rex's FLOPs) / exact's, per frame of the same streams, with the CI of flops_ci."""
        if base is None or base is st:
            return None
        num, den, grp = [], [], []
        for si, (s, b) in enumerate(zip(st, base)):
            lengths = [seg[2] for seg in res["streams"][si]["segments"]]
            n = min(len(s["prefill_flops"]), len(b["prefill_flops"]))
            seg_of = np.repeat(np.arange(len(lengths)), lengths)[:n]
            num.append(np.asarray(s["prefill_flops"][:n], dtype=float) - np.asarray(b["prefill_flops"][:n], dtype=float))
            den.append(np.asarray(s["prefill_flops_exact"][:n], dtype=float))
            grp.append(si * 10000 + seg_of)
        return task.ci_dict(np.concatenate(num), np.concatenate(grp), ratio_of=np.concatenate(den))

    edges = [hi for _, hi in res["task"]["by_length"]["frames"]]
    bb = res["kv_bytes"]["block_bytes"]

    def by_length(st: list[dict[str, Any]]) -> list[int]:
        """Device bytes peak up to the end of each quarter of the stream, summed over the streams."""
        return [int(sum(max(s["device_series"][: e] or [0]) for s in st)) for e in edges]

    full_by_len = [int(sum(min(e, f["frames"]) * 16 * bb for f in res["streams"])) for e in edges]
    out_a: dict[str, Any] = {"full_cache": {"accuracy": acc["exact"], "device_bytes_peak": full_dev,
                                            "device_bytes_by_length": full_by_len,
                                            "total_bytes_peak": full_dev, "device_ratio": 1.0, "reuse_rate": 0.0,
                                            "prefill": {"flops_ratio": 1.0}}}
    out_a.update({n: row(n) for n in ANCHORS if n in stats})
    res["anchors"] = out_a
    res["ablations"] = {n: row(n) for n in ABLATIONS if n in stats}
    seg_lengths = [[seg[2] for seg in s["segments"]] for s in res["streams"]]
    zu = zombie_by_use(stats, seg_lengths)
    if zu:
        res["zombie_by_use"] = zu
    zr = zombie_by_reference(stats, seg_lengths, resident)
    if zr:
        res["zombie_by_reference"] = zr
    if "zombie_bound" in stats and all("reads" in s for s in stats["zombie_bound"]):
        c = Config()
        res["zombie_bound"] = zombie_bound.bound(stats["zombie_bound"], seg_lengths, c.window, c.regions,
                                                 c.question_reach, budget - resident * c.regions, resident)
    res["anchors_setup"] = {
        "budget_blocks_per_stream": budget, "resident_frames": resident,
        "fetch_blocks_per_question": budget - resident * 16,
        "block_bytes": bb, "length_frames": res["task"]["by_length"]["frames"],
        "note": "device bytes: blocks kept on the device (pinned) + blocks staged for one question's read "
                "and the prefill window + selector metadata; each stream's peak, summed over the streams"}
    if "vrex_hierarchy" in stats:
        st = stats["vrex_hierarchy"]
        rec = {k: np.concatenate([np.asarray(s[k], dtype=float) for s in st]) for k in
               ("recall_resv", "recall_oracle", "recall_quest", "recall_random", "bytes_ratio", "capped",
                "recall_quest_bias", "recall_resv_qk", "bytes_ratio_resv_qk", "fetched_q")}
        g = np.concatenate([np.full(len(s["recall_resv"]), i) for i, s in enumerate(st)])

        def ci(x: np.ndarray) -> dict[str, Any]:
            return task.ci_dict(x, g) if len(x) else {"mean": None, "ci95": [None, None]}

        res["resv"] = {
            "recall_mean": float(rec["recall_resv"].mean()) if len(g) else None,
            "recall": ci(rec["recall_resv"]),
            "kv_bytes_ratio": float(rec["bytes_ratio"].mean()) if len(g) else None,
            "oracle": {"recall_mean": float(rec["recall_oracle"].mean()) if len(g) else None},
            "quest": {"recall_mean": float(rec["recall_quest"].mean()) if len(g) else None},
            "random": {"recall_mean": float(rec["recall_random"].mean()) if len(g) else None},
            "quest_bias": {"recall_mean": float(rec["recall_quest_bias"].mean()) if len(g) else None},
            "qk_only": {"recall_mean": float(rec["recall_resv_qk"].mean()) if len(rec["recall_resv_qk"]) else None,
                        "kv_bytes_ratio": float(rec["bytes_ratio_resv_qk"].mean())
                        if len(rec["bytes_ratio_resv_qk"]) else None},
            "fetched_blocks_per_question": float(rec["fetched_q"].mean()) if len(rec["fetched_q"]) else None,
            "questions": int(len(g)),
            "capped_share": float(rec["capped"].mean()) if len(rec["capped"]) else None,
            "lut_scale": [s["lut_scale"] for s in st],
            "basis": "layer-0 attention mass of the question over every past block (mean of the heads' "
                     "softmax, q.k + the learned position bias, within the question's reach); bytes = blocks "
                     "selected / blocks of the history; CI by stream. resv = V-Rex's position-aware ReSV "
                     "(resv_pos); oracle, quest (q.k page bound), quest_bias (bound + position table) and random "
                     "at its block count; qk_only = the HAL's q.k-only ReSV at its own bytes",
        }
    return res
