"""Hidden tests of chapter 05 (never released): tiles and a Hardware drawn afresh each run."""
import random

import pytest

from exercises.grading import forms, harness
from sim import H200_DATASHEET as DATASHEET

pub = harness.public(__file__, "test_idle.py")
rng = random.SystemRandom()              # drawn afresh each grading run: no table can hold them


def machine(family):
    """A Hardware with every rate the prediction reads drawn (`rng`), so a rate typed in from a
    preset or the whitepaper fails, in one of three families:
    0: slower tensor cores, faster shared memory: the math decides a wgmma, so a typed-in tensor
       rate shows;
    1: fast tensor cores, slow shared memory. An instruction reads 32 bytes of B per 2048 FLOP
       (and A's 2 KiB too when SS): the reads outlast the math once FLOP/clk exceeds 64 times
       bytes/clk, and here it is 128-512 times, so the reads decide every wgmma of both GEMMs and
       a prediction from the math alone fails;
    2: a softmax whose FMA-pipe work (softmax_fma_per_elem / fma_lanes_per_clk a score) takes 1.5-3
       times its SFU exps (1 / sfu_exp_per_clk), as on ch00's hidden machine: the FMA term decides
       the exp step, and a prediction from the exps alone is short by half the exps or more (the
       idle fraction off by more than 0.01 at every draw)."""
    hw = DATASHEET.with_(wgmma_overhead_clk=rng.uniform(6, 24), sfu_exp_per_clk=rng.choice([8, 32]),
                         wgmma_latency_clk=rng.uniform(40, 160),
                         tensor_flop_per_clk=rng.choice([1536, 2048, 3072]),
                         smem_bytes_per_clk=rng.choice([128, 256]),
                         fma_lanes_per_clk=rng.uniform(48, 200), row_reduce_clk=rng.uniform(5, 60),
                         softmax_fma_per_elem=rng.uniform(1, 6),
                         softmax_stall_per_elem=rng.uniform(0.02, 0.2),
                         softmax_pack_per_elem=rng.uniform(0.5, 3))
    if family == 1:
        hw = hw.with_(tensor_flop_per_clk=rng.choice([4096, 6144, 8192]),
                      smem_bytes_per_clk=rng.choice([16, 24, 32]))
    elif family == 2:
        sfu, lanes = rng.uniform(6, 14), rng.uniform(40, 120)
        hw = hw.with_(sfu_exp_per_clk=sfu, fma_lanes_per_clk=lanes,
                      softmax_fma_per_elem=rng.uniform(1.5, 3) * lanes / sfu)
    return hw


OTHER_HW, SMEM_HW, FMA_HW = (machine(f) for f in range(3))
TILES = [(DATASHEET, rng.choice([64, 80, 96, 128]), 64), (DATASHEET, rng.choice([64, 80]), 256),
         (OTHER_HW, rng.choice([96, 112, 128, 144]), 128),
         (SMEM_HW, rng.choice([64, 96, 128, 160]), rng.choice([64, 128])),
         (FMA_HW, rng.choice([64, 96, 128]), rng.choice([64, 128]))]
OTHER = [(hw, bn, d, pub.true_idle(*pub.measured(hw, bn, d))) for hw, bn, d in TILES]


# A prediction "from the rates alone" is a closed formula: microseconds a call. The course's model
# answers the same questions exactly, and a submission can carry a copy of it (packed and loaded
# at its import, before the session's guard, then hidden from it; or pasted in as plain source).
# So a batch of predictions must come at a formula's speed: the submission's processes may spend
# on the whole batch one and a half times what serving the calls costs (the grader's own file
# that returns a constant, in a sandbox like the submission's, just before:
# `harness.serving_cpu_s`; the half for the load changing between the two sessions) plus
# PER_CALL_S a prediction, counted by the grader from /proc (`Student.timed_calls`: the worker
# and whatever it started). Measured on 2 cores, 800 calls: serving 0.08-0.11 s idle, 0.13-0.17 s
# beside four `grade --jobs 2` (load 3-4); the source's batch 0.09-0.14 s idle, 0.12-0.20 s under
# that load, at most 0.06 s beyond its serving; a copy of the model run over the fewest blocks
# that give the steady state (2; the grader runs 40) 0.7-0.95 s, 0.6-0.85 s beyond its serving
# (wrong/cheat_model_carried_at_import.py). The budget: 0.28-0.42 s.
BATCH = 800
SERVING_FACTOR = 1.5
PER_CALL_S = 0.2e-3
CHECKED_PER_FAMILY = 4
SPEED_TILES = ([(bn, d) for d in (64, 128) for bn in range(64, 177, 16)]
               + [(bn, 256) for bn in (64, 80, 96)])


def at_a_formulas_speed(batch):
    """The submission's predictions for `batch` ((hw, block_n, headdim) each), made one after
    another in one session within the CPU-time budget (the session stopped past it, the limit
    named), each checked to be a number in [0, 1]."""
    serving = harness.serving_cpu_s(__file__, "idle.py", "predict_ws_idle", batch)
    budget = SERVING_FACTOR * serving + len(batch) * PER_CALL_S
    answers, _used = harness.student(__file__).timed_calls(
        "idle:predict_ws_idle", batch, budget,
        f"{SERVING_FACTOR:g} times what serving them costs, {serving:.3f} s, and "
        f"{PER_CALL_S * 1e3:g} ms a prediction")
    return [forms.number(a, "predict_ws_idle", 0, 1) for a in answers]


@pytest.mark.points(1)
def test_predict_other_tiles_and_hardware():
    """Other tiles, and a Hardware with every rate changed (tensor, shared memory, FMA lanes, SFU,
    overheads, latency): once with the math deciding each wgmma, once the shared-memory reads,
    once with the softmax's FMA-pipe work outlasting its exps. Asked among as many drawn
    predictions again as the speed test's batch, under its budget: a carried model that answers
    these few exactly still has to answer the rest at a formula's speed."""
    batch = [(machine(i % 3), *rng.choice(SPEED_TILES)) for i in range(BATCH)]
    at = sorted(rng.sample(range(BATCH), len(OTHER)))
    for i, (hw, bn, d, _ref) in zip(at, OTHER):
        batch[i] = (hw, bn, d)
    answers = at_a_formulas_speed(batch)
    for i, (_hw, bn, d, ref) in zip(at, OTHER):
        assert answers[i] == pytest.approx(ref, abs=1e-3), (bn, d)


@pytest.mark.points(2)
def test_predict_at_a_formulas_speed():
    """800 predictions in one session, each on a machine of its own with every rate drawn (the
    math, the shared-memory reads or the softmax's FMA-pipe work deciding) and a drawn tile,
    within a CPU-time budget of the submission's processes: one and a half times what serving
    the calls costs plus 0.2 ms of CPU a prediction (a formula takes microseconds; running the
    model costs far more); twelve of the answers, chosen after the batch, within 0.001 of the
    model."""
    families = [i % 3 for i in range(BATCH)]
    batch = [(machine(f), *rng.choice(SPEED_TILES)) for f in families]
    answers = at_a_formulas_speed(batch)
    for f in range(3):
        for i in rng.sample([i for i in range(BATCH) if families[i] == f], CHECKED_PER_FAMILY):
            hw, bn, d = batch[i]
            ref = pub.true_idle(*pub.measured(hw, bn, d))
            assert answers[i] == pytest.approx(ref, abs=1e-3), (i, bn, d)


def _union(ivs, t0, t1):
    """The merged busy intervals of one unit, clipped to the window."""
    out = []
    for a, b in sorted((max(a, t0), min(b, t1)) for a, b in ivs):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def true_exposed(tensor, sfu, t0, t1):
    """SFU time minus the part of it under tensor work, from the two units' merged intervals."""
    t, f = _union(tensor, t0, t1), _union(sfu, t0, t1)
    under = sum(max(0.0, min(b, d) - max(a, c)) for a, b in f for c, d in t)
    return (sum(b - a for a, b in f) - under) / (t1 - t0)


def two_consumers(hw, block_n, headdim, n=24):
    """`ws` with two consumer warpgroups: each one's softmax partly under the other's GEMMs."""
    r = harness.run_cta(variant="ws", n_blocks=n, hw=hw, consumers=2, block_m=128,
                        block_n=block_n, headdim=headdim)
    assert r.finished, r.error
    starts = sorted(a for a, _ in harness.gemm_groups(r.trace, "QKᵀ").values())
    unit = {u: [(i.start, i.end) for i in r.trace.intervals if i.unit == u]
            for u in ("tensor", "sfu")}
    return unit["tensor"], unit["sfu"], starts[4], starts[-4]


# the datasheet machine, and one with a slower SFU (drawn): exps 16-50 % of the window exposed
MODEL = [two_consumers(DATASHEET, 128, 128),
         two_consumers(DATASHEET.with_(sfu_exp_per_clk=rng.choice([8, 12])),
                       rng.choice([64, 96, 128]), rng.choice([64, 128]))]


@pytest.mark.points(1)
def test_exposed_softmax_of_the_model():
    """On the model's own `ws` traces (two consumers, their softmaxes partly under each other's
    GEMMs; a drawn SFU rate and tile), and on random intervals with fractional ends, some of
    them holding the whole window."""
    s = pub.sub()
    for tensor, sfu, t0, t1 in MODEL:
        ref = true_exposed(tensor, sfu, t0, t1)
        assert 0 < ref < 1
        assert pub.exposed(s, tensor, sfu, t0, t1) == pytest.approx(ref, abs=1e-9)
    for i in range(10):
        ivs = [[(a, a + rng.uniform(0.1, 9.0)) for a in (rng.uniform(-10, 110) for _ in
                range(rng.randint(1, 20)))] for _ in range(2)]
        t0, t1 = rng.uniform(-5, 20), rng.uniform(70, 120)
        if i % 2:                    # an interval of either unit that holds the whole window
            ivs[rng.randint(0, 1)].append((t0 - rng.uniform(0.1, 40), t1 + rng.uniform(0.1, 40)))
        assert pub.exposed(s, *ivs, t0, t1) == pytest.approx(true_exposed(*ivs, t0, t1))
