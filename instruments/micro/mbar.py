"""mbarrier round trip between two warps.

``gl.warp_specialize`` gives ``ping`` and ``pong`` one warp each (the default warpgroup, which
Gluon needs, sits out); with ``PING_WARPGROUP`` the ping side is the default warpgroup instead. Two barriers of arrival count 1::

    ping: for i: arrive(bar[0]); wait(bar[1], i & 1)        (times the loop with clock64)
    pong: for i: wait(bar[0], i & 1); arrive(bar[1])

Each iteration is two arrive -> wait hand-offs, so ``mbarrier_clk = cycles / (2 · iters)``: the
model's cost from one warp's arrive to another warp seeing the phase flip. One CTA on one SM.
The warp-to-warp figure sets the model's ``mbarrier_clk``. The warpgroup row is for comparison:
as in the course's consumer warpgroups, each arrive and wait there comes with a ``bar.sync`` of
its 4 warps (Gluon's lowering: one elected thread arrives).

Check: both sides count their completed iterations; each must equal ``iters`` (a missed or extra
phase would deadlock or leave a count short).
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

from . import common
from .common import clock64, globaltimer, record, smid


@gluon.jit
def ping(bars, stats_ptr, count_ptr, iters):
    n = 0
    t0 = clock64(0)
    g0 = globaltimer(0)
    for i in range(iters):
        mbarrier.arrive(bars.index(0))
        mbarrier.wait(bars.index(1), i & 1)
        n += 1
    t1 = clock64(0)
    g1 = globaltimer(0)
    record(stats_ptr, t0, t1, g0, g1, smid(0))
    gl.store(count_ptr + 2 * gl.program_id(0), n)


@gluon.jit
def pong(bars, count_ptr, iters):
    n = 0
    for i in range(iters):
        mbarrier.wait(bars.index(0), i & 1)
        mbarrier.arrive(bars.index(1))
        n += 1
    gl.store(count_ptr + 2 * gl.program_id(0) + 1, n)


@gluon.jit
def idle(dummy):
    pass


@gluon.jit
def mbarrier_pingpong_kernel(stats_ptr, count_ptr, iters, PING_WARPGROUP: gl.constexpr,
                             num_warps: gl.constexpr):
    bars = gl.allocate_shared_memory(gl.int64, [2, 1], mbarrier.MBarrierLayout())
    mbarrier.init(bars.index(0), count=1)
    mbarrier.init(bars.index(1), count=1)
    if PING_WARPGROUP:  # ping is the default partition: a whole warpgroup
        gl.warp_specialize([
            (ping, (bars, stats_ptr, count_ptr, iters)),
            (pong, (bars, count_ptr, iters)),
        ], [1], [24])
    else:  # ping and pong are one warp each; the default warpgroup sits out
        gl.warp_specialize([
            (idle, (iters,)),
            (ping, (bars, stats_ptr, count_ptr, iters)),
            (pong, (bars, count_ptr, iters)),
        ], [1, 1], [24, 24])


MAXNREG = 128  # register cap at entry (setmaxnreg needs one)


def compile_sm90(ping_warpgroup: bool = False):
    return common.compile_sm90(mbarrier_pingpong_kernel,
                               {"stats_ptr": "*i64", "count_ptr": "*i32", "iters": "i32"},
                               {"PING_WARPGROUP": ping_warpgroup}, num_warps=4, maxnreg=MAXNREG)


def run(iters: int = 100_000, ping_warpgroup: bool = False) -> dict:
    """Ping from one warp (default) or from a warpgroup (``ping_warpgroup``); pong is a warp."""
    import torch

    from .common import cta_stats

    kw = {"PING_WARPGROUP": ping_warpgroup, "num_warps": 4, "maxnreg": MAXNREG}
    counts = torch.full((2,), -1, device=common.DEVICE, dtype=torch.int32)
    stats = common.stats_buffer(1)
    mbarrier_pingpong_kernel[(1,)](stats, counts, 100, **kw)  # warm-up
    counts.fill_(-1)
    stats = common.stats_buffer(1)
    mbarrier_pingpong_kernel[(1,)](stats, counts, iters, **kw)
    common.sync()
    s = cta_stats(stats)
    cyc = float(s["cycles"][0])
    c = counts.cpu().tolist()
    return {"bench": "mbarrier", "iters": iters, "ping": "warpgroup" if ping_warpgroup else "warp",
            "counts": c, "ok": c == [iters, iters] and s["written"], "cycles": cyc,
            "clk_per_handoff": cyc / (2 * iters), "clk_per_round_trip": cyc / iters}
