"""The Gluon attention ladder on a Hopper GPU: every variant x dtype x head dim x causal against a
float64 reference (O and the logsumexp) on fresh random inputs with ragged lengths, NaN-free on
large-magnitude inputs, and a ConSan run of the warp-specialized variants. Skipped without a
Hopper GPU (tests/conftest.py). Run them with ``-n 8`` (pytest-xdist) to compile in parallel."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
VARIANTS = ("sequential", "pipelined", "ws", "ws_pingpong", "overlap", "fa3")
TOL = {torch.float16: 4e-3, torch.bfloat16: 2.5e-2}  # ||O - ref|| / ||ref||
LSE_TOL = 2e-3  # max |LSE - ref| (LSE is fp32 from fp32 accumulators)


def reference(q, k, v, causal, scale=None):
    """float64 attention and natural-log LSE, (batch, heads, seq, d) / (batch, heads, seq)."""
    qd, kd, vd = q.double(), k.double(), v.double()
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = (qd @ kd.transpose(-1, -2)) * scale
    if causal:
        S = q.shape[2]
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    return torch.softmax(s, dim=-1) @ vd, lse


def check(variant, q, k, v, causal, tol, **kw):
    from kernels.attention import attention

    out = torch.full_like(q, float("nan"))  # poisoned: an unwritten element fails
    o, lse = attention(q, k, v, causal=causal, variant=variant, return_lse=True, out=out, **kw)
    torch.cuda.synchronize()
    ref, ref_lse = reference(q, k, v, causal)
    assert not torch.isnan(o).any(), f"{variant}: NaN in O"
    err = ((o.double() - ref).norm() / ref.norm()).item()
    lse_err = (lse.double() - ref_lse).abs().max().item()
    assert err < tol, f"{variant} {tuple(q.shape)} causal={causal}: rel err {err:.2e}"
    assert lse_err < LSE_TOL, f"{variant} {tuple(q.shape)} causal={causal}: LSE err {lse_err:.2e}"
    return err


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_matches_float64(variant, dtype, d, causal):
    gen = torch.Generator(device="cuda").manual_seed(hash((variant, d, causal)) % 2**31)
    # ragged lengths (none a multiple of a tile or of 16, so one compile serves all three)
    for B, H, S in ((1, 2, 77), (2, 3, 300), (1, 2, 1000)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
        check(variant, q, k, v, causal, TOL[dtype])


@pytest.mark.parametrize("variant", VARIANTS)
def test_lengths_on_tile_edges(variant):
    """One row, exact multiples of the tiles, one past them."""
    for S in (1, 128, 384, 385):
        for causal in (False, True):
            q, k, v = (torch.randn(2, 2, S, 128, device="cuda", dtype=torch.float16) for _ in range(3))
            check(variant, q, k, v, causal, TOL[torch.float16])


@pytest.mark.parametrize("variant", VARIANTS)
def test_large_magnitude_no_nan(variant):
    """Scores of several thousand (|q|, |k| ~ 20): the running max keeps exp2 in range."""
    for causal in (False, True):
        q, k, v = (torch.randn(1, 2, 520, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        q, k = q * 20, k * 20
        check(variant, q, k, v, causal, 2e-2)


@pytest.mark.parametrize("fence", [False, "hoisted"])
@pytest.mark.parametrize("variant", ["overlap", "fa3"])
def test_fence_switch_builds_match_float64(variant, fence):
    """The overlapped kernels built without the schedule fence (ab_fence, instruments.trace
    --fence hoisted)."""
    for causal in (False, True):
        q, k, v = (torch.randn(2, 3, 300, 128, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        check(variant, q, k, v, causal, TOL[torch.float16], fence=fence)


SOFTMAX_BUILDS = [("tree_max",), ("lane_sum",), ("tree_max", "lane_sum")]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("softmax", SOFTMAX_BUILDS, ids=["+".join(s) for s in SOFTMAX_BUILDS])
def test_softmax_switches_match_float64(softmax, dtype, d, causal):
    """fa3 with the softmax's shorter chains (``steps.py``: the tree row max, the row sums kept
    per thread) on ragged lengths; and the tree row max is exact, so with it alone O and the
    LSE are bit-identical to the default build's."""
    from kernels.attention import attention

    gen = torch.Generator(device="cuda").manual_seed(hash((softmax, d, causal)) % 2**31)
    for B, H, S in ((1, 2, 77), (2, 3, 300), (1, 2, 1000)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
        check("fa3", q, k, v, causal, TOL[dtype], softmax=softmax)
        if softmax == ("tree_max",):
            o0, l0 = attention(q, k, v, causal=causal, variant="fa3", return_lse=True, softmax=())
            o1, l1 = attention(q, k, v, causal=causal, variant="fa3", return_lse=True,
                               softmax=softmax)
            assert torch.equal(o0, o1) and torch.equal(l0, l1), "tree row max not bit-identical"


def test_softmax_switches_large_magnitude():
    for causal in (False, True):
        q, k, v = (torch.randn(1, 2, 520, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        check("fa3", q * 20, k * 20, v, causal, 2e-2, softmax=("tree_max", "lane_sum"))


SCHEDULE_BUILDS = [("rescale_early",), ("no_turns",), ("rescale_early", "no_turns"),
                   ("one_release",), ("named_turns",), ("one_release", "named_turns"),
                   ("rescale_early", "one_release", "named_turns"), ("no_turns", "one_release")]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
@pytest.mark.parametrize("switches", SCHEDULE_BUILDS, ids=["+".join(s) for s in SCHEDULE_BUILDS])
def test_schedule_switches_match_float64(switches, dtype, d, causal):
    """fa3 with O rescaled under Q·K_jᵀ (``rescale_early``), without turns (``no_turns``), with
    one release a block (``one_release``), with turns on named barriers (``named_turns``),
    beside the default softmax bits at d, on ragged lengths. All only move or drop steps or
    barriers (the same products, in the same order, per warpgroup), so O and the LSE are
    bit-identical to the build without them."""
    from kernels.attention import attention, host

    base = host.SOFTMAX_DEFAULT.get(("fa3", d), ())
    gen = torch.Generator(device="cuda").manual_seed(hash((switches, d, causal)) % 2**31)
    for B, H, S in ((1, 2, 77), (2, 3, 300), (1, 2, 1000)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
        check("fa3", q, k, v, causal, TOL[dtype], softmax=base + switches)
        o0, l0 = attention(q, k, v, causal=causal, variant="fa3", return_lse=True, softmax=base)
        o1, l1 = attention(q, k, v, causal=causal, variant="fa3", return_lse=True,
                           softmax=base + switches)
        assert torch.equal(o0, o1) and torch.equal(l0, l1), f"{switches}: not bit-identical"


@pytest.mark.parametrize("switches", [("rescale_early", "no_turns"),
                                      ("one_release", "named_turns")], ids="+".join)
def test_schedule_switches_large_magnitude_and_tile_edges(switches):
    """Large scores; at d 256 (BN 64) one block (S 1: no loop, only block 0's and the last P·V's
    releases and turns), two, a ragged seventh, and (S 4099) 65 blocks: 32 laps of the rings."""
    for causal in (False, True):
        q, k, v = (torch.randn(1, 2, 520, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        check("fa3", q * 20, k * 20, v, causal, 2e-2, softmax=switches)
        for S in (1, 128, 385, 4099):
            q, k, v = (torch.randn(2, 2, S, 256, device="cuda", dtype=torch.float16)
                       for _ in range(3))
            check("fa3", q, k, v, causal, TOL[torch.float16], softmax=("lane_sum",) + switches)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_cond_rescale_matches_float64(dtype, d, causal):
    """``cond_rescale`` (FA4's conditional rescaling) beside the default softmax bits at d, in
    the default launch (causal: in pairs): on ragged lengths; with scores of ±400 (maxima that
    jump by far more than 2^8 from block to block); and with keys that grow along the sequence,
    so that every row's max climbs block after block, some steps above the threshold and some
    below (P up to 2^8 then)."""
    from kernels.attention import host

    sm = host.SOFTMAX_DEFAULT.get(("fa3", d), ()) + ("cond_rescale",)
    gen = torch.Generator(device="cuda").manual_seed(hash((d, causal, str(dtype))) % 2**31)
    for B, H, S in ((1, 2, 77), (2, 3, 300), (1, 2, 1000)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        check("fa3", q, k, v, causal, TOL[dtype], softmax=sm)
        check("fa3", q * 20, k * 20, v, causal, 2e-2 if dtype == torch.float16 else TOL[dtype],
              softmax=sm)
        ramp = torch.linspace(1, 12, S, device="cuda", dtype=torch.float32)[:, None]
        check("fa3", q * 3, (k.float() * ramp).to(dtype), v, causal, TOL[dtype], softmax=sm)



@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_block_in_pieces_matches_float64(dtype, causal):
    """fa3 at FA3's d 256 tile, 128 x 80, each K/V block a 64-row and a 16-row piece
    (``boxes.py``), with d 256's default softmax (lane_sum) and without it: lengths that are not
    multiples of 80 (one ending inside a block's first piece, 50; others in its second), one row,
    multiples of 80 and one past; large scores (NaN-free); FA3's (batch, seq, heads, d) layout
    through rank-4 descriptors."""
    gen = torch.Generator(device="cuda").manual_seed(hash(("pieces", causal, str(dtype))) % 2**31)
    for B, H, S in ((1, 2, 1), (1, 2, 50), (2, 3, 77), (2, 3, 300), (1, 2, 1000), (1, 2, 640),
                    (1, 2, 641)):
        q, k, v = (torch.randn(B, H, S, 256, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        for softmax in (None, ()):
            check("fa3", q, k, v, causal, TOL[dtype], tile=(128, 80), softmax=softmax)
    check("fa3", q * 20, k * 20, v, causal, 2e-2 if dtype == torch.float16 else TOL[dtype],
          tile=(128, 80))
    q, k, v = (torch.randn(2, 333, 3, 256, device="cuda", dtype=dtype, generator=gen)
               for _ in range(3))
    check("fa3", *(t.transpose(1, 2) for t in (q, k, v)), causal, TOL[dtype], tile=(128, 80))


def test_wrong_device_raises():
    from kernels.attention import attention

    q = torch.randn(1, 1, 64, 64, device="cuda").half()
    with pytest.raises(ValueError, match="CUDA device"):
        attention(q.cpu(), q, q)


CONSAN_SCRIPT = textwrap.dedent("""
    import sys
    import torch, triton
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    from kernels.attention import attention
    variant, softmax = sys.argv[1], tuple(sys.argv[2:]) or None
    for causal in (False, True):
        q, k, v = (torch.randn(1, 2, 300, 128, device="cuda", dtype=torch.float16)
                   for _ in range(3))
        o = attention(q, k, v, causal=causal, variant=variant, softmax=softmax)
        torch.cuda.synchronize()
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                               is_causal=causal)
        err = ((o.double() - ref).norm() / ref.norm()).item()
        assert err < 4e-3, (variant, softmax, causal, err)
        print(variant, softmax, causal, "ok", err, flush=True)
""")


@pytest.mark.parametrize("variant,softmax", [
    ("ws", ()), ("ws_pingpong", ()), ("fa3", ()), ("fa3", ("rescale_early", "no_turns")),
    ("fa3", ("one_release", "named_turns"))],
    ids=lambda x: "+".join(x) if isinstance(x, tuple) else x)
def test_consan_ws_variants(tmp_path, variant, softmax):
    """Triton's concurrency sanitizer (ConSan) instruments the mbarrier/TMA/wgmma protocol and
    traps on a race or a missing wait; the run must finish clean and correct (fa3 also without
    turns and with O rescaled under Q·Kᵀ, and with one release a block and named-barrier turns:
    ConSan sees the mbarriers, not the named barriers, which order issue, not memory). One build
    a process, both masks: five builds compiled cold under ConSan take more than the 240 s one
    process is given."""
    env = dict(os.environ, TRITON_INSTRUMENTATION_MODE="consan",
               TRITON_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CONSAN_SCRIPT, variant, *softmax], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count(" ok ") == 2


# ------------------------------------------------------------------------- persistent fa3
# A persistent kernel whose phases go wrong hangs instead of failing: every test below fails by
# pytest-timeout's thread method (which ends the process, so the run goes on) instead.
PERSISTENT_TIMEOUT = pytest.mark.timeout(180, method="thread")


def check_persistent(q, k, v, causal, tol, persistent):
    """fa3 launched with ``persistent`` against float64 (``check``), and within rounding of the
    plain fa3: the same arithmetic per tile, whatever order the tiles come in."""
    from kernels.attention import attention

    check("fa3", q, k, v, causal, tol, persistent=persistent)
    o0 = attention(q, k, v, causal=causal, variant="fa3", persistent=False)
    o1 = attention(q, k, v, causal=causal, variant="fa3", persistent=persistent)
    diff = ((o1.double() - o0.double()).norm() / o0.double().norm()).item()
    assert diff < 1e-3, f"persistent={persistent!r} vs plain fa3 {tuple(q.shape)}: {diff:.2e}"


@PERSISTENT_TIMEOUT
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128, 256])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["fp16", "bf16"])
def test_persistent_matches_float64(dtype, d, causal):
    """fa3 with ``persistent=True`` (persistent.py) against float64, O and LSE: ragged lengths,
    more tiles than SMs (many tiles a CTA, the ring and turn phases carried across them), and
    2 CTAs walking every tile of a small problem (``persistent=2``); and within rounding of the
    plain fa3 (the same arithmetic per tile)."""
    gen = torch.Generator(device="cuda").manual_seed(hash(("persistent", d, causal)) % 2**31)
    for B, H, S, ctas in ((1, 2, 77, True), (2, 3, 300, True), (1, 2, 1000, True),
                          (4, 16, 1000, True), (2, 3, 300, 2), (1, 3, 1000, 1)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen) for _ in range(3))
        check_persistent(q, k, v, causal, TOL[dtype], ctas)


@PERSISTENT_TIMEOUT
@pytest.mark.parametrize("d", [64, 128, 256])
def test_pairs_order_matches_float64(d):
    """Causal fa3 with ``persistent="pairs"`` (the tiles in pairs m, n_m-1-m of one head) against
    float64 and within rounding of the plain fa3: one tile, an odd number of Q tiles a head (the
    middle tile alone, no second round), more pairs than SMs (several pairs a CTA)."""
    gen = torch.Generator(device="cuda").manual_seed(hash(("pairs", d)) % 2**31)
    for B, H, S in ((1, 2, 77), (2, 3, 300), (1, 2, 1000), (4, 16, 1000), (4, 40, 300)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.float16, generator=gen)
                   for _ in range(3))
        check_persistent(q, k, v, True, TOL[torch.float16], "pairs")


@PERSISTENT_TIMEOUT
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [64, 128, 256])
def test_short_launch_defaults(d, causal):
    """fa3 as ``attention`` launches it unasked (``launch_defaults``: causal in pairs, at d 64 up
    to PAIRS_SEQ; not causal persistent at S <= SHORT_SEQ; d 64's persistent launches at
    128x128) on ragged lengths, tile edges and the edges of the rule; at d 64 also 128x128 plain
    and the head dim's 192x128 persistent (launches the rule chose between)."""
    from kernels.attention import host

    gen = torch.Generator(device="cuda").manual_seed(hash(("short", d, causal)) % 2**31)
    edges = ((2, 2, host.SHORT_SEQ), (1, 2, host.SHORT_SEQ + 1))
    if causal:
        edges += ((1, 2, host.PAIRS_SEQ[d]), (1, 1, host.PAIRS_SEQ[d] + 1))
    for B, H, S in ((1, 2, 1), (2, 3, 77), (2, 3, 300), (1, 2, 1000), *edges):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.float16, generator=gen)
                   for _ in range(3))
        check("fa3", q, k, v, causal, TOL[torch.float16])
        if d == 64 and S <= host.SHORT_SEQ:
            check("fa3", q, k, v, causal, TOL[torch.float16], tile=(128, 128), persistent=False)
            check("fa3", q, k, v, causal, TOL[torch.float16], tile=(192, 128), persistent=True)


@PERSISTENT_TIMEOUT
@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
def test_short_launch_with_softmax_switches(causal):
    """d 64's short launch (128x128, persistent; causal in pairs) with the softmax's short
    chains (``tree_max`` + ``lane_sum``) and with a quarter of the exps as a polynomial
    (``poly_exp``), which keep the default rule: against float64 on ragged lengths (masked
    columns among the polynomial's), bf16 too, and on large scores (a row max that moves a lot,
    P down to the polynomial's clamp); and a persistent launch asked for a switch its loop lacks
    is refused by name."""
    from kernels.attention import attention, host

    gen = torch.Generator(device="cuda").manual_seed(hash(("chains", causal)) % 2**31)
    builds = (("tree_max", "lane_sum"), ("poly_exp",), ("tree_max", "lane_sum", "poly_exp"),
              ("tree_max", "lane_sum", "poly_exp", "no_turns"))
    for sm in builds:
        assert host.launch_defaults("fa3", 64, 1000, causal, softmax=sm)[0] == (128, 128)
    for B, H, S, dtype, mag in ((1, 2, 77, torch.float16, 1), (2, 3, 300, torch.bfloat16, 1),
                                (2, 5, 1000, torch.float16, 1), (1, 4, 1024, torch.float16, 20)):
        q, k, v = (torch.randn(B, H, S, 64, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        tol = TOL[dtype] if mag == 1 else 2e-2
        for sm in builds:
            check("fa3", q * mag, k * mag, v, causal, tol, softmax=sm)
    with pytest.raises(ValueError, match="persistent fa3 takes only"):
        attention(q, k, v, causal=causal, variant="fa3", softmax=("named_turns",),
                  persistent=True)


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("d", [128, 256])
def test_poly_exp_on_the_grid_launch(d, causal):
    """``poly_exp`` on the head dims' grid launch (one CTA a Q tile; at d 256 beside its default
    lane_sum), fp16 and bf16, ragged lengths, against float64."""
    gen = torch.Generator(device="cuda").manual_seed(hash(("poly", d, causal)) % 2**31)
    for B, H, S, dtype in ((1, 2, 77, torch.float16), (2, 3, 300, torch.bfloat16),
                           (1, 2, 1000, torch.float16)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen)
                   for _ in range(3))
        check("fa3", q, k, v, causal, TOL[dtype], softmax=("poly_exp", "lane_sum"),
              persistent=False)
        check("overlap", q, k, v, causal, TOL[dtype], softmax=("poly_exp",))


@PERSISTENT_TIMEOUT
@pytest.mark.parametrize("d", [64, 128])
def test_live_half_against_float64(d):
    """``live_half`` (a causal block whose right half is all masked takes its left half alone):
    the default launch (d 64 persistent in pairs beside its no_turns, d 128 in pairs) and the
    plain grid, fp16 and bf16, ragged lengths and tile edges, large scores, against float64."""
    from kernels.attention import host

    gen = torch.Generator(device="cuda").manual_seed(hash(("live_half", d)) % 2**31)
    base = host.softmax_default("fa3", d, persistent=True)
    for B, H, S, dtype, mag in ((1, 2, 77, torch.float16, 1), (2, 3, 300, torch.bfloat16, 1),
                                (2, 5, 1000, torch.float16, 1), (1, 3, 385, torch.float16, 1),
                                (1, 4, 1024, torch.float16, 20)):
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=dtype, generator=gen) * m
                   for m in (mag, mag, 1))
        tol = TOL[dtype] if mag == 1 else 2e-2
        check("fa3", q, k, v, True, tol, softmax=base + ("live_half",))
        check("fa3", q, k, v, True, tol, softmax=("live_half",), persistent=False)


@PERSISTENT_TIMEOUT
@pytest.mark.parametrize("d", [64, 128, 256])
def test_persistent_lengths_on_tile_edges(d):
    """One row (S = 1: one block, q_empty released at block 0), exact multiples of the tiles,
    one past them, with 3 CTAs over all the tiles."""
    for S in (1, 128, 192, 384, 385):
        for causal in (False, True):
            q, k, v = (torch.randn(2, 5, S, d, device="cuda", dtype=torch.float16) for _ in range(3))
            check("fa3", q, k, v, causal, TOL[torch.float16], persistent=3)
            check("fa3", q, k, v, causal, TOL[torch.float16], persistent=True)


@PERSISTENT_TIMEOUT
def test_persistent_large_magnitude_and_switches():
    for causal in (False, True):
        q, k, v = (torch.randn(2, 8, 520, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        check("fa3", q * 20, k * 20, v, causal, 2e-2, persistent=4)
        q, k, v = (torch.randn(2, 3, 300, 128, device="cuda", dtype=torch.float16) for _ in range(3))
        check("fa3", q, k, v, causal, TOL[torch.float16], persistent=2, fence=False,
              softmax=("tree_max", "lane_sum"))
        q, k, v = (torch.randn(3, 4, 777, 64, device="cuda", dtype=torch.float16) for _ in range(3))
        check("fa3", q, k, v, causal, TOL[torch.float16], persistent=3, softmax=("no_turns",))


@PERSISTENT_TIMEOUT
@pytest.mark.parametrize("d", [64, 128, 256])
def test_persistent_one_release(d):
    """``one_release`` on the persistent fa3: K_j's and V_{j-1}'s slots go back with one arrive,
    and a tile's last V with the next tile's first K. With few CTAs over many tiles (positions
    and the deferred release carried across tiles; one-block tiles at S 77) and on the default
    launch: against float64, and bit-identical to the build without it (the same arithmetic;
    only the barriers differ)."""
    from kernels.attention import attention

    gen = torch.Generator(device="cuda").manual_seed(hash(("one_release", d)) % 2**31)
    tile = (128, 128) if d == 64 else None
    for causal in (False, True):
        for B, H, S, pers in ((2, 3, 77, 2), (2, 3, 300, 3), (1, 4, 1000, 2), (2, 8, 1000, "pairs"
                                                                               if causal else True)):
            q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.float16, generator=gen)
                       for _ in range(3))
            for base in ((), ("no_turns",)):
                sm = base + ("one_release",)
                check("fa3", q, k, v, causal, TOL[torch.float16], softmax=sm, persistent=pers,
                      tile=tile)
                o0 = attention(q, k, v, causal=causal, variant="fa3", softmax=base,
                               persistent=pers, tile=tile)
                o1 = attention(q, k, v, causal=causal, variant="fa3", softmax=sm,
                               persistent=pers, tile=tile)
                assert torch.equal(o0, o1), (d, causal, S, pers, base)


CONSAN_PERSISTENT = textwrap.dedent("""
    import json, sys, torch, triton
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    from kernels.attention import attention
    for d, causal, kw in json.loads(sys.argv[1]):
        q, k, v = (torch.randn(1, 3, 300, d, device="cuda", dtype=torch.float16) for _ in range(3))
        o = attention(q, k, v, causal=causal, variant="fa3", persistent=2, **kw)
        torch.cuda.synchronize()
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                               is_causal=causal)
        err = ((o.double() - ref).norm() / ref.norm()).item()
        assert err < 4e-3, (d, causal, kw, err)
        print(d, causal, "ok", err, flush=True)
""")


def consan_persistent(tmp_path, runs):
    """The persistent fa3 under ConSan, 2 CTAs over 9 tiles (1 x 3 heads x 300 rows), once for
    each (head dim, causal, ``attention`` keywords) of ``runs``: every run right against
    float64, none reported."""
    env = dict(os.environ, TRITON_INSTRUMENTATION_MODE="consan",
               TRITON_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", CONSAN_PERSISTENT, json.dumps(runs)], env=env,
                          cwd=ROOT, capture_output=True, text=True, timeout=240, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert proc.stdout.count(" ok ") == len(runs)


def test_consan_one_release_persistent(tmp_path):
    """ConSan on the persistent fa3 with ``one_release``: the deferred release of a tile's last
    V, carried to the next tile's first K."""
    short = {"tile": [128, 128]}
    consan_persistent(tmp_path, [(64, True, short | {"softmax": ["no_turns", "one_release"]}),
                                 (64, False, short | {"softmax": ["one_release"]}),
                                 (128, True, {"softmax": ["one_release"]})])


def test_consan_persistent(tmp_path):
    """ConSan on persistent fa3 (q_empty, the ring and turn phases across tiles; at d 256 the
    shared O buffer's turns), and at d 64 without turns."""
    consan_persistent(tmp_path, [(d, causal, {}) for d in (128, 256) for causal in (False, True)]
                      + [(64, causal, {"tile": [128, 128], "softmax": ["no_turns"]})
                         for causal in (False, True)])
