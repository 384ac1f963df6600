"""CPU-only checks of the Gluon attention ladder: each variant compiles for sm_90a without a GPU,
and its PTX has what its name claims (TMA, mbarrier waits, wgmma with P from registers, async
wgmma + wait_group 1 for the overlap variants, setmaxnreg only where there are roles). Bad inputs
raise the documented errors. Compiles are cached per session (about a second each)."""
from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton.experimental.gluon")

from kernels.attention import KERNELS, VARIANTS, attention, check_inputs, config, host, steps
from kernels.cuda import compile as cc

WS = ("ws", "ws_pingpong", "fa3")
OVERLAP = ("overlap", "fa3")
TURNS = ("ws_pingpong", "fa3")


@pytest.fixture(scope="session")
def compiled():
    cache = {}

    def get(variant, d=128, causal=False, dtype=torch.float16, stages=None, softmax=None):
        key = (variant, d, causal, dtype, stages, softmax)
        if key not in cache:
            cfg = config(variant, d, causal, stages)
            cache[key] = (cfg, host.compile_sm90(KERNELS[variant], cfg, dtype, causal,
                                                 softmax=softmax))
        return cache[key]

    return get


def count(ptx: str, pattern: str) -> int:
    return len(re.findall(pattern, ptx))


@pytest.mark.parametrize("variant", VARIANTS)
def test_ptx_has_the_hopper_pieces(compiled, variant):
    cfg, k = compiled(variant)
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx
    assert count(ptx, r"cp\.async\.bulk\.tensor\.2d\.shared::cluster\.global") >= 3, "no TMA of Q, K, V"
    assert count(ptx, r"mbarrier\.try_wait\.parity") >= 3, "no mbarrier waits"
    assert count(ptx, r"mbarrier\.arrive\.expect_tx") >= 3, "TMA not tracked by expect-tx bytes"
    assert count(ptx, r"wgmma\.mma_async") >= 1, "no wgmma"
    # P·V takes P from registers (wgmma RS: the A operand is a register list, not a descriptor)
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.f16\.f16 \{[^}]*\}, \{", ptx)
    assert count(ptx, r"ex2\.approx") >= 1, "softmax without exp2"
    if variant in WS:
        assert count(ptx, r"setmaxnreg\.inc") >= 1 and count(ptx, r"setmaxnreg\.dec") >= 1
        assert re.search(r"\.maxnreg\s+\d+", ptx), "setmaxnreg needs a register cap at entry"
        assert k.metadata.num_warps == 4 * (cfg.consumers + 1)  # consumers + the producer's WG
    else:
        assert "setmaxnreg" not in ptx, f"{variant} should not reallocate registers"
        assert k.metadata.num_warps == 4 * cfg.consumers
    if variant in OVERLAP:
        assert count(ptx, r"wgmma\.wait_group\.sync\.aligned 1;") >= 1, "no wait for the scores alone"
        assert count(ptx, r"wgmma\.commit_group") >= 2
    else:
        assert count(ptx, r"wgmma\.wait_group\.sync\.aligned 1;") == 0, "only overlap keeps a GEMM in flight"


@pytest.mark.parametrize("variant,d,causal,dtype", [
    ("overlap", 128, False, torch.float16), ("overlap", 128, True, torch.float16),
    ("fa3", 128, False, torch.float16), ("fa3", 64, False, torch.float16),
    ("fa3", 256, True, torch.float16), ("fa3", 128, True, torch.bfloat16)])
def test_softmax_runs_under_its_own_pv(compiled, variant, d, causal, dtype):
    """In SASS, not just PTX: every exp of a block's softmax lies between the wait for the
    scores (DEPBAR 1) and the wait for P_{j-1}·V_{j-1} (DEPBAR 0), in each consumer's loop.
    Without steps.schedule_fence ptxas hoists the second wait above the softmax (0 here)."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    cfg, k = compiled(variant, d, causal, dtype)
    loops = cfg.consumers if variant in WS else 1  # one loop body per consumer partition
    exps = 64 * cfg.BN // 128 + 2  # 64 rows x BN over 128 threads, + alpha for a thread's 2 rows
    assert cc.softmax_under_pv(cc.sass_of_cubin(k.asm["cubin"])) == [exps] * loops


@pytest.mark.parametrize("variant,d", [(v, 128) for v in VARIANTS] + [("fa3", 64), ("fa3", 256)])
def test_epilogue_stores_whole_lines(compiled, variant, d):
    """O leaves each consumer 16 bytes a thread (STG.E.128, through the dead Q tile in shared
    memory), not from the accumulator's layout, 4 bytes a thread of 8 rows an instruction
    (7.7 K clk a warpgroup at d 256: results/archive/traces/old_epilogue/). Rows x d x 2 bytes over 16
    per thread."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    cfg, k = compiled(variant, d)
    sass = cc.sass_of_cubin(k.asm["cubin"])
    threads = 128 * cfg.consumers                # every consumer warp stores its share of O
    partitions = cfg.consumers if variant in WS else 1
    assert sass.count("STG.E.128") == cfg.BM * d * 2 // 16 // threads * partitions
    # what else a consumer stores: its rows' LSE and the schedule fence's never-taken store
    small = len(re.findall(r"STG\.E(?:\.U16)? ", sass))
    assert small <= 3 * partitions, f"{small} stores of <= 4 bytes: O stored in pieces"


@pytest.mark.parametrize("variant", VARIANTS)
def test_rings_and_barriers(compiled, variant):
    """mbarriers initialised: q_full + K and V full (+ empty where a producer refills them)
    (+ one turn per consumer where consumers take turns); shared memory follows the rings."""
    cfg, k = compiled(variant)
    inits = count(k.asm["ptx"], r"mbarrier\.init\.shared")
    s, c = cfg.stages, cfg.consumers
    expected = 1 + 2 * s + (2 * s if variant in WS else 0) + (c if variant in TURNS else 0)
    assert inits == expected, f"{inits} mbarrier inits, expected {expected}"
    assert cfg.smem_bytes() - 1024 <= k.metadata.shared <= host.SMEM_PER_BLOCK
    assert cfg.stages == (1 if variant == "sequential" else 2)


def test_pingpong_hands_turns_over(compiled):
    """Turns are plain (no-tx) arrives, on top of the ring releases ws already has."""
    plain = r"mbarrier\.arrive\.shared::cta\.b64"
    ws = count(compiled("ws")[1].asm["ptx"], plain)
    assert count(compiled("ws_pingpong")[1].asm["ptx"], plain) > ws
    assert count(compiled("pipelined")[1].asm["ptx"], plain) == 0  # no producer: bar.sync only


@pytest.mark.parametrize("d,causal,dtype", [(64, False, torch.float16), (256, True, torch.float16),
                                            (128, True, torch.bfloat16)])
def test_fa3_other_shapes(compiled, d, causal, dtype):
    cfg, k = compiled("fa3", d, causal, dtype)
    ptx = k.asm["ptx"]
    kind = "f16.f16" if dtype == torch.float16 else "bf16.bf16"
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.BN}k16\.f32\.{kind}", ptx)
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{d}k16\.f32\.{kind}", ptx)
    assert count(ptx, rf"setmaxnreg\.inc\.sync\.aligned\.u32\s+{cfg.consumer_regs};") >= 1
    assert k.metadata.num_warps == 4 * (cfg.consumers + 1)
    if d == 64:
        assert cfg.consumers == 3 and cfg.BM == 192  # FA3's d64 tile: 3 consumer warpgroups


def test_configs():
    assert (config("fa3", 64).BM, config("fa3", 64).BN) == (192, 128)
    assert (config("fa3", 128).BM, config("fa3", 128).BN) == (128, 128)
    assert (config("fa3", 256).BM, config("fa3", 256).BN) == (128, 64)
    assert config("overlap", 64).BM == 128  # no 12-warp partition: 192 rows is not a power of 2
    for v in VARIANTS:
        for d in (64, 128, 256):
            cfg = config(v, d)
            assert cfg.smem_bytes() <= host.SMEM_PER_BLOCK
            if cfg.warp_specialized:
                assert 128 * (cfg.consumers * cfg.consumer_regs + cfg.producer_regs) <= 65536
    assert config("fa3", 128, stages=3).smem_bytes() <= host.SMEM_PER_BLOCK  # 224 KiB fits
    with pytest.raises(ValueError, match="227 KiB shared memory per block"):
        config("fa3", 256, stages=4)
    with pytest.raises(ValueError, match="one-slot ring"):
        config("sequential", 128, stages=2)
    with pytest.raises(ValueError, match="stages must be in 2..4"):
        config("ws", 128, stages=1)
    with pytest.raises(ValueError, match="2 or 3 consumer warpgroups"):
        config("fa3", 64, tile=(256, 64))
    with pytest.raises(ValueError, match="power of two"):
        config("overlap", 64, tile=(192, 128))
    assert config("ws", 128, tile=(192, 64)).consumers == 3
    assert host.flops(4, 16, 8448, 128, False) == 4 * 4 * 16 * 8448**2 * 128
    assert host.flops(4, 16, 8448, 128, True) == 2 * 4 * 16 * 8448**2 * 128


# ------------------------------------------------------------------------------- bad inputs
def t(*shape, dtype=torch.float16):
    return torch.empty(*shape, dtype=dtype)


@pytest.mark.parametrize("q,k,v,exc,match", [
    (t(1, 2, 64, 64, dtype=torch.float32),) * 3 + (TypeError, "float16 or torch.bfloat16"),
    (t(1, 2, 64, 64), t(1, 2, 64, 64, dtype=torch.bfloat16), t(1, 2, 64, 64), TypeError, "same dtype"),
    (t(2, 64, 64), t(2, 64, 64), t(2, 64, 64), ValueError, "4-D"),
    (t(1, 2, 64, 64), t(1, 2, 32, 64), t(1, 2, 64, 64), ValueError, "same shape"),
    (t(1, 2, 64, 96),) * 3 + (ValueError, "head dim must be one of"),
    (t(1, 2, 0, 64),) * 3 + (ValueError, "positive"),
    (t(1, 2, 64, 64).transpose(2, 3), t(1, 2, 64, 64), t(1, 2, 64, 64), ValueError,
     "last dimension contiguous"),  # (test_layouts.py: what is read in place, what refused)
    (t(1, 2, 64, 64),) * 3 + (ValueError, "CUDA device"),  # valid form, but on the CPU
])
def test_bad_inputs_raise(q, k, v, exc, match):
    with pytest.raises(exc, match=match):
        attention(q, k, v)


def test_misaligned_pointer():
    base = torch.empty(2 * 64 * 64 + 4, dtype=torch.float16)
    q = base[4:].view(1, 2, 64, 64)  # 8 bytes past an aligned start
    with pytest.raises(ValueError, match="16-byte aligned"):
        check_inputs(q, t(1, 2, 64, 64), t(1, 2, 64, 64), "fa3", require_gpu=False)


def test_not_tensors_and_bad_variant():
    with pytest.raises(TypeError, match="torch.Tensor"):
        attention([[1.0]], [[1.0]], [[1.0]])
    with pytest.raises(ValueError, match="variant must be one of"):
        attention(t(1, 2, 64, 64), t(1, 2, 64, 64), t(1, 2, 64, 64), variant="fast")
    check_inputs(t(1, 2, 77, 64), t(1, 2, 77, 64), t(1, 2, 77, 64), "fa3", require_gpu=False)
    assert set(VARIANTS) == set(KERNELS)


@pytest.mark.parametrize("fence", [False, "hoisted"])
def test_fence_switch_builds_the_hoisted_wait(fence):
    """The fence is a constexpr (``FENCE``): ab_fence's other side (fence=False: ptxas hoists
    the wait for P·V) and ``instruments.trace --fence hoisted`` (the wait written before the
    softmax) both compile to the hoisted SASS, 0 exps under P·V."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    k = host.compile_sm90(KERNELS["fa3"], config("fa3", 128), fence=fence)
    assert cc.softmax_under_pv(cc.sass_of_cubin(k.asm["cubin"])) == [0, 0]


def test_fence_is_only_for_the_overlapped_variants():
    for variant in ("ws", "ws_pingpong", "pipelined", "sequential"):
        with pytest.raises(ValueError, match="only the overlapped variants"):
            host.fence_args(KERNELS[variant], False)
        assert host.fence_args(KERNELS[variant]) == {}
    assert host.fence_args(KERNELS["overlap"]) == {"FENCE": True}
    with pytest.raises(ValueError, match="fence must be one of"):
        host.fence_args(KERNELS["fa3"], "off")


def rowmax_depth(sass: str) -> list[int]:
    """For each wait for the scores alone (``DEPBAR.LE gsb0, 0x1``): the longest chain of
    dependent FMNMX / SHFL before the block's first exp (the row max's critical path)."""
    ins = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?);", sass)
    depths = []
    for i, text in enumerate(ins):
        if "DEPBAR.LE gsb0, 0x1" not in text:
            continue
        depth, deepest = {}, 0
        for t in ins[i:]:
            if "MUFU.EX2" in t:
                break
            regs = re.findall(r"\bR\d+\b", t)
            if not regs:
                continue
            if re.match(r"(?:@!?U?P\w+\s+)?(FMNMX|SHFL)", t):
                d = 1 + max([depth.get(r, 0) for r in regs[1:]] + [0])
                depth[regs[0]] = d
                deepest = max(deepest, d)
            else:
                depth.pop(regs[0], None)
        depths.append(deepest)
    return depths


@pytest.mark.parametrize("d", [64, 128, 256])
def test_softmax_switches_shorten_the_chains(d):
    """SOFTMAX (steps.py): the tree row max cuts the FMNMX chain before the first exp from
    BN/4 + a few deep (35 at d 128) to log2(BN/8) + a few; the per-thread row sums take the
    shuffles of every block's row sum out of the loop; the softmax stays under its own P·V."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    cfg = config("fa3", d)
    sass = {sm: cc.sass_of_cubin(host.compile_sm90(KERNELS["fa3"], cfg, softmax=sm).asm["cubin"])
            for sm in ((), ("tree_max",), ("tree_max", "lane_sum"))}
    plain = rowmax_depth(sass[()])
    tree = rowmax_depth(sass[("tree_max",)])
    assert min(plain) >= cfg.BN // 4, plain
    assert max(tree) <= 12, tree
    shfl = {sm: s.count("SHFL") for sm, s in sass.items()}
    assert shfl[("tree_max", "lane_sum")] < shfl[("tree_max",)], shfl
    exps = 64 * cfg.BN // 128 + 2
    for s in sass.values():
        assert cc.softmax_under_pv(s) == [exps] * cfg.consumers


def test_softmax_switch_names():
    assert host.softmax_bits(()) == 0
    assert host.softmax_bits(("tree_max", "lane_sum")) == 3
    assert host.softmax_bits("lane_sum") == 2
    assert host.softmax_bits(("rescale_early", "no_turns")) == 12
    assert host.softmax_bits(("lane_sum", "no_turns")) == 10
    assert host.softmax_bits(("one_release", "named_turns")) == 48
    assert host.softmax_bits("cond_rescale") == 64
    assert host.softmax_bits(("no_turns", "live_half")) == 264
    with pytest.raises(ValueError, match="softmax switches"):
        host.softmax_bits(("fast",))
    for name in host.WHOLE_ONLY:  # live_half's path carries none of them (steps.WHOLE_ONLY)
        with pytest.raises(ValueError, match=f"live_half does not go with \\['{name}'\\]"):
            host.softmax_bits(("live_half", name))
    assert steps.WHOLE_ONLY.value == host.softmax_bits(host.WHOLE_ONLY)
    with pytest.raises(ValueError, match="only the overlapped variants"):
        host.softmax_args(KERNELS["ws"], ("tree_max",))
    assert host.softmax_args(KERNELS["ws"], ()) == {}
    assert host.softmax_args(KERNELS["fa3"], ("tree_max",)) == {"SOFTMAX": 1}
    # the measured defaults (host.SOFTMAX_DEFAULT): lane_sum + tree_max at d 256, no_turns on
    # d 64's persistent launch
    assert host.softmax_args(KERNELS["fa3"], None, 256, "fa3") == {"SOFTMAX": 3}
    assert host.softmax_args(KERNELS["fa3"], None, 256, "fa3", True) == {"SOFTMAX": 3}
    assert host.softmax_args(KERNELS["fa3"], None, 128, "fa3") == {"SOFTMAX": 0}
    assert host.softmax_args(KERNELS["fa3"], None, 64, "fa3") == {"SOFTMAX": 0}
    assert host.softmax_args(KERNELS["fa3"], None, 64, "fa3", True) == {"SOFTMAX": 8}
    assert host.softmax_args(KERNELS["fa3"], None, 64, "fa3", "pairs") == {"SOFTMAX": 8}
    assert host.softmax_args(KERNELS["fa3"], (), 64, "fa3", True) == {"SOFTMAX": 0}
    assert host.softmax_args(KERNELS["overlap"], None, 256, "overlap") == {"SOFTMAX": 0}
    assert host.softmax_args(KERNELS["ws"], None, 256, "ws") == {}


def rescale_placement(sass: str) -> list[tuple[int, int]]:
    """Where each consumer loop rescales O, in SASS: for each wait for the scores alone
    (``DEPBAR.LE gsb0, 0x1``), (FMULs between the last HGMMA of Q·K_jᵀ and the
    ``WARPGROUP.ARRIVE`` that opens P_{j-1}·V_{j-1}, FMULs between the wait for that P·V
    (``DEPBAR.LE gsb0, 0x0``) and the loop's backward branch)."""
    ins = re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass)

    def fmuls(lo, hi):
        return sum("FMUL" in text for _, text in ins[lo:hi])

    def loops_back(k):
        m = re.search(r"\bBRA (0x[0-9a-f]+)", ins[k][1])
        return m is not None and int(m.group(1), 16) < int(ins[k][0], 16)

    out = []
    for i, (_, text) in enumerate(ins):
        if "DEPBAR.LE gsb0, 0x1" not in text:
            continue
        pv_issue = max(k for k in range(i) if "WARPGROUP.ARRIVE" in ins[k][1])
        qk_end = max(k for k in range(pv_issue) if "HGMMA" in ins[k][1])
        wait = next(k for k in range(i, len(ins)) if "DEPBAR.LE gsb0, 0x0" in ins[k][1])
        back = next(k for k in range(wait, len(ins)) if loops_back(k))
        out.append((fmuls(qk_end, pv_issue), fmuls(wait, back)))
    return out


@pytest.mark.parametrize("d", [128, 256])
def test_rescale_early_runs_under_qk(compiled, d):
    """``rescale_early`` (overlap.py): O's D/2 FMULs a thread (64 rows x D over 128 threads) lie
    between the issue of Q·K_jᵀ and the issue of P_{j-1}·V_{j-1}, none after the wait for that
    P·V; without it, all of them after that wait. The softmax stays under its own P·V."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    base = host.SOFTMAX_DEFAULT.get(("fa3", d), ())
    cfg, plain = compiled("fa3", d, softmax=base)
    _, early = compiled("fa3", d, softmax=base + ("rescale_early",))
    plain, early = (cc.sass_of_cubin(k.asm["cubin"]) for k in (plain, early))
    fmuls = 64 * d // 128
    assert rescale_placement(plain) == [(0, fmuls)] * cfg.consumers
    assert rescale_placement(early) == [(fmuls, 0)] * cfg.consumers
    exps = 64 * cfg.BN // 128 + 2
    assert cc.softmax_under_pv(early) == [exps] * cfg.consumers


@pytest.mark.parametrize("d", [128, 256])
def test_no_turns_drops_the_turn_barriers(compiled, d):
    """``no_turns`` (fa3.py): no turn mbarriers — per consumer, three fewer waits (block 0, the
    loop, the last P·V) and three fewer arrives, and one fewer init — in the TTGIR and the
    PTX; the GEMMs and the producer's and ring's barriers unchanged."""
    base = host.SOFTMAX_DEFAULT.get(("fa3", d), ())
    cfg, turns = compiled("fa3", d, softmax=base)
    _, free = compiled("fa3", d, softmax=base + ("no_turns",))
    c = cfg.consumers
    for ir, ops in (("ttgir", (r"ttng\.wait_barrier", r"ttng\.arrive_barrier",
                               r"ttng\.init_barrier")),
                    ("ptx", (r"mbarrier\.try_wait", r"mbarrier\.arrive\.shared::cta\.b64",
                             r"mbarrier\.init"))):
        got = [count(turns.asm[ir], op) - count(free.asm[ir], op) for op in ops]
        assert got == [3 * c, 3 * c, c], (ir, got)
    for op in (r"wgmma\.mma_async", r"mbarrier\.arrive\.expect_tx", r"wgmma\.wait_group"):
        assert count(turns.asm["ptx"], op) == count(free.asm["ptx"], op), op


def skipped_rescale(sass: str) -> list[tuple[int, int]]:
    """For each wait for the scores alone (``DEPBAR.LE gsb0, 0x1``): (shared-memory loads
    between it and the wait for P_{j-1}·V_{j-1} (``DEPBAR.LE gsb0, 0x0``), FMULs that the first
    forward branch after that wait jumps over)."""
    ins = re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass)
    addr = [int(a, 16) for a, _ in ins]
    out = []
    for i, (_, text) in enumerate(ins):
        if "DEPBAR.LE gsb0, 0x1" not in text:
            continue
        wait = next(k for k in range(i, len(ins)) if "DEPBAR.LE gsb0, 0x0" in ins[k][1])
        loads = sum(re.search(r"(?:^|\s)LDS\b", t) is not None for _, t in ins[i:wait])
        skipped = 0
        for k in range(wait, len(ins)):
            m = re.search(r"\bBRA (0x[0-9a-f]+)", ins[k][1])
            if m and int(m.group(1), 16) > addr[k]:
                end = addr.index(int(m.group(1), 16))
                skipped = sum("FMUL" in t for _, t in ins[k:end])
                break
        out.append((loads, skipped))
    return out


@pytest.mark.parametrize("d", [128, 256])
def test_cond_rescale_branches_over_the_rescale(compiled, d):
    """``cond_rescale`` (steps.py, tile.py): after the wait for P_{j-1}·V_{j-1} one branch jumps
    over O's D/2 FMULs a thread (64 rows x D over 128 threads) when no row of the warpgroup moved
    its max; the decision's reduction across the four warps (its shared-memory reads) lies before
    that wait, under P·V; the softmax stays under its own P·V."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    base = host.SOFTMAX_DEFAULT.get(("fa3", d), ())
    cfg, plain = compiled("fa3", d, softmax=base)
    _, cond = compiled("fa3", d, softmax=base + ("cond_rescale",))
    plain, cond = (cc.sass_of_cubin(k.asm["cubin"]) for k in (plain, cond))
    fmuls = 64 * d // 128
    got = skipped_rescale(cond)
    assert len(got) == cfg.consumers and all(n >= 1 and f == fmuls for n, f in got), got
    assert all(f != fmuls for _, f in skipped_rescale(plain)), skipped_rescale(plain)
    exps = 64 * cfg.BN // 128 + 2
    assert cc.softmax_under_pv(cond) == [exps] * cfg.consumers


def loop_barriers(sass: str) -> list[dict]:
    """The barriers of each consumer loop in SASS (from the target of the backward branch that
    closes the loop holding a wait for the scores alone, ``DEPBAR.LE gsb0, 0x1``, to that
    branch), in order: ``("sync", id, threads)`` and ``("arv", id, threads)`` for named
    barriers, ``"wait"`` and ``"arrive"`` for mbarriers, ``"qk"`` for the ``WARPGROUP.ARRIVE``
    that opens Q·K_jᵀ, ``"scores"`` for the DEPBAR 1, ``"pv"`` for P·V's last HGMMA."""
    ins = re.findall(r"/\*([0-9a-f]{4,})\*/\s+(.*?);", sass)
    addr = [int(a, 16) for a, _ in ins]
    loops = []
    for i, (_, text) in enumerate(ins):
        if "DEPBAR.LE gsb0, 0x1" not in text:
            continue
        for end in range(i, len(ins)):
            m = re.search(r"\bBRA (0x[0-9a-f]+)", ins[end][1])
            if m and int(m.group(1), 16) < addr[i]:
                break
        out = []
        for _, t in ins[addr.index(int(m.group(1), 16)):end + 1]:
            bar = re.search(r"BAR\.(SYNC|ARV)\S* (0x[0-9a-f]+), (0x[0-9a-f]+)", t)
            if bar:
                out.append(({"SYNC": "sync", "ARV": "arv"}[bar.group(1)], int(bar.group(2), 16),
                            int(bar.group(3), 16)))
            elif "TRYWAIT" in t:
                out.append("wait")
            elif "SYNCS.ARRIVE" in t:
                out.append("arrive")
            elif "WARPGROUP.ARRIVE" in t and "qk" not in out:
                out.append("qk")
            elif "DEPBAR.LE gsb0, 0x1" in t:
                out.append("scores")
            elif "HGMMA" in t and ".tnspB" in t:
                if out[-1] == "pv":
                    out.pop()
                out.append("pv")
        loops.append(out)
    return loops


# fa3's per-block barriers by build, per consumer loop: (warpgroup bar.syncs, turn syncs over
# 256 threads, bar.arrives, mbarrier arrives, mbarrier waits)
BARRIER_BUILDS = {(): (4, 0, 0, 3, 3), ("one_release",): (3, 0, 0, 2, 3),
                  ("named_turns",): (3, 1, 1, 2, 2), ("one_release", "named_turns"): (2, 1, 1, 1, 2)}


def barrier_counts(loop: list) -> tuple[int, ...]:
    bars = [b for b in loop if isinstance(b, tuple)]
    return (sum(b[0] == "sync" and b[2] == 128 for b in bars),
            sum(b[0] == "sync" and b[2] == 256 for b in bars),
            sum(b[0] == "arv" for b in bars), loop.count("arrive"), loop.count("wait"))


@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("switches", list(BARRIER_BUILDS), ids=lambda s: "+".join(s) or "fa3")
def test_barrier_switches_drop_a_bar_sync_per_block(compiled, switches, d):
    """``one_release`` (overlap.py): one mbarrier arrive and one warpgroup ``bar.sync`` fewer
    per block, the same waits; ``named_turns`` (ring.py): the turn's mbarrier wait becomes a
    ``bar.sync`` of named barrier 8 + WG over 256 threads right before Q·K_jᵀ's issue, its
    arrive a ``bar.arrive`` of the next warpgroup's barrier after P_{j-1}·V_{j-1}'s last HGMMA
    and before the scores' wait, and the warpgroup ``bar.sync`` Triton put before that arrive
    is gone; both: two warpgroup ``bar.sync`` a block instead of four."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    cfg, k = compiled("fa3", d, softmax=switches)
    loops = loop_barriers(cc.sass_of_cubin(k.asm["cubin"]))
    assert len(loops) == cfg.consumers
    assert [barrier_counts(loop) for loop in loops] == [BARRIER_BUILDS[switches]] * cfg.consumers
    if "named_turns" not in switches:
        return
    c = cfg.consumers
    turns = sorted(([b for b in loop if isinstance(b, tuple) and b[2] == 256] for loop in loops),
                   key=lambda bars: bars[0][1])
    for w, (sync, arv) in enumerate(turns):  # turn of WG w: barrier 8 + w; it hands to w + 1
        assert sync == ("sync", 8 + w, 256) and arv == ("arv", 8 + (w + 1) % c, 256)
    for loop in loops:
        order = [x if isinstance(x, str) else "turn" if x[:1] + x[2:] == ("sync", 256) else x[0]
                 for x in loop]
        assert order.index("turn") == order.index("qk") - 1  # the turn, then Q·K_jᵀ's issue
        assert order.index("pv") < order.index("arv") < order.index("scores")


@pytest.mark.parametrize("d, persistent", [(64, False), (128, False), (256, False), (64, True)])
def test_causal_mask_is_one_select_a_score(d, persistent):
    """``steps.mask``: a causal block masks each score with one compare and one select
    (col <= row: every row stored is below the sequence's end, so col < S follows), as many
    ``FSEL … -INF`` as the non-causal build's mask of a ragged end has, not two a score."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    selects = []
    for causal in (False, True):
        tile = (128, 128) if d == 64 and persistent else None
        on = ("pairs" if causal else True) if persistent else False
        cfg = config("fa3", d, causal, tile=tile, persistent=on)
        k = host.compile_sm90(KERNELS["fa3"], cfg, torch.float16, causal)
        selects.append(len(re.findall(r"FSEL \S+, \S+, -INF", cc.sass_of_cubin(k.asm["cubin"]))))
    assert selects[1] == selects[0] > 0, selects


@pytest.mark.parametrize("d, persistent", [(64, True), (128, False)])
def test_live_half_has_half_the_exps(d, persistent):
    """``live_half`` (``steps.live_half``): where a causal block's right half lies right of every
    row's diagonal (warpgroup 0 on the diagonal block, BM = BN = 128), the softmax takes the left
    half alone: each softmax site has, beside the default build's BN/2 + 2 ``MUFU.EX2`` a thread
    (the scores' and the rescale factor's of its two rows), a path with BN/4 + 2, and BN/4
    selects of the mask."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    base = ("no_turns",) if persistent else ()
    cfg = config("fa3", d, True, tile=(128, 128), persistent="pairs" if persistent else False)
    exps, selects = [], []
    for sw in (base, base + ("live_half",)):
        k = host.compile_sm90(KERNELS["fa3"], cfg, torch.float16, True, softmax=sw)
        sass = cc.sass_of_cubin(k.asm["cubin"])
        exps.append(sass.count("MUFU.EX2"))
        selects.append(len(re.findall(r"FSEL \S+, \S+, -INF", sass)))
    sites = 2 * cfg.consumers
    assert exps[0] == sites * (cfg.BN // 2 + 2), exps
    assert exps[1] - exps[0] == sites * (cfg.BN // 4 + 2), exps
    assert selects[1] - selects[0] == sites * cfg.BN // 4, selects


ONE_RELEASE_LOOPS = {"fa3 d64": (64, False, ("one_release",)),
                     "fa3 d128": (128, False, ("one_release",)),
                     "persistent d64": (64, True, ("no_turns", "one_release"))}


@pytest.mark.parametrize("build", list(ONE_RELEASE_LOOPS))
def test_one_release_meets_after_its_arrive(compiled, build):
    """Triton's barrier pass puts a warpgroup ``bar.sync`` before a block's first mbarrier wait
    when an arrive came before it, the arrive's own ``bar.sync`` being made later, where the
    pass does not see it: the build without ``one_release`` opens each block with that
    ``bar.sync``. ``one_release`` meets right after its block's one arrive
    (``ring.meet_after_arrive``): its loop ends with arrive, ``bar.sync`` and opens with the
    waits, with the same ``bar.sync`` count a block as before (``BARRIER_BUILDS``)."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    d, persistent, switches = ONE_RELEASE_LOOPS[build]
    base = tuple(s for s in switches if s != "one_release")
    for sw, opens_with_sync in ((base, True), (switches, False)):
        if persistent:
            cfg = config("fa3", d, True, tile=(128, 128), persistent="pairs")
            k = host.compile_sm90(KERNELS["fa3"], cfg, torch.float16, True, softmax=sw)
        else:
            cfg, k = compiled("fa3", d, softmax=sw)
        loops = loop_barriers(cc.sass_of_cubin(k.asm["cubin"]))
        assert len(loops) == cfg.consumers
        for loop in loops:
            assert isinstance(loop[0], tuple) == opens_with_sync, (sw, loop)
            if not opens_with_sync:
                assert loop[-2:] == ["arrive", ("sync", loop[-1][1], 128)], loop


def bar_ids(ptx: str) -> set[int]:
    return {int(x) for x in re.findall(r"\b(?:bar|barrier)\.(?:sync|arrive)\s+(\d+)", ptx)}


@pytest.mark.parametrize("d", [64, 128])
def test_named_turns_replace_the_turn_mbarriers(compiled, d):
    """``named_turns``: no turn mbarrier (per consumer three waits, three arrives and an init
    fewer in the TTGIR and the PTX); named barriers 8 .. 8 + consumers - 1, above every id Triton
    uses in the default build (0: the default partition, 1: the CTA around the partitions,
    2, 3: the worker partitions) and below Hopper's 16; WG w ``bar.sync``s its barrier once a
    turn but for warpgroup 0's first (n + 1 turns a CTA), ``bar.arrive``s the next one's once
    a turn but for the last warpgroup's last; the GEMMs and the ring's barriers unchanged."""
    cfg, plain = compiled("fa3", d)
    _, named = compiled("fa3", d, softmax=("named_turns",))
    c = cfg.consumers
    for ir, ops in (("ttgir", (r"ttng\.wait_barrier", r"ttng\.arrive_barrier",
                               r"ttng\.init_barrier")),
                    ("ptx", (r"mbarrier\.try_wait", r"mbarrier\.arrive\.shared::cta\.b64",
                             r"mbarrier\.init"))):
        got = [count(plain.asm[ir], op) - count(named.asm[ir], op) for op in ops]
        assert got == [3 * c, 3 * c, c], (ir, got)
    triton_ids = bar_ids(plain.asm["ptx"])
    assert max(triton_ids) < 8 and bar_ids(named.asm["ptx"]) - triton_ids == set(range(8, 8 + c))
    ptx = named.asm["ptx"]
    # the PTX has each consumer's block 0, loop body and last P·V once
    for w in range(c):
        assert count(ptx, rf"bar\.sync {8 + w}, 256;") == (2 if w == 0 else 3)
        assert count(ptx, rf"bar\.arrive {8 + (w + 1) % c}, 256;") == (2 if w == c - 1 else 3)
    for op in (r"wgmma\.mma_async", r"mbarrier\.arrive\.expect_tx", r"wgmma\.wait_group"):
        assert count(plain.asm["ptx"], op) == count(ptx, op), op


def producer_waits(sass: str) -> list[str]:
    """The mbarrier each of the producer's TMA issues waited on: the ``TRYWAIT`` just before
    each expect-tx arrive (``SYNCS.ARRIVE.TRANS64 RZ, [..], R``; Q's has none)."""
    ins = re.findall(r"/\*[0-9a-f]{4,}\*/\s+(.*?);", sass)
    out = []
    for i, t in enumerate(ins):
        if re.search(r"SYNCS\.ARRIVE\.TRANS64 RZ, \[[^]]*\], R\d", t):
            waits = [re.search(r"\+(0x[0-9a-f]+)\]", x) for x in ins[max(0, i - 16):i]
                     if "TRYWAIT" in x]
            if waits:
                out.append(waits[-1].group(1))
    return out


def test_one_release_producer_waits_on_k_empty_for_both_rings(compiled):
    """``one_release``: the producer waits for K_j's slot and V_j's on the same barrier ring
    (``k_empty``; ``v_empty`` is not even initialised: STAGES mbarrier inits fewer, and the
    barriers' offsets move); without it, on two."""
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    cfg, plain = compiled("fa3", 128)
    _, joint = compiled("fa3", 128, softmax=("one_release",))
    plain_waits, joint_waits = (producer_waits(cc.sass_of_cubin(k.asm["cubin"]))
                                for k in (plain, joint))
    assert len(plain_waits) == len(joint_waits) == 2
    assert len(set(plain_waits)) == 2 and len(set(joint_waits)) == 1
    inits = r"mbarrier\.init"
    assert count(plain.asm["ptx"], inits) - count(joint.asm["ptx"], inits) == cfg.stages


@pytest.mark.parametrize("variant,softmax,persistent", [
    ("overlap", ("no_turns",), False), ("fa3", ("rescale_early",), True), ("overlap", ("one_release",), False),
    ("overlap", ("named_turns",), False),
    ("fa3", ("named_turns",), True), ("fa3", ("no_turns", "named_turns"), False),
    ("fa3", ("rescale_early", "cond_rescale"), False)])
def test_schedule_switches_refused_where_they_do_not_apply(variant, softmax, persistent):
    """overlap has no turns to drop or name and no producer to release to; the persistent fa3
    has neither rescale_early nor named_turns (the host refuses by name before compiling);
    no_turns and named_turns contradict each other, and the early rescale comes before
    cond_rescale's decision."""
    from triton.compiler.errors import CompilationError

    cfg = config(variant, 128, persistent=persistent)
    error = ValueError if persistent else CompilationError
    with pytest.raises(error, match="no_turns|rescale_early|one_release|named_turns"):
        host.compile_sm90(KERNELS[variant], cfg, softmax=softmax)


# ------------------------------------------------------------------------- persistent fa3
def test_persistent_no_turns_drops_the_turn_barriers():
    """``no_turns`` on the persistent fa3 (d 64's default launch: 128 x 128, pairs, where it is
    the default build): per consumer three fewer turn waits and arrives (block 0, the loop, the
    last P·V), the GEMMs, the rings' and the epilogue's barriers unchanged."""
    cfg = config("fa3", 64, True, None, (128, 128), "pairs")
    turns = host.compile_sm90(KERNELS["fa3"], cfg, causal=True, softmax=())
    free = host.compile_sm90(KERNELS["fa3"], cfg, causal=True, softmax=("no_turns",))
    default = host.compile_sm90(KERNELS["fa3"], cfg, causal=True)  # SOFTMAX_DEFAULT: no_turns
    assert default.asm["ptx"] == free.asm["ptx"]
    c = cfg.consumers
    for op, fewer in ((r"mbarrier\.try_wait", 3 * c), (r"mbarrier\.arrive\.shared::cta\.b64", 3 * c),
                      (r"wgmma\.mma_async", 0), (r"mbarrier\.arrive\.expect_tx", 0),
                      (r"wgmma\.wait_group", 0)):
        assert count(turns.asm["ptx"], op) - count(free.asm["ptx"], op) == fewer, op


@pytest.mark.parametrize("d, causal", [(64, True), (64, False), (128, True), (256, False)])
def test_persistent_one_release_gives_two_slots_back_with_one_arrive(d, causal):
    """``one_release`` on the persistent fa3: per consumer two fewer arrive sites and their
    bar.syncs (K_j's own release in the loop; the last P·V's, carried to the next tile's first
    K), V's ``empty`` barriers not made (its slots come back through K's), the same waits and
    wgmmas."""
    tile = (128, 128) if d == 64 else None
    cfg = config("fa3", d, causal, tile=tile, persistent="pairs" if causal else True)
    plain, one = (host.compile_sm90(KERNELS["fa3"], cfg, torch.float16, causal, softmax=sm)
                  for sm in (("no_turns",), ("no_turns", "one_release")))
    c = cfg.consumers
    for op, fewer in ((r"mbarrier\.arrive\.shared::cta\.b64", 2 * c),
                      (r"mbarrier\.init", cfg.stages), (r"mbarrier\.try_wait", 0),
                      (r"wgmma\.mma_async", 0), (r"mbarrier\.arrive\.expect_tx", 0)):
        assert count(plain.asm["ptx"], op) - count(one.asm["ptx"], op) == fewer, op
    # each arrive's warpgroup bar.sync goes with it (at d 256 one more a consumer goes too)
    assert count(plain.asm["ptx"], r"bar\.sync") - count(one.asm["ptx"], r"bar\.sync") >= 2 * c


@pytest.mark.parametrize("d,causal,dtype", [
    (64, False, torch.float16), (64, True, torch.float16), (128, False, torch.float16),
    (128, True, torch.bfloat16), (256, False, torch.bfloat16), (256, True, torch.float16)])
def test_persistent_fa3_compiles_for_sm90a(d, causal, dtype):
    """``fa3_kernel(..., PERSISTENT=True)`` (persistent.py) builds for sm_90a with q_empty and one
    epilogue turn per consumer beside fa3's barriers, its O buffers (one per consumer; one shared
    at d 256) inside the 227 KiB, the wgmmas of the plain build and O still 16 bytes a thread."""
    cfg = config("fa3", d, causal, persistent=True)
    k = host.compile_sm90(KERNELS["fa3"], cfg, dtype, causal)
    ptx = k.asm["ptx"]
    assert ".target sm_90a" in ptx
    s, c = cfg.stages, cfg.consumers
    assert count(ptx, r"mbarrier\.init\.shared") == 1 + 4 * s + c + 1 + c
    assert cfg.o_buffers == (1 if d == 256 else c)
    assert cfg.smem_bytes() - 1024 <= k.metadata.shared <= host.SMEM_PER_BLOCK
    kind = "f16.f16" if dtype == torch.float16 else "bf16.bf16"
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{cfg.BN}k16\.f32\.{kind}", ptx)
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{d}k16\.f32\.{kind}", ptx)
    assert count(ptx, r"wgmma\.wait_group\.sync\.aligned 1;") >= 1
    assert count(ptx, rf"setmaxnreg\.inc\.sync\.aligned\.u32\s+{cfg.consumer_regs};") >= 1
    assert k.metadata.num_warps == 4 * (c + 1)
    if cc.find_cuobjdump() is not None:
        sass = cc.sass_of_cubin(k.asm["cubin"])
        assert sass.count("STG.E.128") == cfg.BM * d * 2 // 16 // (128 * c) * c


def test_persistent_switch_is_fa3s_alone():
    assert host.persistent_args(KERNELS["fa3"]) == {}  # off: the plain build's specialization
    assert host.persistent_args(KERNELS["fa3"], True) == {"PERSISTENT": True}
    for v in VARIANTS:
        if v != "fa3":
            with pytest.raises(ValueError, match="persistent"):
                config(v, 128, persistent=True)
            with pytest.raises(ValueError, match="persistent build"):
                host.persistent_args(KERNELS[v], True)
    with pytest.raises(TypeError, match="persistent must be a bool or 'pairs'"):
        host.persistent_args(KERNELS["fa3"], 1)
    assert host.persistent_args(KERNELS["fa3"], "pairs") == {"PERSISTENT": True, "PAIRS": True}
    with pytest.raises(ValueError, match="persistent build"):
        host.persistent_args(KERNELS["ws"], "pairs")
    pairs = config("fa3", 128, True, persistent="pairs")
    assert pairs.persistent and pairs.pairs and host.persistent_arg(pairs) == "pairs"
    assert host.persistent_arg(config("fa3", 128, persistent=True)) is True
    cfg = config("fa3", 128, persistent=True)
    assert host.grid(4, 16, 8448, cfg, 132) == (132,)
    assert host.grid(1, 1, 1000, cfg, 132) == (8,)
    assert host.grid(4, 16, 8448, config("fa3", 128)) == (66, 64)



def test_persistent_default_rule():
    """fa3 runs causal in pairs unasked up to the head dim's PAIRS_SEQ, not causal persistent only
    at short sequences; the other variants never persistent."""
    pd = host.persistent_default
    for d in (64, 128, 256):
        assert pd("fa3", d, 1024, True) == "pairs" and pd("fa3", d, 4096, True) == "pairs"
        assert pd("fa3", d, host.PAIRS_SEQ[d], True) == "pairs"
        assert pd("fa3", d, host.PAIRS_SEQ[d] + 1, True) is False
        assert pd("fa3", d, host.SHORT_SEQ, False) is True
        assert pd("fa3", d, host.SHORT_SEQ + 1, False) is False
        for causal in (False, True):
            for v in VARIANTS:
                if v != "fa3":
                    assert pd(v, d, 128, causal) is False
    assert pd("fa3", 128, 8448, True) == "pairs" and pd("fa3", 128, 16384, True) is False


def test_default_launch_rule():
    """Named nothing, fa3 at d 64 launches 128x128 wherever it runs persistent (not causal at
    S <= SHORT_SEQ, causal in pairs up to PAIRS_SEQ); so it does with softmax switches the
    persistent build takes; a named tile, stages, fence, persistence or another switch keeps the
    caller's launch; the other head dims keep their TILES entry."""
    ld = host.launch_defaults
    assert ld("fa3", 64, host.SHORT_SEQ, False) == ((128, 128), True)
    assert ld("fa3", 64, host.SHORT_SEQ + 1, False) == (None, False)
    assert ld("fa3", 64, host.PAIRS_SEQ[64], True) == ((128, 128), "pairs")
    assert ld("fa3", 64, host.PAIRS_SEQ[64] + 1, True) == (None, False)
    for causal in (False, True):
        assert ld("fa3", 64, 77, causal, persistent=False) == (None, False)
        assert ld("fa3", 64, 77, causal, tile=(192, 128)) == ((192, 128), False)
        assert ld("fa3", 64, 77, causal, stages=3) == (None, False)
        assert ld("fa3", 64, 77, causal, fence=False) == (None, False)
        assert ld("fa3", 64, 77, causal, softmax=("rescale_early",)) == (None, False)
        assert ld("fa3", 64, 77, causal, softmax=("tree_max", "named_turns")) == (None, False)
        assert ld("fa3", 64, 77, causal, softmax="named_turns") == (None, False)
        assert ld("fa3", 64, 1024, causal, softmax=("tree_max", "lane_sum")) == (
            (128, 128), "pairs" if causal else True)
        assert ld("fa3", 64, 1024, causal, softmax=()) == ld("fa3", 64, 1024, causal)
        assert ld("fa3", 64, 77, causal, persistent=5) == (None, 5)
        assert ld("ws", 64, 1024, causal) == (None, False)
    for d in (128, 256):
        assert ld("fa3", d, 1024, False) == (None, True)
        assert ld("fa3", d, 8448, True) == (None, "pairs")
        assert ld("fa3", d, 16384, True) == (None, False)
    bm, bn = host.SHORT_TILE[64]
    assert config("fa3", 64, True, tile=(bm, bn), persistent="pairs").consumers == 2


@pytest.mark.parametrize("d, causal, persistent", [(64, True, "pairs"), (64, False, True),
                                                    (128, False, False), (256, True, False)])
def test_poly_exp_takes_a_quarter_of_the_exps_off_the_sfu(d, causal, persistent):
    """``poly_exp`` (``steps.exp2_split``): of each softmax's BN/2 score exps a thread (2 rows of
    BN/4 columns), BN/8 leave ``ex2.approx`` for the FMA pipe's cubic; the two rescale factors a
    thread stay on the SFU, and shared memory does not move (the split is in registers)."""
    tile = (128, 128) if d == 64 else None
    cfg = config("fa3", d, causal, tile=tile, persistent=persistent)
    plain, poly = (host.compile_sm90(KERNELS["fa3"], cfg, torch.float16, causal, softmax=sm)
                   for sm in ((), ("poly_exp",)))
    exps = count(plain.asm["ptx"], r"ex2\.approx")
    sites, rest = divmod(exps, cfg.BN // 2 + 2)
    assert rest == 0 and sites >= 1
    assert count(poly.asm["ptx"], r"ex2\.approx") == exps - sites * cfg.BN // 8
    assert poly.metadata.shared == plain.metadata.shared


def test_persistent_refuses_softmax_switches_it_lacks():
    """The persistent loop has no early rescale and no named turns: asked for them,
    ``compile_sm90`` (and ``attention``: test_attention_gpu.py) refuses by name rather than
    build without them."""
    for names in (("rescale_early",), ("tree_max", "named_turns"), "named_turns"):
        for pers in (True, "pairs"):
            with pytest.raises(ValueError, match="persistent fa3 takes only"):
                host.check_persistent_softmax(pers, names)
        host.check_persistent_softmax(False, names)
    for names in (None, (), host.PERSISTENT_SOFTMAX, "no_turns"):
        host.check_persistent_softmax(True, names)
    cfg = config("fa3", 64, True, tile=(128, 128), persistent="pairs")
    with pytest.raises(ValueError, match="rescale_early"):
        host.compile_sm90(KERNELS["fa3"], cfg, torch.float16, True, softmax=("rescale_early",))


@pytest.mark.parametrize("d", [64, 128, 256])
def test_pairs_order_compiles_for_sm90a(d):
    """``persistent="pairs"`` (``PAIRS``: the causal tiles in pairs, persistent.cta_tile) builds
    for sm_90a with the persistent build's barriers and shared memory; it is a causal order, so
    the non-causal build is the persistent one."""
    cfg = config("fa3", d, True, persistent="pairs")
    k = host.compile_sm90(KERNELS["fa3"], cfg, torch.float16, True)
    plain = host.compile_sm90(KERNELS["fa3"], config("fa3", d, True, persistent=True),
                              torch.float16, True)
    assert k.metadata.shared == plain.metadata.shared
    assert count(k.asm["ptx"], r"mbarrier\.init\.shared") == count(plain.asm["ptx"],
                                                                      r"mbarrier\.init\.shared")
    assert k.asm["ptx"] != plain.asm["ptx"]


def pairs_coords(i, p, P, n_m, heads):
    """persistent.cta_tile and tile_coords with PAIRS, line for line: (bh, m) or None."""
    half = -(-n_m // 2)
    q = (i // 2) * P + p
    k = q - (q // half) * half
    if not (q < heads * half and (i % 2 == 0 or k < n_m - 1 - k)):
        return None
    bh = q // half
    return bh, (n_m - 1 - k if i % 2 == 0 else k)


def test_pairs_order():
    """The pairs order on the host: every (head, Q tile) exactly once; a CTA's tiles come as
    pairs of one head, the long one first; with an even count of Q tiles a head (S 1K, 4K, 16K
    at BM 128), every CTA within one pair of the same blocks (BM = BN: a pair is n_m + 1
    blocks; with an odd count a head's middle tile goes alone, half a pair); and the tiles of one
    round span at most P / (n_m / 2) + 1 heads (the zigzag's: P) — K and V of few heads in
    flight, so they stay in L2."""
    P = 132
    for S, BM, BN, heads in ((1000, 128, 128, 256), (1024, 128, 128, 256), (300, 128, 128, 320),
                             (1, 128, 128, 3), (1024, 128, 64, 128), (4096, 128, 128, 64),
                             (1000, 128, 128, 6)):
        n_m = -(-S // BM)
        half = -(-n_m // 2)
        seen, blocks, per_round = [], [0] * P, {}
        for i in range(2 * -(-heads * half // P)):
            for p in range(P):
                c = pairs_coords(i, p, P, n_m, heads)
                if c is None:
                    continue
                seen.append(c)
                per_round.setdefault(i, set()).add(c[0])
                blocks[p] += -(-min(S, (c[1] + 1) * BM) // BN)
                if i % 2:  # the short tile of the pair the same CTA took last round
                    prev = pairs_coords(i - 1, p, P, n_m, heads)
                    assert prev[0] == c[0] and prev[1] == n_m - 1 - c[1] and prev[1] > c[1]
        assert sorted(seen) == [(b, m) for b in range(heads) for m in range(n_m)], (S, heads)
        pair = -(-min(S, n_m * BM) // BN) + -(-min(S, BM) // BN)  # the longest pair's blocks
        busy = [b for b in blocks if b]
        if n_m % 2 == 0:
            assert max(busy) - min(busy) <= pair, (S, heads, max(busy), min(busy))
        assert max(len(h) for h in per_round.values()) <= P // half + 2, (S, heads)


def test_persistent_tile_order():
    """persistent.tile_coords and cta_tile on the host: every (head, Q tile) exactly once;
    causal, the longest (last) Q tiles first, and the 132 CTAs' K/V blocks within 3 % of each
    other (plain round-robin over FA3's L2 sections of heads gave CTA 0 1.16-1.42x the mean
    blocks, and lost at causal S 4K-16K)."""

    def coords(t, n_m, heads, causal):  # the device functions, line for line
        if causal:
            r = t // heads
            return t - r * heads, n_m - 1 - r
        return t // n_m, t % n_m

    P = 132
    for S, D, heads in ((1000, 128, 64), (16384, 256, 8), (1, 64, 3), (8448, 128, 64),
                        (4096, 256, 32), (16384, 128, 16)):
        BM, BN = (192, 128) if D == 64 else (128, 128 if D == 128 else 64)
        n_m = -(-S // BM)
        tiles = n_m * heads
        for causal in (False, True):
            seen, blocks = [], [0] * P
            for i in range(-(-tiles // P)):
                for p in range(P):
                    t = i * P + (P - 1 - p if causal and i % 2 else p)
                    if t < tiles:
                        bh, m = coords(t, n_m, heads, causal)
                        seen.append((bh, m))
                        end = min(S, (m + 1) * BM) if causal else S
                        blocks[p] += -(-end // BN)
            assert sorted(seen) == [(b, m) for b in range(heads) for m in range(n_m)]
            if causal:
                assert seen[0][1] == n_m - 1
                if tiles >= 4 * P:
                    assert max(blocks) / (sum(blocks) / P) < 1.03, (S, D, heads, max(blocks))


# --------------------------------------------------------------- a K/V block in two pieces
@pytest.mark.parametrize("causal,strided", [(False, False), (True, False), (False, True)],
                         ids=["full", "causal", "strided"])
def test_fa3_block_in_pieces(causal, strided):
    """fa3 at FA3's d 256 tile, 128 x 80 (``tile=(128, 80)``; Gluon's tensors are powers of two,
    so each K/V block is a 64-row and a 16-row box, ``boxes.py``): both boxes land on one
    ``full`` mbarrier (80 x 256 x 2 bytes expected); S = Q·K_jᵀ is an n = 64 and an n = 16
    wgmma (16 k-steps each), P·V a k = 64 and a k = 16 one onto the same O (m64n256, 4 + 1
    k-steps); the wait for the scores leaves both P·V groups in flight, and every exp of the
    softmax (64 x 80 over 128 threads, + alpha of 2 rows) runs before P·V's wait. Two rings of
    80 x 256 x 2 stages and Q in 227 KiB; no spills, every register under the consumers' 240."""
    cfg = config("fa3", 256, causal, tile=(128, 80))
    assert cfg.pieces == (64, 16)
    k = host.compile_sm90(KERNELS["fa3"], cfg, torch.float16, causal, strided=strided)
    # every TMA descriptor a top-level argument, which the launcher builds (Q, K's and V's two
    # pieces; strided: O's too): Triton 3.6's launcher builds none inside a tuple
    assert len(k.metadata.tensordesc_meta) == 5 + strided
    ptx = k.asm["ptx"]
    assert count(ptx, r"mbarrier\.arrive\.expect_tx\.shared\.b64 _, \[%r\d+\], 40960;") == 2
    shapes = {s: count(ptx, rf"wgmma\.mma_async\.sync\.aligned\.{s}\.") for s in
              ("m64n64k16", "m64n16k16", "m64n256k16")}
    # a consumer's Q·Kᵀ at block 0 and in the loop; its P·V in the loop and after it
    c = cfg.consumers
    assert shapes == {"m64n64k16": 2 * 16 * c, "m64n16k16": 2 * 16 * c, "m64n256k16": 2 * 5 * c}
    assert count(ptx, r"wgmma\.wait_group\.sync\.aligned 2;") == c
    assert count(ptx, r"wgmma\.wait_group\.sync\.aligned 1;") == 0
    assert cfg.smem_bytes() <= k.metadata.shared <= host.SMEM_PER_BLOCK
    if cc.find_cuobjdump() is None:
        pytest.skip("no cuobjdump (triton's wheel carries one)")
    sass = cc.sass_of_cubin(k.asm["cubin"])
    assert not re.search(r"\b(?:STL|LDL)\b", sass), "local memory: the consumers spill"
    assert max(int(r) for r in re.findall(r"\bR(\d+)\b", sass)) < cfg.consumer_regs
    # softmax_under_pv reads the one-group wait (0x1); here P·V is two groups
    assert cc.softmax_under_pv(sass.replace("gsb0, 0x2", "gsb0, 0x1")) == [64 * 80 // 128 + 2] * c


def test_block_in_pieces_configs():
    """80 = 64 + 16 is fa3's alone, not persistent (its tiles stage O beside Q and the rings);
    the smaller piece a power of two of at least one wgmma k-step."""
    assert config("fa3", 256, tile=(128, 80)).smem_bytes() <= host.SMEM_PER_BLOCK
    assert config("fa3", 128, tile=(128, 64)).pieces == (64,)
    for variant, tile, persistent in (("overlap", (128, 80), False), ("ws", (128, 80), False),
                                      ("fa3", (128, 80), True), ("fa3", (128, 176), False),
                                      ("fa3", (128, 72), False)):
        with pytest.raises(ValueError, match="BN must be a power of two, or"):
            config(variant, 256, tile=tile, persistent=persistent)
