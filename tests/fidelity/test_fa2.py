"""The model's `fa2`, built from FA2's own costs (no per-variant factor), against SDPA-flash on
our H200: the grid (`results/h200-attention-grid.json`) and FA3 tab. 2's shape (`python -m fidelity fa2`)."""
import pytest

from fidelity import fa2 as check
from sim import attention
from sim.attention import fa2
from sim.config import AttentionConfig
from sim.hardware import H100, H200

pytestmark = pytest.mark.skipif(not (check.RESULTS / check.GRID_FILE).exists(),
                                reason="no committed attention grid")


@pytest.fixture(scope="module")
def pts():
    return check.points(H200)


@pytest.mark.parametrize("d, tile", [(64, (128, 128)), (128, (128, 64)), (256, (64, 64))])
def test_tiles_and_ctas(d, tile):
    """FA2's launch template's tiles on an H100/H200, one K and one V tile in smem, and 2 CTAs
    per SM from registers and smem — the constant the schedule runs with."""
    for hw in (H100, H200):
        cfg = attention.prepare(AttentionConfig(variant="fa2", headdim=d), hw)
        assert (cfg.block_m, cfg.block_n, cfg.stages) == (*tile, 1)
        assert fa2.resident_ctas(cfg, hw) == hw.fa2_ctas_per_sm == 2


def test_no_fitted_rate():
    """mma.sync's rate is the published isolated one (arXiv 2402.13499: ~62-63 % of wgmma's),
    not a value set to give FA2's measured rate."""
    assert H100.mma_sync_fraction == H200.mma_sync_fraction == 0.625


def test_points(pts):
    """The grid's 18 points and tab. 2's shape, causal and not."""
    assert len(pts) == 20
    assert {p.source for p in pts} == {"grid", "tab2"}


def test_errors(pts):
    """Achieved (2026-12-04): median |error| 7.5 %, max 20.6 % (d 64, S 16K, full), 13 of 20
    within ±10 %."""
    s = check.summary(pts)
    assert s["median_abs_error"] <= 0.08
    assert s["max_abs_error"] <= 0.21
    assert s["within_10pct"] >= 13


def test_d128_follows(pts):
    """d 128, the rate the fitted factor used to be set to, now follows from the costs: every
    d 128 point within +10 % (the model runs 5-10 % fast)."""
    errs = [p.error for p in pts if p.d == 128]
    assert len(errs) == 8
    assert all(0.0 < e <= 0.10 for e in errs)


def test_by_head_dim(pts):
    """d 256 (smem-bound: every warp reads all of K and V) within ±5 % median; d 64 the model's
    known gap: 14-21 % fast (its softmax-heavy 128x128 block) — a regression guard, not a
    target."""
    med = check.by_d(pts)
    assert abs(med[256]) <= 0.05
    assert 0.10 <= med[64] <= 0.21
    assert med[128] <= 0.09


@pytest.mark.xfail(strict=True, reason="d 64: the model is 13-21 % fast at every S; no sourced "
                   "cost found for what FA2's 128x128 d 64 block loses on Hopper")
def test_d64_within_10pct(pts):
    assert all(abs(p.error) <= 0.10 for p in pts if p.d == 64)
