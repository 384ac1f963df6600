"""From one SM to the whole GPU.

A CTA's time depends only on how many K/V blocks (attention) or k-blocks (GEMM) it walks, so we
simulate one SM at a couple of lengths and read the rest off the line through them: in steady
state every block costs the same. CTAs then go to SMs as the hardware's block scheduler hands them
out — each to the first SM that frees up, in launch order (FA3 launches causal q-blocks longest
first) — and the last SM to finish sets the time. The whole GPU's HBM traffic over its bandwidth is
a floor under that.

TFLOPs/s are counted as the paper counts them (`AttentionConfig.flops`).

The clock. On hardware with a `power_cap` each kernel runs at the clock its own activity allows
(`PowerCap`): the model simulates the steady-state CTA, reads how busy it keeps the tensor cores
and how many bytes per clock it moves through L2, and takes the clock the cap gives for that.
The clock in turn sets the SM's share of L2 per clock (L2 does not run on the SM clock), so the
two are settled together in a few rounds.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass, field

from . import attention
from .config import DTYPES, AttentionConfig, GemmConfig
from .hardware import Hardware
from .trace import UNITS, Trace

EXACT_UP_TO = 64        # simulate CTAs of up to this many blocks outright; beyond, extrapolate
SETTLE = 16             # a causal launch's CTAs: outright up to this many blocks, then the repeat
MAX_PERIOD = 4          # ... of at most this many blocks (`_period`)
CLOCK_ROUNDS = 8        # at most this many rounds of clock → activity → clock ...
CLOCK_SETTLED = 1e-3    # ... until the clock moves by less than this fraction


@dataclass
class Prediction:
    workload: str
    variant: str
    hardware: str
    tflops: float
    seconds: float
    utilization: dict[str, float]       # per unit, over the steady-state CTA
    config: dict
    cta_clk: float                      # one CTA of the most common length
    waves: float
    bound: str                          # "sm" or "hbm"
    clock_hz: float = 0.0               # the SM clock the prediction ran at
    trace: Trace | None = field(default=None, repr=False)

    def to_json(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "trace"}


def _remembered(simulate):
    """`simulate` keeping its results for one prediction, by its (hashable) arguments. Settling
    the clock asks for the same runs again: the occupancy pass starts at the clock the first pass
    started at, the steady CTA at the settled clock is the last one settling ran, and a launch
    times CTAs as long as the steady one. A run is deterministic, so the result read back is the
    one a second run would give, at none of its cost (a fifth of a prediction's)."""
    runs: dict = {}

    def run(*args):
        if args not in runs:
            runs[args] = simulate(*args)
        return runs[args]
    return run


def _cta_time(run, n: int, cache: dict, exact: int = EXACT_UP_TO,
              settle: int | None = None) -> float:
    """Clock cycles of a CTA over n blocks (or tiles): simulated up to `exact`, beyond it on the
    line through `exact` / 2 and `exact`. With `settle` (a launch that asks for every length, as
    a causal one does), lengths past `settle` whose schedule has settled into a repeat
    (`_period`) are the repeat's: a CTA p blocks longer adds what the last p blocks added."""
    if n in cache:
        return cache[n]
    if n > exact:
        a, b = exact // 2, exact
        ta, tb = (_cta_time(run, a, cache, exact, settle), _cta_time(run, b, cache, exact, settle))
        cache[n] = tb + (tb - ta) / (b - a) * (n - b)
    elif settle and n > settle and (p := _period(run, cache, settle)):
        q = -(-(n - settle) // p)               # periods past `settle`, rounded up
        cache[n] = _cta_time(run, n - q * p, cache) + q * (cache[settle] - cache[settle - p])
    else:
        cache[n] = run(n)[0]
    return cache[n]


def _period(run, cache: dict, settle: int) -> int | None:
    """The smallest p <= MAX_PERIOD for which, over the last max(3p, 8) lengths up to `settle`,
    a CTA adds to the one p blocks shorter the same cycles (to 1e-9 of its time); None if no p
    does (two warpgroups that drift in phase, as ws's and pingpong's at d 64 do: those lengths
    are simulated). Checked against every length simulated outright: tests/model/test_predict.py."""
    if "period" not in cache:
        t = {k: _cta_time(run, k, cache) for k in range(1, settle + 1)}
        tol = 1e-9 * t[settle]
        cache["period"] = next((p for p in range(1, MAX_PERIOD + 1) if all(
            abs(t[k] - t[k - p] - (t[settle] - t[settle - p])) <= tol
            for k in range(settle - max(3 * p, 8) + 1, settle + 1))), None)
    return cache["period"]


def _makespan(times: list[float], slots: int) -> float:
    """Greedy list scheduling: each CTA to the first free SM slot, in launch order."""
    free = [0.0] * min(slots, len(times))
    heapq.heapify(free)
    end = 0.0
    for t in times:
        start = heapq.heappop(free)
        end = max(end, start + t)
        heapq.heappush(free, start + t)
    return end


def activity(trace: Trace, clk: float, hw: Hardware) -> tuple[float, float, float]:
    """(tensor cores' busy fraction, L2 bytes per clock, exps per clock) of one simulated SM
    over `clk`."""
    util = trace.utilization(clk)
    return util["tensor"], util["tma"] * hw.tma_rate, util["sfu"] * hw.sfu_exp_per_clk


def copy_rate(hw: Hardware, tma_busy: float) -> float:
    """The copy rate the SMs settle at: each SM's link rate, unless the SMs together — each with
    its copy engine busy `tma_busy` of the time — would ask L2 for more than its share per SM;
    then what the share gives a copy engine that is busy that often."""
    link, share = hw.tma_link_bytes_per_clk, hw.l2_bytes_per_clk_per_sm
    return min(link, share / tma_busy) if tma_busy > 0 else link


def clocked(hw: Hardware, steady, occupancy: float = 1.0) -> Hardware:
    """`hw` at the clock the kernel holds under its power cap and at the copy rate L2 leaves its
    copies (`hw` itself with neither), both settled together; `steady(hw)` simulates the
    steady-state SM and returns (clk, trace). `occupancy` is the share of the GPU's SM-time the
    launch keeps busy: the power the activity burns scales with it (an idle SM burns the base
    alone), so a launch that leaves SMs idle runs at a higher clock."""
    link = hw.tma_link_bytes_per_clk
    if hw.power_cap is None and link is None:
        return hw
    ceiling, clock, rate = hw.clock_hz, hw.clock_hz, link
    for _ in range(CLOCK_ROUNDS):
        at = hw.with_(clock_hz=clock, tma_bytes_per_clk=rate)
        clk, trace = steady(at)
        if hw.power_cap:
            tensor, l2_bytes, exps = (occupancy * a for a in activity(trace, clk, at))
            new_clock = hw.power_cap.clock_hz(tensor, l2_bytes, ceiling, exps)
        else:
            new_clock = clock
        new_rate = copy_rate(at, trace.utilization(clk)["tma"]) if link else None
        settled = abs(new_clock - clock) <= CLOCK_SETTLED * clock and (
            rate is None or abs(new_rate - rate) <= CLOCK_SETTLED * rate)
        clock, rate = new_clock, new_rate
        if settled:
            break
    return hw.with_(clock_hz=clock, power_cap=None, tma_bytes_per_clk=rate)


def _lengths(cfg: AttentionConfig) -> list[tuple[int, int]]:
    """(K/V blocks, of which straddle the diagonal or the end: masked) of each q-block."""
    kv_blocks = math.ceil(cfg.seqlen / cfg.block_n)
    out = []
    for i in range(math.ceil(cfg.seqlen / cfg.block_m)):
        if cfg.causal:
            last_row = min(cfg.seqlen, (i + 1) * cfg.block_m)
            n = math.ceil(last_row / cfg.block_n)
            out.append((n, n - (i * cfg.block_m) // cfg.block_n))
        else:
            out.append((kv_blocks, 1 if cfg.seqlen % cfg.block_n else 0))
    return out


TILE_EXACT = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 24, 32, 48, 64)   # tile lengths simulated outright


class TileCosts:
    """What a tile of n K/V blocks (m of them masked) adds to a persistent CTA's time, and what a
    CTA pays beyond its tiles, read off the simulated CTA: ``tile(n, m)`` = (T(3 such tiles) −
    T(1)) / 2, ``extra(n, m)`` = T(1) − ``tile(n, m)`` (the cold Q load and ring fill before the
    first tile, the last P·V and epilogue after the last); lengths between the simulated ones on
    the line between them, longer ones on the line through the last two (a block's period)."""

    def __init__(self, cfg: AttentionConfig, hw: Hardware):
        from .attention import persistent
        self.cfg, self.hw, self.sim = cfg, hw, persistent.simulate
        self._exact: dict[tuple[int, int], tuple[float, float]] = {}

    def _simulated(self, n: int, m: int) -> tuple[float, float]:
        key = (n, min(m, n))
        if key not in self._exact:
            one = self.sim(self.cfg, self.hw, [key])[0]
            three = self.sim(self.cfg, self.hw, [key] * 3)[0]
            tile = (three - one) / 2
            self._exact[key] = (tile, one - tile)
        return self._exact[key]

    def _at(self, n: int, m: int, which: int) -> float:
        if n in TILE_EXACT:
            return self._simulated(n, m)[which]
        lo = max(x for x in TILE_EXACT if x < n)
        hi = min((x for x in TILE_EXACT if x > n), default=None)
        if hi is None:
            lo, hi = TILE_EXACT[-2], TILE_EXACT[-1]
        a, b = self._simulated(lo, m)[which], self._simulated(hi, m)[which]
        return a + (b - a) / (hi - lo) * (n - lo)

    def tile(self, n: int, m: int) -> float:
        return self._at(n, m, 0)

    def extra(self, n: int, m: int) -> float:
        return self._simulated(min(n, TILE_EXACT[-1]), m)[1] if n > TILE_EXACT[-1] \
            else self._at(n, m, 1)

    def cta(self, tiles: list[tuple[int, int]]) -> float:
        """A persistent CTA's clk over `tiles`, in order."""
        return self.extra(*tiles[0]) + sum(self.tile(n, m) for n, m in tiles)


def typical(lengths: list[tuple[int, int]]) -> tuple[int, int]:
    """The (blocks, masked) tile whose run the prediction reads its clock and utilization off:
    the work-weighted median, so half of all K/V blocks are in tiles at most that long. The
    board's power follows the launch's activity over its time, which the long tiles fill;
    non-causal every tile has the same length, causal each q-block's is its own."""
    ordered = sorted(lengths)
    half, seen = sum(n for n, _ in ordered) / 2, 0
    for n, m in ordered:
        seen += n
        if seen >= half:
            return n, m
    raise ValueError("a launch needs at least one tile")


def predict_attention_persistent(cfg: AttentionConfig, hw: Hardware, keep_trace: bool = False,
                                 tiles_of=None) -> Prediction:
    """min(tiles, SMs) CTAs, one per SM, each walking its tiles in the kernel's order
    (`sim.attention.persistent.tiles_of`, or another `tiles_of(cfg, hw)`: each CTA's list of
    (K/V blocks, masked)); the one that ends last sets the time. No turnover between tiles (no
    CTA ends): each CTA's time is its tiles' (`TileCosts`)."""
    from .attention import persistent
    cfg = attention.prepare(cfg, hw)
    lists = (tiles_of or persistent.tiles_of)(cfg, hw)
    lengths = [t for tiles in lists for t in tiles]
    n_typ, m_typ = typical(lengths)
    n_s = min(n_typ, EXACT_UP_TO)
    k_s = max(2, min(max(map(len, lists)), EXACT_UP_TO // n_s))

    steady_tiles = [(n_s, min(m_typ, n_s))] * k_s
    steady = _remembered(lambda h: persistent.simulate(cfg, h, steady_tiles))

    def launch(h):
        costs = TileCosts(cfg, h)
        times = [costs.cta(tiles) for tiles in lists]
        return times, _makespan(times, h.sms)

    hw, makespan = _settle(hw, steady, launch, 1)
    clk, trace = steady(hw)
    el = DTYPES[cfg.dtype]
    hbm_bytes = cfg.batch * cfg.heads * cfg.seqlen * cfg.headdim * el * 4
    return _finish("attention", cfg, hw, cfg.flops, makespan, hbm_bytes, clk, trace,
                   len(lengths) / hw.sms, keep_trace)


@dataclass
class Launch:
    """One attention launch (one CTA per q-block) as the model runs it, before it becomes
    TFLOP/s: what `predict_attention` and `fidelity.grid`'s account of the time both read."""
    config: AttentionConfig     # resolved (tile, consumers)
    hardware: Hardware          # at the clock the launch settles at
    ctas_per_sm: int
    times: list[float]          # each CTA's clocks, the SM's turnover included, in launch order
    blocks: list[int]           # each CTA's K/V blocks, in the same order
    makespan: float             # clocks from the first CTA's start to the last one's end
    typical: tuple[int, int]    # (blocks, masked blocks) of the work-weighted median CTA
    simulate: object = field(default=attention.simulate, repr=False, compare=False)

    def steady(self, hw: Hardware | None = None):
        """(clocks, trace) of the steady CTA the clock is read off, on `hw` (default: ours)."""
        n, m = self.typical
        return self.simulate(self.config, hw or self.hardware, min(n, EXACT_UP_TO), min(m, n))


def attention_launch(cfg: AttentionConfig, hw: Hardware) -> Launch:
    """Every CTA of a (non-persistent) attention launch timed on `hw` at the clock its activity
    settles at, and the makespan of handing them to the SMs in launch order."""
    cfg = attention.prepare(cfg, hw)
    per_sm = attention.ctas_per_sm(cfg, hw)
    lengths = _lengths(cfg)
    run = Launch(cfg, hw, per_sm, [], [], 0.0, typical(lengths), _remembered(attention.simulate))

    def launch(h):
        cache_by_mask: dict[int, dict] = {}

        def run_for(masked):
            return lambda n: run.simulate(cfg, h, n, min(masked, n))

        times, blocks = [], []  # one CTA per q-block, each paying the SM's turnover
        settle = SETTLE if len({n for n, _ in lengths}) > SETTLE else None
        for n, masked in sorted(lengths, reverse=True) * (cfg.batch * cfg.heads):
            times.append(_cta_time(run_for(masked), n, cache_by_mask.setdefault(masked, {}),
                                   settle=settle) + h.cta_launch_clk)
            blocks.append(n)
        run.times, run.blocks = times, blocks
        # simulate() ran the `per_sm` CTAs an SM holds together: each SM is `per_sm` slots.
        return times, _makespan(times, h.sms * per_sm)

    run.hardware, run.makespan = _settle(hw, run.steady, launch, per_sm)
    return run


def predict_attention(cfg: AttentionConfig, hw: Hardware, keep_trace: bool = False) -> Prediction:
    if cfg.persistent:
        return predict_attention_persistent(cfg, hw, keep_trace)
    run = attention_launch(cfg, hw)
    cfg, hw = run.config, run.hardware
    clk, trace = run.steady()
    el = DTYPES[cfg.dtype]
    hbm_bytes = cfg.batch * cfg.heads * cfg.seqlen * cfg.headdim * el * 4     # Q, K, V read; O written
    return _finish("attention", cfg, hw, cfg.flops, run.makespan, hbm_bytes, clk, trace,
                   len(run.times) / (hw.sms * run.ctas_per_sm), keep_trace)


def predict_gemm(cfg: GemmConfig, hw: Hardware, keep_trace: bool = False) -> Prediction:
    """Persistent kernels: min(tiles, SMs) CTAs start together, each walks its tiles, and the one
    with the most ends last; a CTA's time is simulated up to two tiles per consumer and linear
    beyond. One CTA per tile otherwise: each starts cold (its ring fills from HBM, its epilogue
    holds the SM) and pays the SM's turnover (`cta_launch_clk`) before the next takes its place.
    Either way one CTA per SM: the kernels' fp32 accumulators take half the register file."""
    from . import gemm
    cfg = gemm.prepare(cfg, hw)
    k_blocks = math.ceil(cfg.k / cfg.block_k)
    counts = gemm.tiles_per_cta(cfg, hw)
    exact = 2 * cfg.consumers
    steady_tiles = min(max(counts), exact)
    simulate = _remembered(gemm.simulate)

    def steady(h):
        return simulate(cfg, h, steady_tiles, k_blocks)

    def launch(h):
        cache: dict = {}
        turnover = 0.0 if cfg.persistent else h.cta_launch_clk
        times = [_cta_time(lambda n: simulate(cfg, h, n, k_blocks), n, cache, exact)
                 + turnover for n in counts]
        return times, _makespan(times, h.sms)

    hw, makespan = _settle(hw, steady, launch, 1)
    clk, trace = steady(hw)
    el = DTYPES[cfg.dtype]
    hbm_bytes = (cfg.m * cfg.k + cfg.k * cfg.n + cfg.m * cfg.n) * el
    return _finish("gemm", cfg, hw, cfg.flops, makespan, hbm_bytes, clk, trace,
                   gemm.tiles(cfg) / hw.sms, keep_trace)


def _settle(hw: Hardware, steady, launch, per_sm: int) -> tuple[Hardware, float]:
    """The clock and the launch's makespan: first at the clock the steady CTA's activity gives,
    then, if the launch leaves SMs idle (a partial last wave, CTAs of unequal length, fewer
    tiles than SMs), once more at the clock that lower occupancy gives. `launch(hw)` returns
    (CTA times, makespan)."""
    at = clocked(hw, steady)
    times, makespan = launch(at)
    occupancy = sum(times) / (hw.sms * per_sm * makespan)
    if hw.power_cap and occupancy < 0.98:
        at = clocked(hw, steady, occupancy)
        times, makespan = launch(at)
    return at, makespan


def _finish(workload, cfg, hw, flops, makespan_clk, hbm_bytes, clk, trace, waves, keep_trace):
    sm_s = makespan_clk / hw.clock_hz + hw.kernel_launch_s
    hbm_s = hbm_bytes / hw.hbm_bytes_per_s
    seconds = max(sm_s, hbm_s)
    util = trace.utilization(clk)
    return Prediction(
        workload=workload, variant=cfg.variant, hardware=hw.name, tflops=flops / seconds / 1e12,
        seconds=seconds, utilization={u: round(util[u], 4) for u in UNITS}, config=_plain(cfg),
        cta_clk=clk, waves=round(waves, 3), bound="sm" if sm_s >= hbm_s else "hbm",
        clock_hz=hw.clock_hz, trace=trace if keep_trace else None)


def _plain(cfg) -> dict:
    return {k: v for k, v in cfg.__dict__.items()}


def predict(cfg, hw: Hardware, keep_trace: bool = False) -> Prediction:
    if isinstance(cfg, AttentionConfig):
        return predict_attention(cfg, hw, keep_trace)
    if isinstance(cfg, GemmConfig):
        return predict_gemm(cfg, hw, keep_trace)
    raise TypeError(f"expected an AttentionConfig or GemmConfig, got {type(cfg).__name__}")
