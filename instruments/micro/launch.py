"""What a CTA pays to start on an SM: the turnover gap between one CTA's exit and the next CTA's
start on the same SM, and the first copy of a cold tile.

The course's non-persistent kernels launch one CTA per output tile, many more than there are
SMs, so every SM runs CTA after CTA: between two of them the SM retires the old one, the block
scheduler hands it the next, and the new one starts with nothing in shared memory — its first
TMA copy is a cold read. The persistent kernels pay this once per SM; the others once per tile.

The kernel does nothing else. ``WAVES x SM count`` CTAs, each holding ``occupy_smem`` (one CTA
per SM, so the CTAs of one SM run strictly one after another) and one smem tile. An SM takes
the next CTA as soon as its last one left, so one whose CTAs ran short takes more than
``WAVES``: the count per SM is reported, not required (7-9 for 8 waves on the H200). Each
CTA's first warp records ``[clock64 at entry, globaltimer at entry, clock64 after the load,
globaltimer after it, clock64 at exit, globaltimer at exit, smid, program id]`` (int64 x 8; with
``LOAD`` off the "after the load" pair is the entry pair). With ``LOAD`` the CTA copies one box
(default 256 x 64 fp16 = 32 KiB, a Q tile of the d128 attention kernel) of its own from a
256 MiB source that a 256 MiB write has just pushed out of the L2 (50-60 MiB): every copy is a
cold HBM read.

On the host, per SM (CTAs grouped by ``smid``, ordered by entry clock):

* **turnover gap** -- next CTA's entry − previous CTA's exit. ``%clock64`` is the SM's own cycle
  counter and is not reset between CTAs, so on one SM the difference of two CTAs' readings is a
  valid span in cycles: ``gap_clk_*`` is the figure the model takes. The same in ``%globaltimer``
  ns is a cross-check only: its update step is coarse (~32 ns to 1 us by GPU and driver; 32 ns
  on the H200), about the size of the gap itself. The gap includes the previous CTA's last few
  stores (its stats) and, with 4 warps, the other warps' exit after the first warp's last clock
  read.
* **cold first copy** -- clock64 after the load landed − clock64 at entry: mbarrier init, expect,
  copy, wait — what a fresh CTA waits before its first tile is there. The first wave (all SMs
  start at once: every SM's copy in one burst) and the later waves (staggered) apart.
* **clock** -- the SM's clk/ns over its whole run, first entry to last exit (the CTAs' spans and
  the gaps between them), to put the ns figures in clk.

Check: each CTA writes the first and last 8 rows of what landed in shared memory back out;
they must equal its source tile bit for bit. Every CTA must have written its stats (no -1 left)
under its own program id, and no two CTAs may overlap on an SM (every gap > 0 clk: else the
gap is not a turnover and the hog did not hold).
"""
from __future__ import annotations

import itertools

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier

from . import common
from .common import clock64, globaltimer, occupy_smem, smid
from .tma import copy_tile, ends_to_global

SEED = 17
WAVES = 8
BOX = [256, 64]        # 256 rows x 64 fp16 (128-byte rows): 32 KiB, a d128 attention Q tile
SOURCE_BYTES = 256 << 20  # > the L2; a tile for each of up to 62 waves x 132 CTAs (32 KiB boxes)
FLUSH_BYTES = 256 << 20   # written between the warm-up and the timed launch to empty the L2
CHECK = 8                 # rows written back from each end of the tile
CHECK_ROWS = gl.constexpr(CHECK)
STATS = gl.constexpr(8)   # int64 per CTA


@gluon.jit
def cta_launch_kernel(desc, out_ptr, stats_ptr, LOAD: gl.constexpr, num_warps: gl.constexpr):
    # First thing: the entry clocks (shared memory is allocated at launch, not by instructions).
    t0 = clock64(0)
    g0 = globaltimer(0)
    BR: gl.constexpr = desc.block_type.shape[0]
    BCOL: gl.constexpr = desc.block_type.shape[1]
    smem = gl.allocate_shared_memory(desc.dtype, [BR, BCOL], desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    occupy_smem(num_warps)  # one CTA per SM (after the tile and barrier: it cannot alias them)
    pid = gl.program_id(0)
    t1 = t0
    g1 = g0
    if LOAD:
        mbarrier.init(bar, count=1)
        gl.thread_barrier()
        copy_tile(desc, bar, smem, pid)  # a tile of its own
        mbarrier.wait(bar, 0)
        t1 = clock64(0)
        g1 = globaltimer(0)
        # the check: both ends of the tile (a wrong tile or a copy not landed shows in either)
        ends_to_global(smem, out_ptr + pid * (2 * CHECK_ROWS * BCOL), BR, CHECK_ROWS, BCOL,
                       num_warps)
    t2 = clock64(0)
    g2 = globaltimer(0)
    # the stats stores come after the exit clocks: they fall in the gap to the next CTA
    base = stats_ptr + pid * STATS
    gl.store(base + 0, t0)
    gl.store(base + 1, g0)
    gl.store(base + 2, t1)
    gl.store(base + 3, g1)
    gl.store(base + 4, t2)
    gl.store(base + 5, g2)
    gl.store(base + 6, smid(0).to(gl.int64))
    gl.store(base + 7, pid.to(gl.int64))


def _desc(t, box):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    layout = gl.NVMMASharedLayout.get_default_for(list(box), gl.float16)
    return TensorDescriptor.from_tensor(t, list(box), layout)


def compile_sm90(load: bool, box=BOX, num_warps: int = 1):
    import torch

    sig_t, _ = common.descriptor_type((4 * box[0], box[1]), box, torch.float16)
    return common.compile_sm90(cta_launch_kernel, {"desc": sig_t, "out_ptr": "*fp16",
                                                   "stats_ptr": "*i64"}, {"LOAD": load},
                               num_warps=num_warps)


def quantile(xs, q: float):
    import torch

    return float(torch.tensor(xs, dtype=torch.float64).quantile(q)) if xs else None


def per_sm(s) -> dict:
    """From the stats (grid x 8, int64, on the host): the gaps between consecutive CTAs of each SM
    (clk and ns), each SM's clock, its CTA count, and which CTA came first on it."""
    by_sm: dict[int, list] = {}
    for row in s.tolist():
        by_sm.setdefault(row[6], []).append(row)
    gap_clk, gap_ns, hz, first = [], [], [], set()
    for ctas in by_sm.values():
        ctas.sort(key=lambda r: r[0])  # entry clock64: one SM's counter, finer than globaltimer
        first.add(ctas[0][7])
        for prev, nxt in itertools.pairwise(ctas):
            gap_clk.append(nxt[0] - prev[4])
            gap_ns.append(nxt[1] - prev[5])
        span_ns = ctas[-1][5] - ctas[0][1]
        if span_ns > 0:  # CTAs and gaps, first entry to last exit
            hz.append((ctas[-1][4] - ctas[0][0]) / span_ns * 1e9)
    counts = [len(c) for c in by_sm.values()]
    return {"gap_clk": gap_clk, "gap_ns": gap_ns, "hz": hz, "first": first, "counts": counts}


def run(load: bool, waves: int, gen, num_warps: int = 1, box=BOX) -> dict:
    """``waves x SM count`` CTAs, one per SM at a time; launched once to compile, then timed."""
    import torch

    assert waves >= 2, "a gap needs two CTAs on one SM"
    box = list(box)
    sms = common.sm_count()
    grid = waves * sms
    rows = SOURCE_BYTES // (box[1] * 2)
    assert grid * box[0] <= rows, "every CTA a tile of its own"
    src = torch.randn(rows, box[1], device=common.DEVICE, generator=gen, dtype=torch.float16)
    d = _desc(src, box)
    out = torch.full((grid, 2 * CHECK, box[1]), float("nan"), device=common.DEVICE,
                     dtype=torch.float16)
    stats = torch.full((grid, STATS.value), -1, dtype=torch.int64, device=common.DEVICE)
    cta_launch_kernel[(grid,)](d, out, stats, LOAD=load, num_warps=num_warps)  # compile, warm
    # push the source out of L2: the timed launch's copies are cold HBM reads
    torch.empty(FLUSH_BYTES, dtype=torch.int8, device=common.DEVICE).fill_(1)
    out.fill_(float("nan"))
    stats.fill_(-1)
    cta_launch_kernel[(grid,)](d, out, stats, LOAD=load, num_warps=num_warps)
    common.sync()
    s = stats.cpu()
    written = bool((s >= 0).all()) and bool((s[:, 7] == torch.arange(grid)).all())
    bitwise = None
    if load:
        tiles = src.view(-1, box[0], box[1])[:grid]
        want = torch.cat([tiles[:, :CHECK], tiles[:, -CHECK:]], dim=1)
        bitwise = bool(torch.equal(out, want))
    p = per_sm(s)
    one_at_a_time = bool(p["gap_clk"]) and min(p["gap_clk"]) > 0
    cta_clk = (s[:, 4] - s[:, 0]).double()
    load_clk = (s[:, 2] - s[:, 0]).tolist()
    first_clk = [c for pid, c in enumerate(load_clk) if pid in p["first"]]
    later_clk = [c for pid, c in enumerate(load_clk) if pid not in p["first"]]
    row = {"bench": "cta_launch", "load": load, "box": box, "box_bytes": box[0] * box[1] * 2,
           "waves": waves, "grid": grid, "num_warps": num_warps,
           "ok": written and one_at_a_time and bitwise is not False, "written": written,
           "bitwise": bitwise,
           "sms": len(p["counts"]), "ctas_per_sm_min": min(p["counts"]),
           "ctas_per_sm_max": max(p["counts"]),
           "one_cta_per_sm": one_at_a_time, "gap_clk_min": min(p["gap_clk"], default=None),
           "gap_clk_median": quantile(p["gap_clk"], 0.5),
           "gap_clk_p10": quantile(p["gap_clk"], 0.1), "gap_clk_p90": quantile(p["gap_clk"], 0.9),
           "gap_ns_median": quantile(p["gap_ns"], 0.5), "gap_ns_p10": quantile(p["gap_ns"], 0.1),
           "gap_ns_p90": quantile(p["gap_ns"], 0.9), "clock_hz": quantile(p["hz"], 0.5),
           "cta_clk_median": float(cta_clk.median()),
           "first_wave_load_clk_median": quantile(first_clk, 0.5) if load else None,
           "later_load_clk_median": quantile(later_clk, 0.5) if load else None}
    hz = row["clock_hz"]
    row["gap_ns_median_in_clk"] = row["gap_ns_median"] * hz * 1e-9 if hz and p["gap_ns"] else None
    return row


def rows(gen) -> list[dict]:
    return [run(False, WAVES, gen, num_warps=1), run(False, WAVES, gen, num_warps=4),
            run(True, WAVES, gen, num_warps=1)]


def line(r: dict) -> str:
    text = (f"launch{' + cold ' + 'x'.join(map(str, r['box'])) + ' copy' if r['load'] else ''}, "
            f"{r['num_warps']} warp(s), {r['waves']} waves x {r['sms']} SMs: ok={r['ok']} "
            f"CTAs/SM {r['ctas_per_sm_min']}-{r['ctas_per_sm_max']}  "
            f"gap {r['gap_clk_median']:.0f} clk (p10 {r['gap_clk_p10']:.0f}, "
            f"p90 {r['gap_clk_p90']:.0f}; {r['gap_ns_median']:.0f} ns)  "
            f"CTA {r['cta_clk_median']:.0f} clk  {r['clock_hz'] / 1e9:.2f} GHz")
    if r["load"]:
        text += (f"  first copy {r['first_wave_load_clk_median']:.0f} clk (first wave), "
                 f"{r['later_load_clk_median']:.0f} (later)")
    return text


if __name__ == "__main__":
    raise SystemExit(common.cli(__doc__, "h200-launch.json", SEED, rows, line))
