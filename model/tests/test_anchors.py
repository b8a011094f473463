"""Issue 22: each anchor's selection rule on inputs whose right answer is known, the memory
hierarchy's demotion / spill / fetch-back round trips (bytes equal), and the managed runs end to end."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from vrex import anchors, hierarchy, lcp
from vrex.anchors import ReuseMeter
from vrex.decoder import Config, Decoder

hal = lcp.hal
torch.set_num_threads(1)  # a shared 2-core machine


@pytest.fixture()
def model() -> Decoder:
    torch.manual_seed(0)
    return Decoder(Config()).eval()


def frames(n: int, seed: int = 1) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(64, Config().feat_dim, generator=g) for _ in range(n)]


def luma(i: int) -> np.ndarray:
    return np.random.default_rng(i).integers(0, 256, (96, 128), dtype=np.uint8)


def managed(model: Decoder, opts: dict | None = None, **extra: object) -> lcp.StreamRunner:
    return lcp.Session(model, lcp.Options(policy="managed", extra=extra, **(opts or {}))).stream()


def run(r: lcp.StreamRunner, xs: list[torch.Tensor], questions: bool = True, lumas: list[np.ndarray] | None = None,
        ) -> list[torch.Tensor]:
    out = []
    for t, x in enumerate(xs):
        qr = torch.tensor([t % 16, (5 * t) % 16]) if questions else torch.zeros(0, dtype=torch.long)
        qg = torch.tensor([t, t // 2]) if questions else torch.zeros(0, dtype=torch.long)
        out.append(r.step(lumas[t] if lumas else luma(t), x, qr, qg)[0])
    return out


# ---- selection rules on known answers ------------------------------------------------------------

def test_dtd_drops_the_least_changed_regions() -> None:
    prev = torch.nn.functional.normalize(torch.randn(16, 8, generator=torch.Generator().manual_seed(0)), dim=-1)
    cur = prev.clone()
    cur[[2, 9, 11]] = -prev[[2, 9, 11]]  # three regions changed completely
    cur[4] = torch.nn.functional.normalize(prev[4] + 0.5 * torch.ones(8), dim=0)  # one a little
    assert set(anchors.dtd_pick(cur, prev, 12)) == set(range(16)) - {2, 9, 11, 4}
    assert set(anchors.dtd_pick(cur, prev, 13)) == set(range(16)) - {2, 9, 11}
    assert anchors.dtd_pick(cur, prev, 0) == []


def test_infinipot_evicts_redundant_small_values_first() -> None:
    red = [0.99, 0.1, 0.5, 0.99]
    vn = [1.0, 5.0, 3.0, 4.0]
    order = anchors.infinipot_order(red, vn)
    assert order[0] == 0 and order[-1] == 1  # redundant + small goes first; novel + large stays
    assert order.index(3) < order.index(2)  # same norm scale: the redundant one first


def test_quest_bound_is_an_upper_bound_and_finds_the_page() -> None:
    g = torch.Generator().manual_seed(3)
    keys = torch.randn(40, 16, generator=g)
    q = torch.randn(16, generator=g)
    keys[24:28] = q * 3  # page 6 holds keys aligned with the query
    ub = anchors.quest_bound(q, keys, 4)
    true_max = (keys @ q).view(10, 4).max(1).values
    assert torch.all(ub >= true_max - 1e-5)
    assert int(ub.argmax()) == 6


def test_rekv_ranks_frames_by_mean_key() -> None:
    g = torch.Generator().manual_seed(4)
    q = torch.randn(32, generator=g)
    fk = [torch.randn(64, 32, generator=g) * 0.1 for _ in range(5)]
    fk[3] += q  # frame 3's mean key points at the query, frame 1's away from it
    fk[1] -= q
    order = anchors.rekv_frame_order(fk, q)
    assert order[0] == 3 and order[-1] == 1


def test_mass_lut_is_monotone_and_keeps_every_cluster() -> None:
    lut = anchors.mass_lut(6.0)
    assert lut[0] == 65535 and all(a >= b for a, b in zip(lut, lut[1:])) and min(lut) >= 1


def test_host_tier_entry_is_found_after_a_cut_and_bad_input_says_why() -> None:
    """The binding's host tier (hal.KvAllocator.import_memory, Stream.index_host_tier): a block
    copied to host memory and indexed under its frame's fingerprint (motion bits cleared) is found
    by a similarity lookup after a cut, long past zombie release; bad input raises with context."""
    import os
    dev = hal.Device.open("emulated")
    alloc = hal.KvAllocator(dev, 4, 4, 32, 4)
    fd = os.memfd_create("host-tier")
    os.ftruncate(fd, 4 * alloc.block_bytes)
    mem = alloc.import_memory(fd)
    os.close(fd)
    st = alloc.create_stream()
    rng = np.random.default_rng(3)
    scene_a, scene_b = (rng.integers(0, 255, (96, 128), dtype=np.uint8) for _ in range(2))
    appearance = lambda fp: (fp[0] & ~0xFFFFFFFF, fp[1])  # noqa: E731
    fa = st.begin_frame(scene_a)["fp"]
    blk = st.allocate(3)
    np.frombuffer(blk, dtype=np.uint8)[:] = 7
    want = bytes(blk)  # the device block goes with zombie release below
    st.end_frame()
    st.begin_frame(scene_b)
    np.frombuffer(mem, dtype=np.uint8)[alloc.block_bytes:2 * alloc.block_bytes] = np.frombuffer(blk, dtype=np.uint8)
    host = st.index_host_tier(mem, alloc.block_bytes, 3, 0, appearance(fa))
    assert host.frame == 0 and host.region == 3 and mem.blocks == 1
    with pytest.raises(RuntimeError, match="index_host_tier.*past the current frame 1"):
        st.index_host_tier(mem, 0, 3, 2, appearance(fa))
    with pytest.raises(RuntimeError, match="not a multiple of 64"):
        st.index_host_tier(mem, 32, 3, 0, appearance(fa))
    st.end_frame()
    for _ in range(dev.zombie_frames + 3):
        st.begin_frame(scene_b)
        st.end_frame()
    back = st.begin_frame(scene_a)
    hit = st.retrieve_similar(3, appearance(back["fp"]), 8)
    assert hit is not None and hit["block"].id == host.id and hit["frame"] == 0 and hit["distance"] == 0
    assert bytes(hit["block"]) == want == b"\x07" * alloc.block_bytes
    st.end_frame()


def test_retrieve_candidates_by_tier_nearest_first() -> None:
    """The binding's SHIE query by tier, N nearest (Stream.retrieve_candidates; HAL Query::candidates):
    two host-tier copies 1 and 3 bits from a device block's fingerprint come after it with every
    tier, alone with the host tier, never with the device tier; bad arguments raise with context."""
    import os
    dev = hal.Device.open("emulated")
    alloc = hal.KvAllocator(dev, 4, 4, 32, 4)
    fd = os.memfd_create("host-tier")
    os.ftruncate(fd, 4 * alloc.block_bytes)
    mem = alloc.import_memory(fd)
    os.close(fd)
    st = alloc.create_stream()
    scene = np.random.default_rng(4).integers(0, 255, (96, 128), dtype=np.uint8)
    fp = st.begin_frame(scene)["fp"]
    blk = st.allocate(2)
    st.end_frame()
    st.begin_frame(np.roll(scene, 7, axis=1))
    near = [st.index_host_tier(mem, i * alloc.block_bytes, 2, 0, (fp[0], fp[1] ^ ((1 << (2 * i + 1)) - 1)))
            for i in range(2)]
    both = st.retrieve_candidates(2, fp, 8)
    assert [(c["block"].id, c["distance"], c["host_tier"]) for c in both] == \
        [(blk.id, 0, False), (near[0].id, 1, True), (near[1].id, 3, True)]
    assert [c["block"].id for c in st.retrieve_candidates(2, fp, 8, tier="host")] == [near[0].id, near[1].id]
    assert [c["block"].id for c in st.retrieve_candidates(2, fp, 8, tier="device")] == [blk.id]
    assert [c["block"].id for c in st.retrieve_candidates(2, fp, 8, tier="host", n=1)] == [near[0].id]
    with pytest.raises(RuntimeError, match="at most 8"):
        st.retrieve_candidates(2, fp, 8, n=9)
    with pytest.raises(ValueError, match="tier must be"):
        st.retrieve_candidates(2, fp, 8, tier="disk")
    st.end_frame()
    runs = anchors.ablation_runs(5, 4, 0.5, 4)
    assert runs["shie_nearest_only"]["tiered"] is False and runs["shie_nearest_only"]["recall_candidates"] == 1
    assert lcp.Options().recall_candidates == 8 and lcp.Options().tiered


def test_resv_head_selects_the_block_of_a_matching_key() -> None:
    """The HAL's ReSV head (the device's hash and WiCSum) picks the block whose keys match the query."""
    dev = hal.Device.open("emulated")
    g = torch.Generator().manual_seed(5)
    keys = torch.randn(256, 64, generator=g)
    q = torch.randn(64, generator=g)
    keys[40:44] = q + 0.01 * torch.randn(4, 64, generator=g)  # block 10
    head = hal.ResvHead(dev, 64, 7, 0.05, "mass", lut=anchors.mass_lut(8.0), tokens_per_block=4)
    head.append(np.ascontiguousarray(keys.numpy()))
    sel = head.select(np.ascontiguousarray(q.numpy()), True)
    blocks = {b for first, count in sel["ranges"] for b in range(first, first + count)}
    assert 10 in blocks and len(blocks) < 64 // 2


def test_resv_hash_is_the_devices_hash() -> None:
    """Keys hashed at insertion (hal.resv_hash: lib/resv.c's HCU on the host) hash exactly as the
    device's ReSV head hashes a query with the same seed; the opposite key flips every bit."""
    dev = hal.Device.open("emulated")
    g = torch.Generator().manual_seed(6)
    x = np.ascontiguousarray(torch.randn(5, 64, generator=g).numpy())
    h = hal.resv_hash(x)
    head = hal.ResvHead(dev, 64)
    for row, v in zip(x, h.tolist()):
        assert v == head.select(np.ascontiguousarray(row))["qhash"]
    assert [bin(int(a) ^ int(b)).count("1") for a, b in zip(hal.resv_hash(-x), h)] == [32] * 5
    assert hal.resv_hash(x, anchors.POS_HASH_SEED).tolist() != h.tolist()  # the seed draws other planes
    with pytest.raises(RuntimeError, match="ReSV hash"):
        hal.resv_hash(np.zeros((2, 300), dtype=np.float32))  # the HCU reads at most 256 values


def test_resv_select_blocks_takes_the_heaviest_prefix() -> None:
    """The HAL's position-aware block WiCSum: per token LUT[Hamming] x position weight."""
    hashes = np.zeros(8, dtype=np.uint32)  # every key at the query's hash: the position decides
    lut = [1000] * 33
    pos = np.array([0.125, 0.125, 0.5, 0.5, 0.25, 0.25, 0.125, 0.125], dtype=np.float32)  # blocks .25, 1, .5, .25
    assert hal.resv_select_blocks(hashes, pos, 0, lut, 0.5, 2).tolist() == [1]  # 1.0 of 2.0 reaches half
    assert hal.resv_select_blocks(hashes, pos, 0, lut, 0.6, 2).tolist() == [1, 2]
    assert hal.resv_select_blocks(hashes, pos, 0, lut, 1.0, 2).tolist() == [1, 2, 0, 3]
    assert hal.resv_select_blocks(hashes, pos, 0, lut, 0.0, 2).tolist() == []
    assert hal.resv_select_blocks(hashes, np.zeros(8, dtype=np.float32), 0, lut, 0.5, 2).tolist() == []
    # The hash decides between equal positions: block 0's keys sit 32 bits from the query.
    far = hashes.copy()
    far[:2] = 0xFFFFFFFF
    lut = anchors.mass_lut(7.0)
    assert hal.resv_select_blocks(far, np.full(8, 0.5, dtype=np.float32), 0, lut, 0.2, 2).tolist() == [1]
    for bad in ((hashes, pos[:7], 2), (hashes, pos, 3), (hashes, pos * 4, 2)):
        with pytest.raises(RuntimeError, match="position-aware"):
            hal.resv_select_blocks(bad[0], bad[1], 0, lut, 0.5, bad[2])


def test_position_aware_resv_fetches_the_block_asked_about(model: Decoder) -> None:
    """V-Rex's read (resv_pos) adds the decoder's position table to the hash estimate: a question about
    region 5 of frame 2 selects that block first and keeps the attention mass; the HAL's q.k-only
    ReSV (the rule it replaces) does not see the position and keeps far less (issue 22's 0.115)."""
    xs = frames(14)
    recall = {}
    for read in ("resv_pos", "resv"):
        r = managed(model, memory="tiers", resident=4, read=read, fetch=4, ratio=0.5)
        for t, x in enumerate(xs):
            qr = torch.tensor([5, (3 * t) % 16]) if t >= 6 else torch.zeros(0, dtype=torch.long)
            qg = torch.tensor([2, t // 3]) if t >= 6 else torch.zeros(0, dtype=torch.long)
            r.step(luma(t), x, qr, qg)
        p = r.policy
        if read == "resv_pos":
            q = p.query(5, 2)
            sel = p._resv_pos_slots(q, 5, 2, 13)
            assert sel[0] == 2 * 16 + 5 and len(sel) <= 4
            assert p.meta_bytes() == 14 * 64 * 4  # one 32-bit hash per token, kept since insertion
            assert sum(len(h) for h in p.thash) == 14 * 64
        st = p.stats()
        recall[read] = float(np.mean(st["recall_resv"]))
        r.close()
    assert recall["resv_pos"] >= 0.9 > recall["resv"]


# ---- the memory rules on the runner --------------------------------------------------------------

def test_streaming_llm_keeps_sinks_and_the_newest_frames(model: Decoder) -> None:
    r = managed(model, memory="sink_window", budget=8 * 16)
    run(r, frames(12))
    tiers = r.policy.tiers
    on = set(tiers.keys_on("device"))
    # Budget 8 frames, room left for the next frame: the sinks (frame 0) + frames 6..11.
    want = set(tiers.slot_key[0]) | {k for f in range(6, 12) for k in tiers.slot_key[f]}
    assert on == want
    assert tiers.bytes.device_peak == 8 * 16 * tiers.block_bytes
    # Dropped blocks are gone: their views are zeros and nothing can fetch them.
    k = tiers.slot_key[3][0]
    assert not tiers.readable(k) and torch.count_nonzero(r.views[3][0]) == 0
    with pytest.raises(KeyError):
        tiers.fetch(k)
    r.close()


def test_questions_read_only_device_blocks(model: Decoder) -> None:
    r = managed(model, memory="sink_window", budget=6 * 16)
    run(r, frames(8), questions=False)
    bias = r.policy.question_bias(torch.tensor([1]), torch.tensor([3]))
    assert bias is not None and bias.shape == (1, 9 * 64)
    visible_frames = sorted({i // 64 for i in torch.nonzero(bias[0] == 0).flatten().tolist()})
    assert visible_frames == [0, 4, 5, 6, 7, 8]  # sinks, the resident frames and the present one
    r.close()


def test_use_coldness_keeps_the_device_blocks_the_read_selected(model: Decoder) -> None:
    """Zombie release by use (coldness `use`): a device block the position-aware read selected stays
    on the device for `resident` frames after the read; with zombie (references: with refresh or
    without reuse, creation age) every block leaves at the resident edge. Questions about region 5,
    3 frames back (on the device), reach frames t-5..t-1 (t-5 and t-4 demoted): the selection runs
    and picks the block asked about."""
    xs = frames(14)
    on: dict[str, set] = {}
    for cold in ("use", "zombie"):
        r = managed(model, memory="tiers", resident=4, read="resv_pos", fetch=4, ratio=0.5, coldness=cold)
        for t, x in enumerate(xs):
            qr = torch.tensor([5]) if t >= 6 else torch.zeros(0, dtype=torch.long)
            qg = torch.tensor([t - 3]) if t >= 6 else torch.zeros(0, dtype=torch.long)
            r.step(luma(t), x, qr, qg)
        tiers = r.policy.tiers
        on[cold] = set(tiers.keys_on("device"))
        recent = {k for f in range(11, 14) for k in tiers.slot_key[f]}  # resident 4: 3 frames after aging
        if cold == "zombie":
            assert on[cold] == recent
        else:
            # The blocks asked about at frames 11..13 (region 5 of frames 8..10) stay warm.
            assert on[cold] - recent == {tiers.slot_key[f][5] for f in (8, 9, 10)}
            for f in (8, 9, 10):
                k = tiers.slot_key[f][5]
                assert tiers.entry(k).last_read == f + 3 and not tiers.cold(k, 14) and tiers.cold(k, f + 3 + 4)
        r.close()
    assert len(on["use"]) == len(on["zombie"]) + 3  # (block ids differ between the two sessions)


def test_demote_spill_fetch_round_trip_bytes_equal(model: Decoder, tmp_path: object) -> None:
    r = managed(model, memory="tiers", resident=4, host_blocks=20, disk_dir=str(tmp_path))
    xs = frames(10)
    want: dict[tuple[int, int], torch.Tensor] = {}
    for t, x in enumerate(xs):
        r.step(luma(t), x, torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long))
        for k, v in zip(r.policy.tiers.slot_key[t], r.views[t]):
            if r.policy.tiers.on_device(k):
                want.setdefault(k, v.clone())
    tiers = r.policy.tiers
    tier_of = {k: tiers.entry(k).tier for k in tiers.flat_keys}
    assert set(tier_of.values()) == {"device", "host", "disk"}
    # After frame 9: frames 7..9 resident (the next frame makes 4), 0..6 demoted, 20 of them on the host.
    assert tiers.count("disk") == 7 * 16 - 20 and tiers.count("host") == 20 and tiers.count("device") == 3 * 16
    codes = tiers.slot_tiers()
    assert [hierarchy.TIERS[x] for x in codes] == [tier_of[k] for k in tiers.flat_keys]
    for k in tier_of:
        assert torch.equal(tiers.fetch(k), want[k]), (k, tier_of[k])
    # Views of demoted blocks read the copies: the same bytes the device held.
    for f in range(10):
        for reg in range(16):
            k = tiers.slot_key[f][reg]
            assert torch.equal(r.views[f][reg], want[k])
            if tier_of[k] != "device":  # a zero-copy view of the C++ hierarchy's host or disk copy
                assert r.views[f][reg].data_ptr() == tiers.copy(k).data_ptr()
    b = tiers.bytes
    assert b.demoted == 7 * 16 and b.spilled == 7 * 16 - 20
    assert b.total_peak >= b.device_peak + 20 * tiers.block_bytes
    r.close()
    assert not list(tmp_path.iterdir())  # type: ignore[attr-defined]


def test_demoted_blocks_leave_device_memory(model: Decoder) -> None:
    """Demotion drops the runner's pin: the device's zombie rule then frees the block's memory
    (the HAL's live blocks fall to the resident frames plus those not yet aged out)."""
    s = lcp.Session(model, lcp.Options(policy="managed", extra={"memory": "tiers", "resident": 4}))
    r = s.stream()
    run(r, frames(16), questions=False)
    z = s.device.zombie_frames
    assert s.alloc.stats()["resident_blocks"] <= (4 + z) * 16 < 16 * 16
    es = lcp.Session(model, lcp.Options(policy="exact"))
    ex = es.stream()
    run(ex, frames(16), questions=False)
    assert es.alloc.stats()["resident_blocks"] == ex.distinct_blocks() == 16 * 16  # pinned: all stay
    r.close()
    ex.close()


def test_fetching_everything_back_reproduces_the_full_cache(model: Decoder) -> None:
    """Demoted blocks fetched back are read exactly: with a fetch budget covering the whole
    history, the tiered run's answers equal the full cache's."""
    xs = frames(9)
    full = run(lcp.Session(model, lcp.Options(policy="exact")).stream(), xs)
    r = managed(model, memory="tiers", resident=4, read="random", fetch=10_000)
    tiered = run(r, xs)
    assert r.policy.tiers.bytes.demoted > 0 and r.policy.tiers.bytes.fetched > 0
    for a, b in zip(full, tiered):
        assert torch.allclose(a, b, atol=1e-5)
    r.close()


def test_fetch_budget_limits_what_a_question_reads(model: Decoder) -> None:
    xs = frames(12)
    r = managed(model, memory="tiers", resident=4, read="quest", fetch=8)
    run(r, xs, questions=False)
    bias = r.policy.question_bias(torch.tensor([2]), torch.tensor([1]))
    assert bias is not None
    seen = (bias[0, : 12 * 64] == 0).view(12 * 16, 4).all(1)
    assert int(seen[: 9 * 16].sum()) == 8  # frames 0..8 demoted: 8 blocks fetched
    assert bool(seen[9 * 16:].all())       # resident frames 9..11
    r.policy.tiers.account()
    assert r.policy.tiers.bytes.device_peak <= (4 * 16 + 8) * r.policy.tiers.block_bytes + r.policy.meta_bytes()
    r.close()


def test_dtd_matches_the_reuse_rate_it_is_given(model: Decoder) -> None:
    meter = ReuseMeter()
    meter.reused, meter.regions = 1, 4  # 25 %
    r = managed(model, prefill="dtd", memory="full", match=meter)
    out = [r.step(luma(0), x, torch.zeros(0, dtype=torch.long), torch.zeros(0, dtype=torch.long))[1]
           for x in frames(9)]
    assert out[0].reused == 0  # no previous frame
    assert sum(f.reused for f in out) == round(0.25 * 9 * 16)
    r.close()


def test_the_matched_rate_counts_only_the_frames_before_the_reader() -> None:
    """vrex.run rotates the runs' order every frame: whether the V-Rex run decided frame t before or
    after the DTD run reads its rate at frame t must not change what DTD matches."""
    first, last = ReuseMeter(), ReuseMeter()
    first.add(0, 4, 16)
    first.add(1, 16, 16)  # frame 1 decided before the reader looks
    last.add(0, 4, 16)
    assert first.rate(before=1) == last.rate(before=1) == 0.25
    last.add(1, 16, 16)
    assert first.rate() == last.rate() == 20 / 32


def test_resv_recall_records_against_oracle(model: Decoder) -> None:
    r = managed(model, prefill="vrex", memory="tiers", resident=4, read="resv", fetch=32, ratio=0.5)
    run(r, frames(12))
    st = r.policy.stats()
    assert st["recall_resv"] and len(st["recall_resv"]) == len(st["recall_oracle"])
    for res, ora in zip(st["recall_resv"], st["recall_oracle"]):
        assert 0.0 <= res <= ora + 1e-6 <= 1.0 + 1e-6  # the oracle's blocks hold the most mass
    assert st["lut_scale"] > 0
    r.close()


def test_bad_configuration_is_refused(model: Decoder) -> None:
    with pytest.raises(ValueError, match="prefill"):
        managed(model, prefill="nope")
    with pytest.raises(ValueError, match="fetch"):
        managed(model, memory="tiers", read="quest")
    with pytest.raises(ValueError, match="budget"):
        managed(model, memory="sink_window", budget=16)
    with pytest.raises(ValueError, match="visual window"):
        managed(model, memory="tiers", resident=1)
    with pytest.raises(ValueError, match="ReuseMeter"):
        managed(model, prefill="dtd")


# ---- the JSON of vrex.run --anchors (what vrexctl run --model builtin --anchors prints) ------------

def test_run_anchors_json_sections(footage_env: dict[str, str], monkeypatch: pytest.MonkeyPatch,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from vrex import ablations, run as vrun

    monkeypatch.setenv("VREX_MODEL_WEIGHTS", "random")
    clips = [footage_env["VREX_VTEST_AVI"], footage_env["VREX_MIRE_PATH"]]
    assert vrun.main(["--json", "--anchors", "--no-control", "--streams", "1", "--frames", "14", "--warmup", "2",
                      "--budget", "112", "--resident", "5", *clips]) == 0
    r = json.loads(capsys.readouterr().out)
    assert set(r["anchors"]) == {"full_cache", *ablations.ANCHORS}
    assert set(r["ablations"]) == set(ablations.ABLATIONS) - set(ablations.STUDY_RUNS)
    full = r["anchors"]["full_cache"]["device_bytes_peak"]
    assert full == r["kv_bytes"]["exact_peak"] == 14 * 16 * r["kv_bytes"]["block_bytes"]
    for sec in ("anchors", "ablations"):
        for name, row in r[sec].items():
            a = row["accuracy"]
            assert 0 <= a["ci95"][0] <= a["mean"] <= a["ci95"][1] <= 1, (name, a)
            if name != "full_cache":
                # Equal device memory: every bounded run within the budget (+ ReSV's 8 B a token,
                # ReKV's key a frame); Quest's min/max keys a block (1 KiB) come on top.
                meta = 14 * 16 * 1024 if name == "quest" else 14 * 64 * 8
                assert row["device_bytes_peak"] <= 112 * r["kv_bytes"]["block_bytes"] + meta, name
                assert row["total_bytes_peak"] >= row["device_bytes_peak"]
                assert 0 < row["prefill"]["flops_ratio"] <= 1.0
                ci = row["prefill"]["flops_ratio_ci"]
                assert ci["ci95"][0] - 1e-12 <= ci["mean"] <= ci["ci95"][1] + 1e-12
                assert ci["mean"] == pytest.approx(row["prefill"]["flops_ratio"])
    assert r["ablations"]["no_demotion"]["total_bytes_peak"] == r["ablations"]["no_demotion"]["device_bytes_peak"]
    assert r["anchors"]["vrex_hierarchy"]["total_bytes_peak"] > r["anchors"]["vrex_hierarchy"]["device_bytes_peak"]
    rs = r["resv"]
    assert rs["questions"] > 0 and 0 < rs["kv_bytes_ratio"] <= 1
    assert rs["recall_mean"] <= rs["oracle"]["recall_mean"] + 1e-9 and "recall_mean" in rs["quest"]
    assert "policy_stats" not in r
    # Per clip, per quarter of the stream, and the demo's rendering of them (vrex/anchors_report.py).
    from vrex import anchors_report
    assert len(r["task"]["by_length"]["frames"]) == 4 and set(r["task"]["by_clip"]) <= {"VTEST", "MIRE"}
    assert r["anchors"]["full_cache"]["device_bytes_by_length"][-1] == full
    # Per segment (what anchors_report pools over seeds): the same questions and answers as the means.
    seg = r["task"]["by_segment"]
    assert sum(seg["questions"]) == r["questions"] and len(seg["groups"]) == len(seg["questions"]) >= 1
    for name, correct in seg["correct"].items():
        assert all(0 <= k <= n for k, n in zip(correct, seg["questions"]))
        assert sum(correct) / r["questions"] == pytest.approx(r["task"]["accuracy"][name]["mean"]), name
    assert all(len(row["device_bytes_by_length"]) == 4 for row in r["anchors"].values())
    text = anchors_report.summary(r)
    assert all(name in text for name in (*ablations.ANCHORS, *ablations.ABLATIONS) if name not in ablations.STUDY_RUNS)
    assert anchors_report.svg(r).count("<polyline") == 2 * len(anchors_report.CURVES)


def test_question_about_an_evicted_frame_gets_no_information(model: Decoder) -> None:
    """Everything a question would read was dropped: uniform logits (no NaN from an empty softmax);
    a question about a frame still on the device answers as with the full cache."""
    xs = frames(12)
    r = managed(model, memory="sink_window", budget=6 * 16)
    ex = lcp.Session(model, lcp.Options(policy="exact")).stream()
    q_r, q_g = torch.tensor([3, 3]), torch.tensor([3, 10])
    for t, x in enumerate(xs[:-1]):
        no = torch.zeros(0, dtype=torch.long)
        r.step(luma(t), x, no, no)
        ex.step(luma(t), x, no, no)
    got, _ = r.step(luma(11), xs[11], q_r, q_g)
    want, _ = ex.step(luma(11), xs[11], q_r, q_g)
    assert torch.isfinite(got).all()
    assert torch.equal(got[0], torch.zeros_like(got[0]))  # frames 1..5 evicted (sinks: frame 0 only)
    assert torch.allclose(got[1], want[1], atol=1e-5)    # frames 8..11 resident
    r.close()
    ex.close()


def test_cutback_streams_return_to_each_shot_where_they_left_it() -> None:
    from vrex import workloads
    segs = workloads.cutback_stream({"A": 300, "B": 90}, 200, np.random.default_rng(0))
    assert sum(s.length for s in segs) == 200
    assert all(s.length <= 24 for s in segs)
    last: dict[str, int] = {}
    back = 0
    for s, nxt in zip(segs, segs[1:]):
        last[s.clip] = s.start + s.length
        if nxt.clip in last and nxt.clip != s.clip:
            n = {"A": 300, "B": 90}[nxt.clip]
            assert nxt.start == last[nxt.clip] % n  # continues where it was left
            back += 1
    assert back >= 5
    one = workloads.cutback_stream({"V": 100}, 120, np.random.default_rng(1))
    halves = {s.start < 50 for s in one}
    assert halves == {True, False}  # one clip: two shots, its halves
    assert all(s.start + s.length <= (50 if s.start < 50 else 100) for s in one)


def test_recall_in_the_hierarchy_fetches_demoted_blocks_back(model: Decoder) -> None:
    """V-Rex with its memory hierarchy: a scene that comes back after its blocks were DEMOTED to the
    host tier is found by the SHIE in its host tier and installed from the host copies (fetched back);
    without demotion (dropped) it is not, nor when the host tier's slots went to later blocks."""
    a, b = frames(2, seed=9)
    plan = [a] + [b] * 8 + [a]
    lumas = [luma(200)] + [luma(201)] * 8 + [luma(200)]
    opts = {"max_age": 2, "recall": True, "recall_radius": 8, "recall_guard_bits": 0}
    kw = dict(prefill="vrex", memory="tiers", resident=5, read="resv_pos", fetch=4)
    on = managed(model, opts, **kw)
    gone = managed(model, opts, **{**kw, "drop": True, "read": "device", "fetch": 0})
    small = managed(model, {**opts, "host_slots": 16}, **kw)  # one frame's blocks: B's take A's slots
    for r in (on, gone, small):
        run(r, plan, lumas=lumas)
    pon, pgone = on.policy, gone.policy
    # (scene B's own frames past the age cap are recalled from B's first frame too)
    assert pon.tiers.bytes.demoted >= 16 and pon.tiers.bytes.recalled >= 16
    assert pon.fresh[-1] == 0  # the returning frame computed nothing
    assert pon.tiers.entry(pon.tiers.slot_key[0][0]).tier == "host"  # scene A's blocks were demoted
    assert all(torch.equal(on.views[9][r], pon.tiers.copy(pon.tiers.slot_key[0][r])) for r in range(16))
    assert pgone.fresh[-1] == 16  # dropped: forgotten, computed again
    # Recall is the SHIE's lookup over its host tier: A's device entries went with zombie release
    # (resident 5 < 9 frames), its copies were indexed there; a tier too small to keep them loses A.
    assert pon.prefill.core.hosted >= 16 and pon.prefill.core.host_slots == lcp.Options().host_slots
    assert small.policy.prefill.core.host_slots == 16 and small.policy.fresh[-1] == 16
    for r in (on, gone, small):
        r.close()
