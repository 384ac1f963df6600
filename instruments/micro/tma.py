"""TMA (``cp.async.bulk.tensor``) load latency and per-SM bandwidth.

* **latency** -- one CTA of one warp, one copy at a time: ``clock64`` before ``mbarrier.expect`` + the copy,
  ``clock64`` after ``mbarrier.try_wait`` sees the phase flip; one sample per copy. ``mode``
  ``l2``: a few tiles read over and over (L2 hits after the first pass, as the K/V tiles of
  attention are); ``hbm``: each copy a tile of a 256 MiB tensor not touched for a while.
* **bandwidth** -- one CTA per SM, every SM pulling: a ring of ``DEPTH`` (1..4) slots, each
  refilled as soon as its barrier flips, i.e. ``DEPTH`` copies in flight per SM. Bytes per clk
  per SM = copies x box bytes / cycles.

Check: what the copies put in shared memory is written back out and compared, bit for bit,
with the tile each slot should hold last.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma

from . import common
from .common import clock64, globaltimer, occupy_smem, record, smid

BC = 64  # columns of a box: 64 fp16 = 128-byte rows (128-byte swizzle)
# Source sizes: "l2" fits in the 50 MiB L2 with room to spare, "hbm" is 5x larger than it.
SOURCE_BYTES = {"l2": 16 << 20, "hbm": 256 << 20}
# The latency kernel is one warp, like the producer warp of the course's ws kernels (with more
# warps, Gluon puts a CTA barrier around each expect, copy and wait).
LATENCY_WARPS = 1


@gluon.jit
def smem_to_global(smem, out_ptr, BR: gl.constexpr, BCOL: gl.constexpr, num_warps: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1, 8], [4, 8], [num_warps, 1], [1, 0])
    v = smem.load(layout)
    r = gl.arange(0, BR, gl.SliceLayout(1, layout))
    c = gl.arange(0, BCOL, gl.SliceLayout(0, layout))
    gl.store(out_ptr + gl.expand_dims(r, 1) * BCOL + gl.expand_dims(c, 0), v)


@gluon.jit
def ends_to_global(smem, out_ptr, BR: gl.constexpr, ROWS: gl.constexpr, BCOL: gl.constexpr,
                   num_warps: gl.constexpr):
    """The first and the last ROWS rows of a BR-row tile to 2·ROWS rows at out_ptr: enough to
    see a wrong tile or a copy that did not land, at a fraction of the tile's bytes."""
    smem_to_global(smem.slice(0, ROWS), out_ptr, ROWS, BCOL, num_warps)
    smem_to_global(smem.slice(BR - ROWS, ROWS), out_ptr + ROWS * BCOL, ROWS, BCOL, num_warps)


@gluon.jit
def copy_tile(desc, bar, dst, tile):
    """expect_tx on `bar`, then one TMA copy of box `tile` (rows tile·BR ...) into `dst`."""
    mbarrier.expect(bar, desc.block_type.nbytes)
    tma.async_copy_global_to_shared(desc, [tile * desc.block_type.shape[0], 0], bar, dst)


@gluon.jit
def tma_latency_kernel(desc, out_ptr, lat_ptr, n_tiles, tile_step, ITERS: gl.constexpr,
                       num_warps: gl.constexpr):
    BR: gl.constexpr = desc.block_type.shape[0]
    BCOL: gl.constexpr = desc.block_type.shape[1]
    smem = gl.allocate_shared_memory(desc.dtype, [BR, BCOL], desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.thread_barrier()
    for i in range(ITERS):
        tile = (i * tile_step) % n_tiles
        t0 = clock64(0)
        copy_tile(desc, bar, smem, tile)
        mbarrier.wait(bar, i & 1)
        t1 = clock64(0)
        gl.store(lat_ptr + i, t1 - t0)
    smem_to_global(smem, out_ptr, BR, BCOL, num_warps)


@gluon.jit
def tma_bandwidth_kernel(desc, out_ptr, stats_ptr, n_tiles, iters, DEPTH: gl.constexpr,
                         num_warps: gl.constexpr):
    BR: gl.constexpr = desc.block_type.shape[0]
    BCOL: gl.constexpr = desc.block_type.shape[1]
    ring = gl.allocate_shared_memory(desc.dtype, [DEPTH, BR, BCOL], desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [DEPTH, 1], mbarrier.MBarrierLayout())
    for s2 in gl.static_range(DEPTH):
        mbarrier.init(bars.index(s2), count=1)
    occupy_smem(num_warps)  # one CTA per SM (after the ring and barriers: it cannot alias them)
    gl.thread_barrier()
    pid = gl.program_id(0)
    grid = gl.num_programs(0)
    t0 = clock64(0)
    g0 = globaltimer(0)
    for s0 in gl.static_range(DEPTH):  # copy c goes to slot c % DEPTH, reads tile (pid + c·grid)
        copy_tile(desc, bars.index(s0), ring.index(s0), (pid + s0 * grid) % n_tiles)
    for i in range(iters):
        slot = i % DEPTH
        mbarrier.wait(bars.index(slot), (i // DEPTH) & 1)
        c = i + DEPTH
        copy_tile(desc, bars.index(slot), ring.index(slot), (pid + c * grid) % n_tiles)
    for i in range(iters, iters + DEPTH):
        mbarrier.wait(bars.index(i % DEPTH), (i // DEPTH) & 1)
    t1 = clock64(0)
    g1 = globaltimer(0)
    record(stats_ptr, t0, t1, g0, g1, smid(0))
    for s1 in gl.static_range(DEPTH):
        smem_to_global(ring.index(s1), out_ptr + (pid * DEPTH + s1) * (BR * BCOL), BR, BCOL,
                       num_warps)


def _desc(t, BR):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for([BR, BC], gl.float16)
    return TensorDescriptor.from_tensor(t, [BR, BC], layout)


def compile_sm90(which: str, BR: int = 128, depth: int = 2, iters: int = 64):
    import torch


    sig_t, _ = common.descriptor_type((4 * BR, BC), (BR, BC), torch.float16)
    if which == "latency":
        return common.compile_sm90(
            tma_latency_kernel, {"desc": sig_t, "out_ptr": "*fp16", "lat_ptr": "*i64",
                                 "n_tiles": "i32", "tile_step": "i32"}, {"ITERS": iters},
            num_warps=LATENCY_WARPS)
    return common.compile_sm90(
        tma_bandwidth_kernel, {"desc": sig_t, "out_ptr": "*fp16", "stats_ptr": "*i64",
                               "n_tiles": "i32", "iters": "i32"}, {"DEPTH": depth}, num_warps=4)


def _source(mode: str, BR: int, gen):
    import torch

    nbytes = SOURCE_BYTES[mode]
    rows = nbytes // (BC * 2)
    src = torch.randn(rows, BC, device=common.DEVICE, generator=gen, dtype=torch.float16)
    return src, rows // BR


def run_latency(BR: int, mode: str, gen, iters: int = 512) -> dict:
    """One CTA: ``iters`` copies of a BR x 64 fp16 box, one at a time."""
    import torch

    src, n_tiles = _source(mode, BR, gen)
    if mode == "l2":
        n_use, step = 4, 1          # 4 tiles, over and over: L2 hits after the first pass
    else:
        n_use, step = n_tiles, 977  # hop through 256 MiB: a fresh tile each time
    out = torch.full((BR, BC), float("nan"), device=common.DEVICE, dtype=torch.float16)
    lat = torch.full((iters,), -1, device=common.DEVICE, dtype=torch.int64)
    if mode == "hbm":
        # push src out of L2
        torch.empty(SOURCE_BYTES["hbm"], dtype=torch.int8, device=common.DEVICE).fill_(1)
    tma_latency_kernel[(1,)](_desc(src, BR), out, lat, n_use, step, ITERS=iters,
                             num_warps=LATENCY_WARPS)
    common.sync()
    last = ((iters - 1) * step) % n_use
    ok = bool(torch.equal(out, src[last * BR:(last + 1) * BR]))
    lat = lat.cpu().double()
    skip = n_use if mode == "l2" else 0
    samples = lat[skip:]
    return {"bench": "tma_latency", "mode": mode, "box": [BR, BC], "box_bytes": BR * BC * 2,
            "iters": iters, "ok": ok and bool((lat > 0).all()),
            "latency_clk_median": float(samples.median()), "latency_clk_min": float(samples.min()),
            "latency_clk_p90": float(samples.quantile(0.9)),
            "first_copy_clk": float(lat[0])}


def run_bandwidth(BR: int, depth: int, mode: str, gen, iters: int = 2000,
                  grid: int | None = None) -> dict:
    """Every SM: ``iters + depth`` copies of a BR x 64 fp16 box, ``depth`` in flight."""
    import torch

    from .common import cta_stats, median

    grid = grid or common.sm_count()
    if (iters + depth) * grid >= 2**31:  # the kernel's tile index pid + c·grid is an int32
        raise ValueError(f"{iters} copies on {grid} SMs overflow the kernel's int32 tile index")
    src, n_tiles = _source(mode, BR, gen)
    out = torch.full((grid, depth, BR, BC), float("nan"), device=common.DEVICE, dtype=torch.float16)
    stats = common.stats_buffer(grid)
    d = _desc(src, BR)
    tma_bandwidth_kernel[(grid,)](d, out, stats, n_tiles, 8, DEPTH=depth, num_warps=4)  # warm-up
    stats = common.stats_buffer(grid)
    tma_bandwidth_kernel[(grid,)](d, out, stats, n_tiles, iters, DEPTH=depth, num_warps=4)
    common.sync()
    # slot s last received copy c in [iters, iters + depth) with c % depth == s
    tiles = src.view(n_tiles, BR, BC)
    ok = True
    for pid in (0, grid // 2, grid - 1):
        for c in range(iters, iters + depth):
            ok &= bool(torch.equal(out[pid, c % depth], tiles[(pid + c * grid) % n_tiles]))
    s = cta_stats(stats)
    cyc = median(s["cycles"])
    nbytes = (iters + depth) * BR * BC * 2
    return {"bench": "tma_bandwidth", "mode": mode, "box": [BR, BC], "box_bytes": BR * BC * 2,
            "depth": depth, "iters": iters, "grid": grid,
            "ok": ok and s["written"] and s["one_cta_per_sm"], "one_cta_per_sm": s["one_cta_per_sm"],
            "cycles_median": cyc, "bytes_per_clk_per_sm": nbytes / cyc,
            "bytes_per_clk_per_sm_slowest": nbytes / float(s["cycles"].max()),
            "tb_per_s_total": nbytes * grid / (float(s["ns"].max()) * 1e-9) / 1e12,
            "clock_hz": float((s["cycles"] / s["ns"]).median()) * 1e9}
