"""SS wgmma operands: does walking k-slices, or a TMA stream into shared memory, slow a wgmma
whose operand reads are at or near the SM's shared-memory bandwidth?

An SS ``wgmma.mma_async m64nNk16`` reads A (64 x 16 fp16, 2 KiB) and B (N x 16, ``N·32`` B) from
shared memory in ``N/2`` clk of math: ``(2048 + 32·N) / (N/2)`` B/clk — 128 for N = 64 (the
SM's 128 B/clk), 96 for N = 128, 80 for N = 256. The fa3 kernel at head dim 256 runs Q·Kᵀ as
16 such m64n64k16, each on a *different* 16-column k-slice of Q (64 x 256) and K (64 x 256),
while the producer's TMA copies write the next K/V tiles into the same shared memory. Its traced
Q·Kᵀ scope is ~741 clk where 16 x 32 of math + ~70 of latency would be ~580. ``wgmma.py`` and
``issue.py`` feed every instruction the same 64 x 16 A and 16 x N B, with no copies running, so
they cannot say whether either difference costs time. This benchmark adds each, alone and
together:

* ``WALK`` 0: every instruction of a group reads the same A[:, 0:16] and B[:, 0:16] (16 chained
  ``warpgroup_mma`` calls on 16-column slices, as ``wgmma.py`` does); 1: instruction k reads
  A[:, 16k:16k+16] and B[:, 16k:16k+16] — one ``warpgroup_mma`` over the whole KD = 256, which
  Gluon splits into 16 m64nNk16 walking the tiles, exactly as ``attention/steps.py``'s ``qk``
  issues Q·Kᵀ (B stored K-major, N x KD, and handed over as ``.permute((1, 0))``). Both modes
  read the same 128-byte-swizzled tiles, so only the addresses differ.
* ``TMA`` 0/1: a 1-warp worker partition (``gl.warp_specialize``, as the course's producers)
  streams 32 KiB boxes (256 x 64 fp16) from a 16 MiB L2-resident source into a 2-slot ring,
  each slot refilled as soon as its copy lands (``tma.py``'s bandwidth loop at depth 2) — every
  SM at once, as in the attention kernel. With ``TMA`` 0 the worker partition idles, so both
  modes run the same partitions, registers and shared memory.

One CTA per SM (A 32 KiB + B ``N·512`` B + the 64 KiB ring > 114 KiB: no second CTA fits), one
consumer warpgroup (``num_warps`` 4). Each timed group is one Q·Kᵀ-shaped group of 16
instructions and then ``warpgroup_mma_wait(0)`` — as the attention kernel waits for its scores
— ``ITERS`` groups, ``%clock64`` around the loop. ``clk_per_instr = cycles / (ITERS·16)``
includes each group's exposed latency (~54-70 clk over 16 instructions); ``group_clk`` is the
figure to set beside fa3's traced scope; the ``WALK 0, TMA 0`` row is the baseline the others
are read against. (``wgmma.py``'s one-warpgroup ``wait 1`` rows run m64n64k16 at ~44 clk, not
32: there each instruction is its own group, waited for; chained 16 to a group, as here, one
warpgroup keeps the pipe full — on the H200 a group is 16·N/2 + ~64 clk.)

TMA bytes during the window: the consumer starts its clock only after the stream's first copy
has landed (a ``started`` mbarrier), and the worker writes the ``%clock64`` of every landing; on
the host, the landings between the consumer's two clock reads (same SM, same counter) give the
bytes per clk during the wgmma window. The worker runs a fixed number of copies, sized on the
host to outlast the consumer at up to ``TMA_BOUND`` B/clk; a row whose stream ended before the
window did is not ``ok`` (``tma_covers_window``).

Check: the accumulator after ``n`` groups is ``n · A @ Bᵀ`` (``WALK`` 1) or
``n · 16 · A[:, :16] @ B[:, :16]ᵀ`` (``WALK`` 0), fp32 against float64, rel. err < 1e-3 (inputs
``randn · 0.1``); with ``TMA`` the first and last 8 rows of each ring slot's last tile are
written back and compared with the source bit for bit (3 CTAs).
"""
from __future__ import annotations

import math

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    warpgroup_mma,
    warpgroup_mma_wait,
)

from . import common
from .common import clock64, globaltimer, record, smid
from .tma import copy_tile, ends_to_global
from .wgmma import acc_layout, load_2d, smem_layout

SEED = 23
KD = 256                     # the k extent of one group: fa3's head dim
K_STEP = 16                  # one wgmma's K (fp16)
INSTR = KD // K_STEP         # 16 instructions per group
BM = 64                      # one warpgroup's rows
BOX = [256, 64]              # a TMA box: 256 x 64 fp16 = 32 KiB (128-byte rows)
BOX_BYTES = BOX[0] * BOX[1] * 2
SLOTS = 2                    # the ring's depth
SOURCE_BYTES = 16 << 20      # fits in the 50 MiB L2: after the first pass every copy is an L2 hit
CHECK = 8                    # rows written back from each end of each slot's last tile
CHECK_ROWS = gl.constexpr(CHECK)
ITERS = 500                  # timed groups
TMA_BOUND = 96               # B/clk per SM the stream is sized to outlast (measured: ~36, tma.py)
WORKER_REGS = gl.constexpr(40)  # setmaxnreg.dec target for the worker's warpgroup
MAXNREG = 240                # register cap at entry (setmaxnreg needs one)
NS = (64, 128, 256)
KDIM, KSTEP, ROWS, NSLOTS = (gl.constexpr(v) for v in (KD, K_STEP, BM, SLOTS))  # in-kernel


@gluon.jit
def filled(ptr, R: gl.constexpr, C: gl.constexpr, num_warps: gl.constexpr):
    """An R x C shared tile (128-byte swizzle, as the attention kernel's Q and K tiles) holding
    ``ptr``'s row-major R x C values, loaded 64 rows at a time (a 256 x 256 tile at once would
    not fit in 128 threads' registers)."""
    dtype: gl.constexpr = ptr.dtype.element_ty
    smem = gl.allocate_shared_memory(dtype, [R, C], smem_layout([R, C], dtype))
    for r0 in gl.static_range(0, R, ROWS):
        smem.slice(r0, ROWS).store(load_2d(ptr + r0 * C, ROWS, C, num_warps))
    return smem


@gluon.jit
def wgmma_groups(a_s, b_s, started, out_ptr, stats_ptr, iters, N: gl.constexpr,
                 WALK: gl.constexpr, TMA: gl.constexpr, num_warps: gl.constexpr):
    """The consumer: ``iters`` groups of 16 SS m64nNk16, each waited for, into one accumulator."""
    acc_l: gl.constexpr = acc_layout(N, num_warps)
    if TMA:  # the stream is running before the clock starts
        mbarrier.wait(started, 0)
    a0 = a_s.slice(0, KSTEP, dim=1)                   # WALK 0: the same k-slice every time
    b0 = b_s.slice(0, KSTEP, dim=1).permute((1, 0))
    acc = gl.zeros([ROWS, N], gl.float32, acc_l)
    t0 = clock64(0)
    g0 = globaltimer(0)
    for i in range(iters):
        if WALK:  # one call over KD: Gluon issues 16 m64nNk16 walking the tiles, as qk() does
            acc = warpgroup_mma(a_s, b_s.permute((1, 0)), acc, is_async=True)
        else:
            for k in gl.static_range(KDIM // KSTEP):
                acc = warpgroup_mma(a0, b0, acc, is_async=True)
        acc = warpgroup_mma_wait(0, deps=(acc,))
    t1 = clock64(0)
    g1 = globaltimer(0)
    record(stats_ptr, t0, t1, g0, g1, smid(0))
    if gl.program_id(0) == 0:
        r = gl.arange(0, ROWS, gl.SliceLayout(1, acc_l))
        c = gl.arange(0, N, gl.SliceLayout(0, acc_l))
        gl.store(out_ptr + gl.expand_dims(r, 1) * N + gl.expand_dims(c, 0), acc)


@gluon.jit
def tma_stream(desc, ring, bars, started, lands_ptr, tile_out_ptr, copies, n_tiles):
    """The worker (one warp): ``copies`` copies into a 2-slot ring, copy c into slot c % 2 from
    tile (pid + c·grid) % n_tiles, each slot refilled as soon as it lands. Writes the clock of
    every landing, then the ends of each slot's last tile."""
    BR: gl.constexpr = desc.block_type.shape[0]
    BCOL: gl.constexpr = desc.block_type.shape[1]
    NSLOT: gl.constexpr = ring.type.shape[0]
    pid = gl.program_id(0)
    grid = gl.num_programs(0)
    for s0 in gl.static_range(NSLOT):
        copy_tile(desc, bars.index(s0), ring.index(s0), (pid + s0 * grid) % n_tiles)
    for i in range(copies):
        slot = i % NSLOT
        mbarrier.wait(bars.index(slot), (i // NSLOT) & 1)
        gl.store(lands_ptr + pid * copies + i, clock64(0))
        mbarrier.arrive(started, pred=i == 0)
        c = i + NSLOT
        if c < copies:
            copy_tile(desc, bars.index(slot), ring.index(slot), (pid + c * grid) % n_tiles)
    for s1 in gl.static_range(NSLOT):
        ends_to_global(ring.index(s1), tile_out_ptr + (pid * NSLOT + s1) * (2 * CHECK_ROWS * BCOL),
                       BR, CHECK_ROWS, BCOL, 1)


@gluon.jit
def hold(ring):
    """The worker with ``TMA`` off: writes 8 rows (one swizzle atom) of the ring and nothing
    else, so that the ring stays allocated (same shared memory as with ``TMA`` on: one CTA per
    SM)."""
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [1, 1], [1, 0])
    BCOL: gl.constexpr = ring.type.shape[2]
    rows = gl.zeros([CHECK_ROWS, BCOL], ring.dtype, layout)
    ring.index(0).slice(0, CHECK_ROWS).store(rows)


@gluon.jit
def operands_kernel(a_ptr, b_ptr, desc, out_ptr, stats_ptr, lands_ptr, tile_out_ptr, iters,
                    copies, n_tiles, N: gl.constexpr, WALK: gl.constexpr, TMA: gl.constexpr,
                    num_warps: gl.constexpr):
    a_s = filled(a_ptr, ROWS, KDIM, num_warps)        # Q-like: 64 x 256
    b_s = filled(b_ptr, N, KDIM, num_warps)           # K-like: N x 256 (K-major B)
    # the ring is there with TMA off too (``hold``): same shared memory, > 114 KiB: one CTA per SM
    ring = gl.allocate_shared_memory(desc.dtype, [NSLOTS] + desc.block_type.shape, desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [NSLOTS, 1], mbarrier.MBarrierLayout())
    started = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    for s in gl.static_range(NSLOTS):
        mbarrier.init(bars.index(s), count=1)
    mbarrier.init(started, count=1)
    fence_async_shared()  # generic-proxy stores and inits -> visible to the tensor cores, TMA
    gl.thread_barrier()
    if TMA:
        gl.warp_specialize([
            (wgmma_groups, (a_s, b_s, started, out_ptr, stats_ptr, iters, N, WALK, TMA,
                            num_warps)),
            (tma_stream, (desc, ring, bars, started, lands_ptr, tile_out_ptr, copies, n_tiles)),
        ], [1], [WORKER_REGS])
    else:
        gl.warp_specialize([
            (wgmma_groups, (a_s, b_s, started, out_ptr, stats_ptr, iters, N, WALK, TMA,
                            num_warps)),
            (hold, (ring,)),
        ], [1], [WORKER_REGS])


def config_name(N: int, walk: int, tma_on: int) -> str:
    return (f"SS m64n{N}k16 x{INSTR} {'walk' if walk else 'same'}"
            f"{' + TMA' if tma_on else ''}")


def compile_sm90(N: int = 64, walk: int = 1, tma_on: int = 0):
    import torch

    sig_t, _ = common.descriptor_type((4 * BOX[0], BOX[1]), BOX, torch.float16)
    return common.compile_sm90(
        operands_kernel,
        {"a_ptr": "*fp16", "b_ptr": "*fp16", "desc": sig_t, "out_ptr": "*fp32",
         "stats_ptr": "*i64", "lands_ptr": "*i64", "tile_out_ptr": "*fp16", "iters": "i32",
         "copies": "i32", "n_tiles": "i32"},
        {"N": N, "WALK": walk, "TMA": tma_on}, num_warps=4, maxnreg=MAXNREG)


def _desc(t):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for(BOX, gl.float16)
    return TensorDescriptor.from_tensor(t, BOX, layout)


def copies_for(N: int, iters: int) -> int:
    """Copies that outlast ``iters`` groups even if each instruction took ``N/2 + 32`` clk and
    the stream ran at ``TMA_BOUND`` B/clk (the run checks that it did outlast them)."""
    clk = iters * (INSTR * (N / 2 + 32) + 100)
    return int(clk * TMA_BOUND / BOX_BYTES) + 2 * SLOTS


def reference(a, b, walk: int, groups: int):
    """What the accumulator holds after ``groups`` groups, in float64."""
    if walk:
        return groups * (a.double() @ b.double().T)
    return (groups * INSTR) * (a[:, :K_STEP].double() @ b[:, :K_STEP].double().T)


def tma_window(lands, t0, t1) -> dict:
    """Per CTA: copies landed in (t0, t1] (the consumer's clock reads; same SM counter) -> bytes
    per clk during the window (median over CTAs), and whether every CTA's stream outlasted it."""
    inside = ((lands > t0[:, None]) & (lands <= t1[:, None])).sum(dim=1).double()
    covers = bool(((lands.max(dim=1).values >= t1) & (lands.min(dim=1).values <= t0)).all())
    window = (t1 - t0).double()
    return {"tma_copies_in_window": common.median(inside),
            "tma_bytes_per_clk": common.median(inside * BOX_BYTES / window),
            "tma_covers_window": covers}


def run(N: int, walk: int, tma_on: int, gen, iters: int = ITERS, grid: int | None = None) -> dict:
    """Check (4 groups against float64), then one timed run of ``iters`` groups on every SM."""
    import torch

    from .common import cta_stats, median

    dev = common.DEVICE
    grid = grid or common.sm_count()
    a = (torch.randn(BM, KD, device=dev, generator=gen) * 0.1).half()
    b = (torch.randn(N, KD, device=dev, generator=gen) * 0.1).half()
    rows = SOURCE_BYTES // (BOX[1] * 2)
    src = torch.randn(rows, BOX[1], device=dev, generator=gen, dtype=torch.float16)
    n_tiles = rows // BOX[0]
    desc = _desc(src)
    kw = {"N": N, "WALK": walk, "TMA": tma_on, "num_warps": 4, "maxnreg": MAXNREG}

    def launch(groups: int, copies: int):
        out = torch.full((BM, N), float("nan"), device=dev)
        stats = common.stats_buffer(grid)
        lands = torch.full((grid, max(copies, 1)), -1, dtype=torch.int64, device=dev)
        tiles = torch.full((grid, SLOTS, 2 * CHECK, BOX[1]), float("nan"), device=dev,
                           dtype=torch.float16)
        operands_kernel[(grid,)](a, b, desc, out, stats, lands, tiles, groups, copies, n_tiles,
                                 **kw)
        common.sync()
        return out, stats, lands, tiles

    check_groups = 4
    copies = copies_for(N, check_groups) if tma_on else 0
    out, stats, lands, tiles = launch(check_groups, copies)
    ref = reference(a, b, walk, check_groups)
    err = float((out.double() - ref).norm() / ref.norm())
    err = float("inf") if math.isnan(err) else err
    bitwise = None
    if tma_on:  # slot s last received copy c in [copies - SLOTS, copies) with c % SLOTS == s
        t = src.view(n_tiles, BOX[0], BOX[1])
        bitwise = True
        for pid in (0, grid // 2, grid - 1):
            for c in range(copies - SLOTS, copies):
                want = t[(pid + c * grid) % n_tiles]
                want = torch.cat([want[:CHECK], want[-CHECK:]])
                bitwise &= bool(torch.equal(tiles[pid, c % SLOTS], want))
    row = {"bench": "wgmma_operands", "name": config_name(N, walk, tma_on), "N": N, "walk": walk,
           "tma": tma_on, "instr_per_group": INSTR, "iters": iters, "grid": grid,
           "rel_err": err, "tma_bitwise": bitwise,
           "ok": err < 1e-3 and bitwise is not False}
    if not row["ok"]:
        return row
    launch(2, copies_for(N, 2) if tma_on else 0)  # warm-up (compiled already)
    copies = copies_for(N, iters) if tma_on else 0
    _, stats, lands, _ = launch(iters, copies)
    s = cta_stats(stats)
    cyc = median(s["cycles"])
    per_instr = cyc / (iters * INSTR)
    math_clk = N / 2
    row.update(cycles_median=cyc, cycles_min=float(s["cycles"].min()),
               cycles_max=float(s["cycles"].max()), one_cta_per_sm=s["one_cta_per_sm"],
               stats_written=s["written"], clk_per_instr=per_instr, math_clk=math_clk,
               group_clk=cyc / iters, beyond_math_per_group=cyc / iters - INSTR * math_clk,
               operand_bytes_per_clk=(BM * K_STEP * 2 + N * K_STEP * 2) / per_instr,
               operand_bytes_per_clk_at_math=(BM * K_STEP * 2 + N * K_STEP * 2) / math_clk,
               clock_hz=float((s["cycles"] / s["ns"]).median()) * 1e9, tma_copies=copies)
    row["ok"] = row["ok"] and s["written"] and s["one_cta_per_sm"]
    if tma_on:
        st = stats.cpu()
        row.update(tma_window(lands.cpu(), st[:, 0], st[:, 1]))
        row["ok"] = row["ok"] and row["tma_covers_window"]
    return row


def rows(gen) -> list[dict]:
    return [run(N, walk, tma_on, gen) for N in NS for walk in (0, 1) for tma_on in (0, 1)]


def line(r: dict) -> str:
    if "clk_per_instr" not in r:
        return f"{r['name']:34s} ok={r['ok']} rel_err={r['rel_err']:.2e} tma_bitwise={r['tma_bitwise']}"
    text = (f"{r['name']:34s} ok={r['ok']} {r['clk_per_instr']:6.1f} clk/instr "
            f"(math {r['math_clk']:.0f}) group {r['group_clk']:6.0f} clk "
            f"(+{r['beyond_math_per_group']:.0f})  operands {r['operand_bytes_per_clk']:5.1f} B/clk")
    if r["tma"]:
        text += (f"  TMA {r['tma_bytes_per_clk']:.1f} B/clk in window"
                 f"{'' if r['tma_covers_window'] else ' (stream ended early)'}")
    return text


if __name__ == "__main__":
    raise SystemExit(common.cli(__doc__, "h200-operands.json", SEED, rows, line))
