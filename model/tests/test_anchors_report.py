"""anchors_report.equal_accuracy: the device KV an anchor needs to come within V-Rex's CI of the full
cache, from records of the same streams at several budgets; sweep_report: one table per workload and
seed, and the seeds pooled (synthetic records: no run needed)."""
from __future__ import annotations

from typing import Any

import pytest

from vrex import anchors_report


def record(budget: int, anchors: dict[str, tuple[int, float]], exact: float = 0.85, questions: int = 100,
           seed: int = 21, workload: str = "edited", segments: list[int] | None = None,
           vrex: tuple[int, float] = (40, -0.005)) -> dict[str, Any]:
    """An anchors record at @budget: @anchors name -> (device bytes, mean accuracy change). With
    @segments (questions per segment): task.by_segment, every run @exact right in each segment plus
    its change (changes in multiples of 1 / the segment size keep the counts whole)."""
    def ch(m: float) -> dict[str, Any]:
        return {"mean": m, "ci95": [m - 0.01, m + 0.01]}

    a: dict[str, Any] = {"full_cache": {"device_bytes_peak": 1000, "accuracy_change": None},
                         "vrex_hierarchy": {"device_bytes_peak": vrex[0],
                                            "accuracy_change": {"mean": vrex[1], "ci95": [vrex[1] - 0.004, vrex[1] + 0.004]}}}
    a.update({n: {"device_bytes_peak": b, "accuracy_change": ch(m)} for n, (b, m) in anchors.items()})
    task: dict[str, Any] = {"accuracy": {"exact": {"mean": exact}}}
    if segments:
        changes = {"vrex_hierarchy": vrex[1], **{n: m for n, (_, m) in anchors.items()}}
        task["by_segment"] = {"groups": [[0, i] for i in range(len(segments))], "questions": segments,
                              "correct": {"exact": [round(exact * n) for n in segments],
                                          **{k: [round((exact + m) * n) for n in segments] for k, m in changes.items()}}}
    return {"anchors": a, "anchors_setup": {"budget_blocks_per_stream": budget}, "questions": questions,
            "task": task, "model": "builtin", "args": {"workload": workload, "seed": seed}}


def test_the_first_budget_within_vrex_ci_is_reported_and_a_flat_anchor_is_not_reached() -> None:
    main = record(84, {"rekv": (30, -0.2), "dtd": (20, -0.3)})
    sweeps = [record(640, {"rekv": (200, -0.005), "dtd": (20, -0.3)}), record(164, {"rekv": (60, -0.02), "dtd": (20, -0.31)})]
    e = anchors_report.equal_accuracy(main, sweeps)
    assert e["threshold"] == pytest.approx(-0.009)
    rekv = e["anchors"]["rekv"]
    assert [p["budget"] for p in rekv["points"]] == [84, 164, 640]  # sorted by budget
    assert rekv["reached"]["budget"] == 640 and rekv["x_vrex"] == 5.0  # -0.02 at 164 is outside V-Rex's CI
    assert e["anchors"]["dtd"]["reached"] is None and e["anchors"]["dtd"]["x_vrex"] is None
    text = anchors_report.equal_accuracy_lines(e)
    assert "not reached up to budget 640" in text and "5.0x V-Rex" in text


def test_vrex_above_the_full_cache_makes_the_full_cache_the_threshold() -> None:
    main = record(84, {"rekv": (30, -0.2)}, vrex=(40, 0.003))  # V-Rex's CI +0.3 [-0.1, +0.7]: floor -0.1
    assert anchors_report.equal_accuracy(main, [])["threshold"] == pytest.approx(-0.001)
    main = record(84, {"rekv": (30, -0.2)}, vrex=(40, 0.006))  # [+0.2, +1.0] lies above the full cache
    e = anchors_report.equal_accuracy(main, [record(164, {"rekv": (60, 0.0)})])
    assert e["threshold"] == 0.0 and e["anchors"]["rekv"]["reached"]["budget"] == 164


def test_a_sweep_on_other_streams_is_refused() -> None:
    with pytest.raises(ValueError, match="same streams"):
        anchors_report.equal_accuracy(record(84, {"rekv": (30, -0.2)}), [record(164, {"rekv": (60, 0.0)}, exact=0.80)])


def test_pooled_change_bootstraps_over_the_segments_of_every_seed() -> None:
    a = record(84, {"rekv": (30, -0.20)}, segments=[100, 100, 100])
    b = record(84, {"rekv": (30, -0.10)}, seed=22, segments=[100])
    p = anchors_report.pooled_change([a, b], "rekv")
    assert p is not None and p["segments"] == 4 and p["questions"] == 400
    assert p["mean"] == pytest.approx((3 * -20 - 10) / 400)  # weighted by questions, not the mean of the seeds
    assert p["ci95"][0] <= p["mean"] <= p["ci95"][1]
    assert -0.20 <= p["ci95"][0] < p["ci95"][1] <= -0.10  # resampling whole segments: within their extremes
    assert p["ci95"][0] < -0.17 and p["ci95"][1] > -0.15  # the odd seed's segment widens it
    assert anchors_report.pooled_change([a, record(84, {"rekv": (30, -0.1)}, seed=22)], "rekv") is None  # no by_segment


def test_sweep_report_tables_per_workload_and_seeds_pooled_with_spreads() -> None:
    seg = [200, 200]
    recs = [record(164, {"rekv": (60, 0.0), "sl": (60, -0.2)}, segments=seg),
            record(84, {"rekv": (30, -0.2), "sl": (30, -0.3)}, seed=22, segments=seg, vrex=(44, -0.01)),
            record(164, {"rekv": (64, -0.01), "sl": (60, -0.2)}, seed=22, segments=seg),
            record(84, {"rekv": (30, -0.2)}, workload="cutback", exact=0.80),
            record(164, {"rekv": (70, 0.0)}, workload="cutback", exact=0.80)]
    main = record(84, {"rekv": (30, -0.2), "sl": (30, -0.3)}, segments=seg)
    text = anchors_report.sweep_report(main, recs)
    assert text.count("At equal accuracy") == 3  # edited seeds 21 and 22, cutback seed 21
    assert "[builtin model, cutback streams, seed 21]" in text and "1.8x V-Rex" in text  # 70 / 40
    seeds = {21: {84: main, 164: recs[0]}, 22: {84: recs[1], 164: recs[2]}}
    p = anchors_report.pool_seeds(seeds, 84)
    assert p["seeds"] == [21, 22] and p["vrex"]["device_bytes_peak"] == [40, 44]
    v = p["vrex"]["accuracy_change"]
    assert v["mean"] == pytest.approx(-0.0075) and p["threshold"] == v["ci95"][0]
    rekv = p["anchors"]["rekv"]
    assert rekv["points"][1]["device_bytes_peak"] == [60, 64]
    assert rekv["points"][1]["accuracy_change"]["mean"] == pytest.approx(-0.005)
    assert rekv["reached"]["budget"] == 164  # pooled -0.5 points is within V-Rex's pooled CI
    # Each seed against its own V-Rex: seed 21 (-0.9 floor) reached at 164 with 60 B = 1.5x; seed 22's
    # floor is -1.4 points, -1 point is within: 64 B = 64 / 44.
    assert rekv["reached_per_seed"] == [{"budget": 164, "device_bytes_peak": 60}, {"budget": 164, "device_bytes_peak": 64}]
    assert rekv["x_vrex_per_seed"] == pytest.approx([1.5, 64 / 44])
    assert p["anchors"]["sl"]["reached"] is None
    lines = anchors_report.pooled_lines(("builtin", "edited"), p, markdown=True)
    assert "| rekv |" in lines and "= 1.5x V-Rex" in lines  # 1.50 and 1.45 print alike: one figure
    assert "| sl |" in lines and "not reached up to budget 164" in lines
    assert "Pooled over stream seeds [21, 22]" in text


def test_a_rerun_at_the_same_budget_merges_and_a_differing_one_is_refused() -> None:
    a = record(84, {"rekv": (30, -0.2)})
    b = record(84, {"rekv": (30, -0.2), "quest": (70, -0.3)}, segments=[100])
    m = anchors_report.merge_rerun(a, b)
    assert set(m["anchors"]) == {"full_cache", "vrex_hierarchy", "rekv", "quest"}
    assert m["task"]["by_segment"]["correct"]["quest"] == [55]
    with pytest.raises(ValueError, match="differ in rekv"):
        anchors_report.merge_rerun(a, record(84, {"rekv": (30, -0.19)}))
    # A run that moved with the runs beside it (the DTD anchor): the rerun with per-segment answers wins.
    c = record(84, {"rekv": (30, -0.2), "dtd": (20, -0.43)})
    d = record(84, {"rekv": (30, -0.2), "dtd": (20, -0.42)}, segments=[100])
    for m in (anchors_report.merge_rerun(c, d), anchors_report.merge_rerun(d, c)):
        assert m["anchors"]["dtd"]["accuracy_change"]["mean"] == -0.42 and m["task"]["by_segment"]["correct"]["dtd"] == [43]
        assert m["merge_notes"] and "dtd" in m["merge_notes"][0]
    text = anchors_report.sweep_report(c, [d, record(164, {"rekv": (60, 0.0)})])
    assert "note: budget 84: dtd -43.0 vs -42.0 points" in text
    with pytest.raises(ValueError, match="no record at budget 84"):
        anchors_report.sweep_report(a, [record(164, {"rekv": (60, 0.0)}, seed=22)])


def test_the_demos_report_reads_every_committed_record(capsys: pytest.CaptureFixture[str]) -> None:
    """What `make demo` prints first (scripts/demo.sh): the committed records group into one table per
    variant, workload and seed, each with its record at budget 84, and reruns agree."""
    import re
    from pathlib import Path

    model = Path(__file__).resolve().parents[1]
    line = re.search(r"anchors_report\.py (model/\S+) --svg \S+ \\\n\s+--sweep ([^\n]+)",
                     (model.parent / "scripts" / "demo.sh").read_text())
    assert line, "scripts/demo.sh no longer runs anchors_report --sweep"
    sweeps = [p for pat in line.group(2).split() for p in sorted(model.parent.glob(pat))]
    assert anchors_report.main([str(model.parent / line.group(1)), "--sweep", *map(str, sweeps)]) == 0
    out = capsys.readouterr().out
    for wl in ("edited", "cutback"):
        assert f"[builtin model, {wl} streams, seed 21] At equal accuracy" in out


def zombie_record(saved: float, extrapolated_bytes: bool) -> dict[str, Any]:
    def c(m: float) -> dict[str, Any]:
        return {"mean": m, "ci95": [m - 0.02, m + 0.03]}
    return {"model": "deep", "args": {"workload": "cutback", "seed": 22},
            "zombie_by_reference": {"no_refresh": {
                "same_residency": "alias_no_zombie", "extrapolated": False, "extrapolated_bytes": extrapolated_bytes,
                "device_bytes_saved_at_equal_traffic_rel": c(saved), "fetched_saved_at_equal_bytes_rel": c(0.3)}}}


def test_zombie_lines_give_the_savings_with_their_cis_and_flag_extrapolation() -> None:
    text = anchors_report.zombie_lines([zombie_record(0.063, False), zombie_record(0.1, True)])
    lines = text.splitlines()
    assert len(lines) == 3
    assert lines[1].startswith("  [deep model, cutback streams, seed 22] no_refresh")
    assert "device KV saved at equal staging traffic +6.3 % [+4.3, +9.3]" in lines[1]
    assert "blocks staged saved at equal device KV +30.0 % [+28.0, +33.0]" in lines[1]
    assert "(extrapolated)" not in lines[1] and lines[2].endswith("(extrapolated)")
    with pytest.raises(ValueError, match="zombie_by_reference"):
        anchors_report.zombie_lines([{"model": "builtin", "args": {"workload": "edited", "seed": 21}}])


def test_the_demo_reports_zombie_release_from_the_committed_records(capsys: pytest.CaptureFixture[str]) -> None:
    """scripts/demo.sh's --zombie records: zombie release where blocks are aliased, beyond the CI."""
    import re
    from pathlib import Path

    model = Path(__file__).resolve().parents[1]
    demo = (model.parent / "scripts" / "demo.sh").read_text()
    main = re.search(r"anchors_report\.py (model/\S+)", demo)
    zombie = re.search(r"--zombie ([^\n]+)", demo)
    assert main and zombie, "scripts/demo.sh no longer reports the zombie-release records"
    paths = [p for pat in zombie.group(1).split() for p in sorted(model.parent.glob(pat))]
    assert len(paths) >= 2
    assert anchors_report.main([str(model.parent / main.group(1)), "--zombie", *map(str, paths)]) == 0
    out = capsys.readouterr().out
    for wl in ("cutback", "edited"):
        line = next(x for x in out.splitlines() if x.startswith(f"  [builtin model, {wl} streams, seed 21] no_refresh "))
        low = float(re.search(r"equal staging traffic [+-][0-9.]+ % \[([+-][0-9.]+),", line).group(1))
        assert low > 0, line  # beyond the CI
