"""The SM clock under sustained load: what the 700 W power limit leaves of the 1980 MHz ceiling
while every SM keeps one unit busy for ~2 s.

The power cap's plane (`sim.machine.PowerCap`, fitted in `fidelity.calibrate`) says a clock's
length grows linearly with what an SM keeps busy: tensor cores, L2 -> shared-memory traffic,
exps. Each stream here loads one of them alone, on every SM, long enough for the limit to act
(the rate benchmarks run 1-20 ms and read ~1.98 GHz; the 2.5 s wgmma stream read 1.55 GHz,
`results/h200-micro.json`):

* ``clock``     -- back-to-back m64n256k16 from two warpgroups (``wgmma.py``'s kernel): u = 1.
  The same row ``instruments.bench micro`` writes to ``h200-micro.json`` (the model's
  ``clock_hz_under_load``); here a same-session reference for the two below.
* ``clock_l2``  -- ``tma.py``'s bandwidth kernel: 16 KiB boxes from a 16 MiB L2-resident source
  into a 2-slot ring, refilled as each lands (its best ``l2`` depth: 36 B/clk/SM), no tensor
  work: the plane's L2 term alone.
* ``clock_hbm`` -- the same kernel from a 256 MiB source (five times the L2): every box from
  DRAM. The traffic the L2 stream leaves out (the grid's K/V reads at long S, the GEMMs'
  operands): the plane has no DRAM term, and this says whether it needs one.
* ``clock_exp`` -- ``units.py``'s exp2 kernel: 8 warps x 8 chains ``x <- ex2(a - x)`` (one MUFU.EX2
  and one FADD per exp), no tensor work, no copies: the plane's exp term alone.

Each runs the bench's own kernel, check included (float64 / bit-equal tiles), with its loop
count sized for ``SECONDS`` at the ceiling clock and the rate it measured in the short run
(`results/h200-micro.json`); a lower clock makes the run longer, never shorter. The clock is
``%clock64`` over ``%globaltimer`` per CTA, median over CTAs (as ``bench micro``'s clock row);
nvidia-smi's clock, power draw, temperature and clock-event reasons are sampled beside it (the
power samples say whether the draw reached the limit: a stream that holds the ceiling below it
gives only a bound on the plane).

Rows carry what `fidelity.calibrate.stream_points` reads: ``tensor_util``,
``l2_bytes_per_clk_per_sm``, ``exps_per_clk_per_sm`` (measured over the whole run) and
``clock_hz_globaltimer``, ``seconds``. ``python -m instruments.micro.clock --out DIR`` writes them
to ``DIR/h200-clock.json``: a file of its own, since these rows set no constant of the model
(``h200-micro.json``'s ``constants``, which ``fidelity/preset.py`` holds the preset to) and are
measured without rerunning the whole microbenchmark suite.
"""
from __future__ import annotations

import contextlib
import statistics
import subprocess

from . import common, tma, units, wgmma

SEED = 24
SECONDS = 2.0
CEILING_HZ = 1.98e9          # nvidia-smi's max SM clock on our H200 (h200-micro.json environment)
# The short runs' rates (results/h200-micro.json, 2026-12-02): the L2 ring at depth 2 with
# 128 x 64 fp16 boxes, and the exp2 chains' 15.96 /clk (16: FA3 §3.1 fn. 5).
L2_BYTES_PER_CLK = 36.0
L2_BOX_ROWS, L2_DEPTH = 128, 2
EXP_PER_CLK = 16.0
# HBM3e's 4.8 TB/s (H200 datasheet) over 132 SMs at the ceiling: ~18 B/clk/SM; the loop is sized
# for it, so on a slower board (H100 SXM's 3.35 TB/s) the stream runs longer, never shorter.
HBM_BYTES_PER_CLK = 18.0
EXP_VEC, EXP_WARPS, EXP_UNROLL = 8, 8, 16      # units.run's defaults
WGMMA_N, WGMMA_WGS, WGMMA_UNROLL = 256, 2, 8


def iters_for(seconds: float, clk_per_iter: float, clock_hz: float = CEILING_HZ) -> int:
    """Loop trips that last ``seconds`` at ``clock_hz`` (at least 16)."""
    return max(16, int(seconds * clock_hz / clk_per_iter))


def l2_iters(seconds: float, bytes_per_clk: float = L2_BYTES_PER_CLK) -> int:
    """Copies per SM (after the ring's first ``L2_DEPTH``) for ``seconds`` of the L2 stream."""
    return iters_for(seconds, L2_BOX_ROWS * tma.BC * 2 / bytes_per_clk)


def exp_iters(seconds: float, per_clk: float = EXP_PER_CLK) -> int:
    """Loop trips (each UNROLL x VEC exps per thread) for ``seconds`` of the exp2 stream."""
    return iters_for(seconds, EXP_UNROLL * EXP_VEC * 32 * EXP_WARPS / per_clk)


# --- nvidia-smi beside the run ----------------------------------------------------------------

SMI_QUERY = "clocks.sm,power.draw,temperature.gpu,clocks_event_reasons.active"


def parse_smi(text: str) -> list[tuple[float, float, float, str]]:
    """nvidia-smi's ``--format=csv,noheader,nounits`` lines of SMI_QUERY -> (clock Hz, power W,
    temperature C, reasons); lines it could not read ([N/A], a cut-off last line) are skipped."""
    out = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        try:
            out.append((float(parts[0]) * 1e6, float(parts[1]), float(parts[2]), parts[3]))
        except (ValueError, IndexError):
            continue
    return out


@contextlib.contextmanager
def smi_log():
    """nvidia-smi, sampled back to back (~30 ms a call on our H200) by a shell loop while the
    block runs — a process of its own, so that the host blocking in a CUDA sync stops nothing,
    and one nvidia-smi per sample, each flushed when it exits (killing a looping ``-lms`` one
    could lose its buffered lines). Yields the list that holds the samples (``parse_smi``)
    once the block is done; empty off the GPU or without nvidia-smi."""
    samples: list[tuple[float, float, float, str]] = []
    proc = None
    if common.DEVICE == "cuda":
        loop = (f"while :; do nvidia-smi --query-gpu={SMI_QUERY} --format=csv,noheader,nounits"
                " || sleep 1; done")
        with contextlib.suppress(OSError):
            proc = subprocess.Popen(["sh", "-c", loop], stdout=subprocess.PIPE,
                                    stderr=subprocess.DEVNULL, text=True)
    try:
        yield samples
    finally:
        if proc is not None:
            proc.terminate()
            with contextlib.suppress(subprocess.SubprocessError):
                samples.extend(parse_smi(proc.communicate(timeout=10)[0]))


def smi_fields(samples: list[tuple[float, float, float, str]]) -> dict:
    """What a row keeps of the samples: the clocks, the median and peak power, the hottest
    temperature (leakage power grows with it), the clock-event reasons seen."""
    clocks, power, temp, reasons = zip(*samples) if samples else ((), (), (), ())
    return {"clock_hz_smi_samples": list(clocks),
            "clock_hz_smi_median": statistics.median(clocks) if clocks else None,
            "power_w_smi_median": statistics.median(power) if power else None,
            "power_w_smi_max": max(power, default=None),
            "temperature_c_smi_max": max(temp, default=None),
            "clock_event_reasons": sorted(set(reasons))}


# --- the three streams ------------------------------------------------------------------------

def clock_under_load(gen, wgmma_row: dict | None, seconds: float = SECONDS) -> dict:
    """The SM clock while every SM runs back-to-back m64n256k16 (fp16, 2 warpgroups) for about
    ``seconds``: clock64 over globaltimer per CTA (median), the CTA's cycles over the launch's
    CUDA-event time, and nvidia-smi sampled while the kernel runs. The loop is sized from
    ``wgmma_row``'s clk per instruction, else N/2 (a queued wgmma costs 0.0 clk beyond its math
    on the H200: h200-micro.json)."""
    import torch

    from .common import cta_stats, median

    N, wgs, unroll = WGMMA_N, WGMMA_WGS, WGMMA_UNROLL
    per_instr = (wgmma_row or {}).get("clk_per_instr") or N / 2
    iters = iters_for(seconds, per_instr * wgs * unroll)
    grid = common.sm_count()
    a = torch.randn(64 * wgs, 16, device=common.DEVICE, generator=gen).half()
    b = torch.randn(16, N, device=common.DEVICE, generator=gen).half()
    out = torch.empty(64 * wgs, N, device=common.DEVICE)
    kw = {"N": N, "UNROLL": unroll, "WAIT": 1, "num_warps": 4 * wgs}
    stats = common.stats_buffer(grid)
    # compile + warm-up with the timed count's specialization (Triton specializes an int on
    # % 16 == 0), or the timed launch compiles inside the CUDA-event window
    warm = 16 if iters % 16 == 0 else 17
    wgmma.wgmma_rate_kernel[(grid,)](a, b, out, stats, warm, **kw)
    common.sync()
    stats = common.stats_buffer(grid)
    e0, e1 = common.event(), common.event()
    with smi_log() as smi:
        e0.record()
        wgmma.wgmma_rate_kernel[(grid,)](a, b, out, stats, iters, **kw)
        e1.record()
        common.sync()
    s = cta_stats(stats)
    ms = e0.elapsed_time(e1)
    hz = s["cycles"] / s["ns"] * 1e9
    return {"bench": "clock", "load": f"wgmma m64n{N}k16 fp16 {wgs}wg on every SM",
            "iters": iters, "seconds": ms / 1e3, "ok": s["written"] and s["one_cta_per_sm"],
            "clock_hz_globaltimer": median(hz), "clock_hz_globaltimer_min": float(hz.min()),
            "clock_hz_events": median(s["cycles"]) / (ms * 1e-3), **smi_fields(smi)}


def stream_row(bench: str, load: str, rate_row: dict, smi, l2: float = 0.0,
               exps: float = 0.0) -> dict:
    """A stream's row from its rate benchmark's row (kept whole under ``rate_row``): the
    activity calibrate's plane takes, and the clock."""
    timed = "clock_hz" in rate_row  # a row whose check failed has no timed run
    return {"bench": bench, "load": load, "ok": rate_row["ok"],
            "seconds": rate_row["cycles_median"] / rate_row["clock_hz"] if timed else None,
            "tensor_util": 0.0, "l2_bytes_per_clk_per_sm": l2, "exps_per_clk_per_sm": exps,
            "clock_hz_globaltimer": rate_row.get("clock_hz"), **smi_fields(smi),
            "rate_row": rate_row}


def clock_l2(gen, seconds: float = SECONDS, bytes_per_clk: float = L2_BYTES_PER_CLK) -> dict:
    """The clock under ~``seconds`` of TMA copies from L2 on every SM, no tensor work."""
    with smi_log() as smi:
        r = tma.run_bandwidth(L2_BOX_ROWS, L2_DEPTH, "l2", gen, l2_iters(seconds, bytes_per_clk))
    return stream_row("clock_l2", f"TMA {L2_BOX_ROWS}x{tma.BC} fp16 from L2, depth {L2_DEPTH}, "
                      "every SM", r, smi, l2=r.get("bytes_per_clk_per_sm", 0.0))


def clock_hbm(gen, seconds: float = SECONDS, bytes_per_clk: float = HBM_BYTES_PER_CLK) -> dict:
    """The clock under ~``seconds`` of TMA copies from HBM on every SM, no tensor work."""
    with smi_log() as smi:
        r = tma.run_bandwidth(L2_BOX_ROWS, L2_DEPTH, "hbm", gen, l2_iters(seconds, bytes_per_clk))
    return stream_row("clock_hbm", f"TMA {L2_BOX_ROWS}x{tma.BC} fp16 from HBM "
                      f"({tma.SOURCE_BYTES['hbm'] >> 20} MiB), depth {L2_DEPTH}, every SM", r, smi,
                      l2=r.get("bytes_per_clk_per_sm", 0.0))


def clock_exp(gen, seconds: float = SECONDS, per_clk: float = EXP_PER_CLK) -> dict:
    """The clock under ~``seconds`` of MUFU exp2 chains on every SM, no tensor work."""
    with smi_log() as smi:
        r = units.run("exp2", exp_iters(seconds, per_clk), gen, vec=EXP_VEC,
                      num_warps=EXP_WARPS, unroll=EXP_UNROLL)
    row = stream_row("clock_exp", f"ex2.approx + FADD, {EXP_WARPS} warps x {EXP_VEC} chains, "
                     "every SM", r, smi, exps=r.get("per_clk_per_sm", 0.0))
    row["fma_pipe_per_exp"] = 1  # the chain's FADD: the softmax has ~2 (softmax_fma_per_elem)
    return row


def compile_sm90(bench: str):
    """The kernel ``bench`` times, with the parameters it runs it with, compiled for sm_90a on
    the CPU (tests/instruments/test_micro_compile.py checks its PTX)."""
    return {
        "clock": lambda: wgmma.compile_sm90(WGMMA_N, WGMMA_WGS, 1, "fp16", WGMMA_UNROLL),
        "clock_l2": lambda: tma.compile_sm90("bandwidth", BR=L2_BOX_ROWS, depth=L2_DEPTH),
        "clock_hbm": lambda: tma.compile_sm90("bandwidth", BR=L2_BOX_ROWS, depth=L2_DEPTH),
        "clock_exp": lambda: units.compile_sm90("exp2", vec=EXP_VEC, num_warps=EXP_WARPS,
                                                unroll=EXP_UNROLL),
    }[bench]()


def rows(gen, seconds: float = SECONDS) -> list[dict]:
    """The wgmma stream first (the reference the model's clock_hz_under_load came from), then
    the L2, exp and HBM streams (HBM last: the three before it are the plane's terms)."""
    return [clock_under_load(gen, None, seconds), clock_l2(gen, seconds), clock_exp(gen, seconds),
            clock_hbm(gen, seconds)]


def line(r: dict) -> str:
    if r.get("clock_hz_globaltimer") is None:
        return f"{r['bench']:10s} ok={r['ok']} (no timed run: {r.get('rate_row', r)})"[:300]
    smi = r.get("clock_hz_smi_median")
    power = r.get("power_w_smi_median")
    return (f"{r['bench']:10s} ok={r['ok']} {r['clock_hz_globaltimer'] / 1e6:6.0f} MHz over "
            f"{r['seconds']:.2f} s  L2 {r.get('l2_bytes_per_clk_per_sm', 0.0):5.1f} B/clk  "
            f"exp {r.get('exps_per_clk_per_sm', 0.0):5.2f} /clk  smi "
            + (f"{smi / 1e6:.0f} MHz" if smi else "-") + (f" {power:.0f} W" if power else "")
            + f"  {r.get('load', '')}")


if __name__ == "__main__":
    raise SystemExit(common.cli(__doc__, "h200-clock.json", SEED, rows, line))
