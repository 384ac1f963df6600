"""``gemm(a, b, variant="auto")``: schedule, tile and L2 group chosen from the shape by a small
rule, not a table of shapes.

The rule counts what each candidate's persistent CTAs must do and charges it what one k-step and
one exposed epilogue cost (constants below, fitted to the measured shapes of ``results/h200.json``,
its ``gemm_shapes_explore`` and ``gemm_shapes`` sections)::

    tiles   = ceil(M / BM) * ceil(N / BN)          (a ragged edge tile costs a whole one)
    per_cta = ceil(tiles / SMs)                    (the last wave: the busiest CTA sets the time)
    clk     = per_cta * (ceil(K / BK) * KSTEP_CLK + EPILOGUE_CLK)

* ``ws`` (128 x 256, two cooperating consumer warpgroups, 3 stages): the fastest k-step per FLOP
  (the largest tile: 85 FLOP per operand byte), but its epilogue stops the tensor cores
  (both warpgroups store the tile while only the producer runs ahead).
* ``ws_pingpong`` (192 x 128, 4 stages): one consumer's epilogue runs under the other's
  wgmmas, so nothing of it is exposed, but its k-step does a little less per clock.

So the ws tile wins where K is long (the epilogue is a small share of a tile) and its
quantisation over the SMs is no worse; pingpong where K is short (its hidden epilogue is then
worth more than its slower k-step), by a margin. The L2 group: the ``wave`` tiles running at
once (one per CTA for ws) span ``g`` row blocks and ``wave / g`` column blocks, and the operand
rows they share through L2 each k-step are ``g * BM + (wave / g) * BN``: least at
``g = sqrt(wave * BN / BM)`` (16 on 132 SMs), rounded to a power of two and no more than the
row blocks there are. Measured, that pays only for ws over many tiles a CTA (below); pingpong
keeps the default 8.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

SMS_DEFAULT = 132  # H100 SXM / H200; choose() takes the device's count where it has one

# clk of one k-step of one tile at the tensor cores' pace (4096 FLOP/clk/SM: 128x256x64 is
# 1024 clk, 192x128x64 is 768) over the fraction of that pace each schedule keeps, and the
# epilogue a tile exposes. Fitted to results/h200.json's gemm_shapes_explore: pingpong over ws at
# 8192^3 (0.99) and at 8192 x 8192 x 2048 (1.026) give ws's exposed epilogue 1.6 K clk and
# pingpong's k-step 0.963 of ws's pace; the other three shapes then come out ordered as measured.
KSTEP_EFF = {"ws": 1.0, "ws_pingpong": 0.963}
EPILOGUE_CLK = {"ws": 1600, "ws_pingpong": 0}
# pingpong only where the rule has it this much faster: the rounds of one run spread 2-5 %, and
# where the two tie (16384 x 4096 x 4096: 0.2 %) ws measured ahead
PINGPONG_MARGIN = 0.02
# The L2 group. h200.json's gemm_shapes_explore timed 8, 16 and 32 at every shape: 32 lost 2-5 % everywhere; pingpong
# lost 2-5 % with 16 at four of five shapes (tied at K 2048); ws gained 0.5-1.2 % with 16 where
# a CTA walks many tiles (8192^3, 16384 x 4096 x 4096: 15.5 a CTA; 8192 x 8192 x 2048), tied at
# 6144^3 (8.7) and lost 2 % at 4096^3 (3.9). So the square-wave group (16 on 132 SMs) for ws
# from WIDE_GROUP_TILES tiles a CTA on, the default 8 otherwise.
WIDE_GROUP_TILES = 8
DEFAULT_GROUP = 8


@dataclass(frozen=True)
class Candidate:
    variant: str
    stages: int
    tile: tuple[int, int, int]

    @property
    def wave(self) -> int:
        """Tiles a CTA has in flight: pingpong's two consumers each own one."""
        return 2 if self.variant == "ws_pingpong" else 1


CANDIDATES = (Candidate("ws", 3, (128, 256, 64)), Candidate("ws_pingpong", 4, (192, 128, 64)))


@dataclass(frozen=True)
class Pick:
    variant: str
    stages: int
    tile: tuple[int, int, int]
    group_m: int
    clk: float  # the rule's time, clk of the busiest CTA
    why: str


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def predicted_clk(c: Candidate, M: int, N: int, K: int, sms: int = SMS_DEFAULT) -> float:
    BM, BN, BK = c.tile
    tiles = cdiv(M, BM) * cdiv(N, BN)
    per_cta = cdiv(tiles, sms)
    kstep = BM * BN * BK * 2 / 4096 / KSTEP_EFF[c.variant]
    return per_cta * (cdiv(K, BK) * kstep + EPILOGUE_CLK[c.variant])


def group_m(c: Candidate, M: int, N: int, sms: int = SMS_DEFAULT) -> int:
    """Row blocks per L2 group: for ws over many tiles a CTA, the concurrent wave's footprint
    made square (see above); otherwise the default."""
    BM, BN, _ = c.tile
    tiles = cdiv(M, BM) * cdiv(N, BN)
    if c.variant != "ws" or tiles < WIDE_GROUP_TILES * sms:
        return int(max(1, min(DEFAULT_GROUP, cdiv(M, BM))))
    wave = min(sms * c.wave, tiles)
    g = math.sqrt(wave * BN / BM)
    g = 2 ** round(math.log2(max(g, 1.0)))
    return int(max(1, min(g, cdiv(M, BM), 64)))


def choose(M: int, N: int, K: int, dtype=None, sms: int | None = None) -> Pick:
    """ws unless the rule has pingpong ``PINGPONG_MARGIN`` faster. ``dtype`` is taken for the
    record: fp16 and bf16 run at one rate."""
    if sms is None:
        sms = _device_sms()
    scored = [(predicted_clk(c, M, N, K, sms), i, c) for i, c in enumerate(CANDIDATES)]
    (ws_clk, _, ws), (pp_clk, _, pp) = scored
    clk, best = (pp_clk, pp) if pp_clk < ws_clk * (1 - PINGPONG_MARGIN) else (ws_clk, ws)
    others = ", ".join(f"{c.variant} {t / 1e3:.0f}K" for t, _, c in scored if c is not best)
    g = group_m(best, M, N, sms)
    return Pick(best.variant, best.stages, best.tile, g, clk,
                f"{best.variant} {clk / 1e3:.0f}K clk (against {others}), group_m {g}")


def _device_sms() -> int:
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_properties(0).multi_processor_count
    except ImportError:  # pragma: no cover
        pass
    return SMS_DEFAULT
