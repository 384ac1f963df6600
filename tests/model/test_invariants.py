"""Property tests: whatever the configuration, the model keeps the hardware's rules."""
import itertools
import math
from collections import defaultdict

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sim import attention, gemm
from sim.config import AttentionConfig, GemmConfig
from sim.hardware import H100

WGMMA_VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong", "overlap", "fa3", "overlap3")

attention_cfgs = st.builds(
    lambda v, d, causal, stages, dtype: AttentionConfig(
        variant=v, headdim=d, causal=causal, stages=stages, dtype=dtype, seqlen=1024),
    st.sampled_from(attention.VARIANTS), st.sampled_from([64, 128, 256]), st.booleans(),
    st.sampled_from([1, 2]), st.sampled_from(["fp16", "bf16"]))

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _simulate(cfg, n_blocks):
    cfg = attention.prepare(cfg, H100)
    clk, trace = attention.simulate(cfg, H100, n_blocks, masked_blocks=1 if cfg.causal else 0)
    return cfg, clk, trace


def _valid(cfg):
    try:
        attention.prepare(cfg, H100)
        return True
    except ValueError:
        return False


@SETTINGS
@given(attention_cfgs.filter(_valid), st.integers(1, 7))
def test_units_never_exceed_capacity(cfg, n):
    _, _, trace = _simulate(cfg, n)
    by_unit = defaultdict(list)
    for i in trace.intervals:
        by_unit[i.unit].append((i.start, i.end))
    for unit, ivs in by_unit.items():
        ivs.sort()
        for (s0, e0), (s1, _) in itertools.pairwise(ivs):
            assert s1 >= e0 - 1e-9, f"{unit} serves two things at once at {s1}"


@SETTINGS
@given(attention_cfgs.filter(_valid), st.integers(1, 7))
def test_ring_rules(cfg, n):
    """No consumer reads a block before its copy landed; no copy overwrites a slot before every
    consumer is done with the block that was in it."""
    cfg, _, trace = _simulate(cfg, n)
    landed, reads, writes = {}, defaultdict(list), {}
    for t, _actor, what, tile in trace.marks:
        if what in ("landed load K", "landed load V"):
            landed[(what[-1], tile)] = t
    for i in trace.intervals:
        # what reads a slot: the wgmmas (operands from shared memory); fa2's ldmatrix (its
        # mma.sync then reads registers)
        if i.tile and (i.unit == "tensor" and cfg.variant != "fa2"
                       or i.unit == "lsu" and i.op.endswith("ldmatrix")):
            ring = "K" if i.op.startswith("QKᵀ") else "V"
            reads[(ring, i.tile)].append((i.start, i.end))
        if i.unit == "tma" and i.op in ("load K", "load V"):
            writes[(i.op[-1], i.tile)] = i.start
    assert reads, "no tensor work recorded"
    for key, spans in reads.items():
        assert min(s for s, _ in spans) >= landed[key] - 1e-9, f"{key} read before it landed"
    stages = cfg.stages
    for (ring, (name, j)), start in writes.items():
        prev = (ring, (name, j - stages))
        if prev in reads:
            assert start >= max(e for _, e in reads[prev]) - 1e-9, \
                f"{ring} block {j} overwrote block {j - stages} while it was read"


@SETTINGS
@given(st.sampled_from(WGMMA_VARIANTS), st.sampled_from([64, 128, 256]), st.integers(1, 6))
def test_tensor_busy_equals_flops_over_rate(variant, d, n):
    cfg, _, trace = _simulate(AttentionConfig(variant=variant, headdim=d, seqlen=1024), n)
    flops = 4 * cfg.block_m * cfg.block_n * cfg.headdim * n          # QKᵀ and PV, 2 FLOP per MAC
    assert math.isclose(trace.work_time("tensor"), flops / H100.tensor_flop_per_clk, rel_tol=1e-9)


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(gemm.VARIANTS), st.integers(1, 3), st.integers(1, 9))
def test_gemm_tensor_busy_equals_flops_over_rate(variant, tiles, k_blocks):
    cfg = gemm.prepare(GemmConfig(variant=variant), H100)
    _, trace = gemm.simulate(cfg, H100, tiles, k_blocks)
    flops = 2 * cfg.block_m * cfg.block_n * cfg.block_k * k_blocks * tiles
    assert math.isclose(trace.work_time("tensor"), flops / H100.tensor_flop_per_clk, rel_tol=1e-9)


@SETTINGS
@given(attention_cfgs.filter(_valid), st.integers(1, 5))
def test_same_config_same_trace(cfg, n):
    _, clk1, t1 = _simulate(cfg, n)
    _, clk2, t2 = _simulate(cfg, n)
    assert clk1 == clk2 and t1.intervals == t2.intervals and t1.marks == t2.marks
