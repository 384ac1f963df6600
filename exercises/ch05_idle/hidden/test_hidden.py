"""Hidden tests of chapter 05 (never released): tiles and a Hardware drawn afresh each run."""
import random

import pytest

from exercises.grading import harness
from sim import H200_DATASHEET as DATASHEET

pub = harness.public(__file__, "test_idle.py")
rng = random.SystemRandom()              # drawn afresh each grading run: no table can hold them
# every rate the prediction reads, changed: a rate typed in from a preset or the whitepaper fails
OTHER_HW = DATASHEET.with_(wgmma_overhead_clk=rng.uniform(6, 24),
                           sfu_exp_per_clk=rng.choice([8, 32]),
                           wgmma_latency_clk=rng.uniform(40, 160),
                           # slower tensor cores, faster shared memory: the math decides a
                           # wgmma, so a typed-in tensor rate shows
                           tensor_flop_per_clk=rng.choice([1536, 2048, 3072]),
                           smem_bytes_per_clk=rng.choice([128, 256]),
                           fma_lanes_per_clk=rng.uniform(48, 200),
                           row_reduce_clk=rng.uniform(5, 60),
                           softmax_fma_per_elem=rng.uniform(1, 6),
                           softmax_stall_per_elem=rng.uniform(0.02, 0.2),
                           softmax_pack_per_elem=rng.uniform(0.5, 3))
# and the other way round: fast tensor cores, slow shared memory. An instruction reads 32 bytes of
# B per 2048 FLOP (and A's 2 KiB too when SS): the reads outlast the math once FLOP/clk exceeds 64
# times bytes/clk, and here it is 128-512 times, so the reads decide every wgmma of both GEMMs and a
# prediction from the math alone fails
SMEM_HW = OTHER_HW.with_(tensor_flop_per_clk=rng.choice([4096, 6144, 8192]),
                         smem_bytes_per_clk=rng.choice([16, 24, 32]))
TILES = [(DATASHEET, rng.choice([64, 80, 96, 128]), 64), (DATASHEET, rng.choice([64, 80]), 256),
         (OTHER_HW, rng.choice([96, 112, 128, 144]), 128),
         (SMEM_HW, rng.choice([64, 96, 128, 160]), rng.choice([64, 128]))]
OTHER = [(hw, bn, d, pub.true_idle(*pub.measured(hw, bn, d))) for hw, bn, d in TILES]


@pytest.mark.points(2)
def test_predict_other_tiles_and_hardware():
    """Other tiles, and a Hardware with every rate changed (tensor, shared memory, FMA lanes, SFU,
    overheads, latency): once with the math deciding each wgmma, once the shared-memory reads."""
    s = pub.sub()
    for hw, bn, d, ref in OTHER:
        assert pub.predicted(s, hw, bn, d) == pytest.approx(ref, abs=1e-3), (bn, d)
