"""The machine the model runs on: one Hopper SM and how many of them there are.

Every constant carries its source. Two kinds:

* **datasheet** constants — rates, sizes, clocks from NVIDIA's documents or the FA3 paper;
* **calibrated** constants — what no datasheet gives. Three are fitted jointly to FA3 tab. 2 by
  ``sim/calibrate.py`` (``wgmma_overhead_clk``, ``softmax_fma_per_elem``,
  ``softmax_stall_per_elem``); the others come from one published or measured number each, named
  beside it. Issue 5 re-measures all of them on the H200.

Times inside the model are in SM clock cycles; ``clock_hz`` turns them into seconds.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

KIB = 1024


@dataclass(frozen=True)
class Hardware:
    name: str
    # --- datasheet -----------------------------------------------------------------------------
    sms: int = 132                        # H100/H200 SXM: 132 SMs enabled (H100 whitepaper)
    clock_hz: float = 1.83e9              # FA3 app. C.1 runs the H100 at 1830 MHz; 989 TF = 132·4096·1.83G
    tensor_flop_per_clk: int = 4096       # dense fp16/bf16 per SM (whitepaper; FA4 §2.2)
    fp8_speedup: int = 2                  # dense fp8 = 1979 TF = 2× fp16 (whitepaper)
    sfu_exp_per_clk: int = 16             # MUFU exp2 per SM per clk (FA3 §3.1 fn. 5; FA4 §2.2)
    fma_lanes_per_clk: int = 128          # FP32 FMA per SM per clk: 67 TF = 132·128·2·1.98G (whitepaper)
    smem_bytes_per_clk: int = 128         # shared-memory bandwidth per SM (whitepaper)
    smem_per_block: int = 227 * KIB       # FA3 tab. 1; whitepaper (228 KiB per SM, 227 per block)
    regs_per_sm: int = 64 * KIB           # 64K 32-bit registers per SM (whitepaper)
    max_regs_per_thread: int = 255        # whitepaper
    setmaxnreg_max: int = 240             # largest setmaxnreg a consumer may take with 1 producer WG
                                          # at 24-40 regs: 128·(24 + 2·240) ≤ 64K (FA3 §3.1, CUTLASS)
    hbm_bytes_per_s: float = 3.35e12      # H100 SXM5 80 GB datasheet
    # --- calibrated ----------------------------------------------------------------------------
    # The three that sim/calibrate.py fits, jointly, to FA3 tab. 2 (fa3 661, ws_pingpong 582,
    # overlap 570 TFLOPs/s); the same values serve every variant.
    #
    # Tensor-pipe cycles a wgmma m64nNk16 spends beyond its N/2 clk of math (operand fetch,
    # accumulator hand-off). It sets the tensor ceiling: N = 256 runs at 128/(128+39.5) = 76% of
    # peak — near what cuBLAS reaches at 8192³ (fast.cu: 798 of 989 TF, 81%). Measured on our
    # H200 (kernels/micro, 2026-12-02): queued wgmmas cost 0.0 clk beyond their math, and the
    # Proton trace of our ws GEMM runs a k-step in 1026 clk for 1024 of math — so this constant
    # stands for losses elsewhere in real kernels, not in the tensor pipe (sim/README.md,
    # "Against the machine"). It stays fitted until the model places those losses.
    wgmma_overhead_clk: float = 39.5
    # FMA-pipe instructions per score element around each exp: FMNMX (row max), FFMA (scale and
    # subtract), FADD (row sum), F2FP (pack two to fp16: ½) — ~3.5 counted, 4 fitted.
    softmax_fma_per_elem: float = 4.0
    # Cycles per score element that a warpgroup's softmax spends stalled on its own dependency
    # chains (max → exp → sum, one warp per SMSP) without occupying a unit — the "less tidy"
    # part of the real schedule (FA3 §3.1). It is what makes the softmax of one warpgroup about as
    # long as the other's GEMMs, as FA3's ablation implies. Microbenchmark: softmax of one tile
    # by one warpgroup, with and without a second warpgroup's wgmmas.
    softmax_stall_per_elem: float = 0.055
    #
    # Not fitted — each from a measurement of its own:
    # From the last wgmma's end to its accumulators being readable after warpgroup_mma_wait: one
    # smem round trip plus an L1 hit (arXiv 2402.13499 tab. IV; its m64n256k16 shows 128 clk of
    # latency for 128 clk of math, so the drain is short).
    wgmma_latency_clk: float = 29.0 + 41.0
    # The cross-thread row-max reduction (2 shuffle rounds, then the dependent FMNMX tail):
    # 4 dependent smem-latency-class steps (arXiv 2402.13499 tab. IV).
    row_reduce_clk: float = 4 * 29.0
    # Issue to arrival of a TMA copy from L2 (K/V tiles are reused by every q-block of a head, so
    # they hit L2): the L2 latency (263 clk, arXiv 2402.13499 tab. IV) plus the copy engine's
    # descriptor walk, which no datasheet gives: we take a second L2 round trip.
    tma_latency_clk: float = 2 * 263.0
    # Bytes per clk per SM the copy engine pulls from L2 while every SM pulls. Bounded below by
    # cuBLAS at 8192³ (fast.cu: 798 TF/s of 128×256 tiles = 38 B/clk/SM) and by CUTLASS pingpong's
    # 64×256 tiles (~57 B/clk/SM at 700 TF/s); we take 64 (15.5 TB/s over 132 SMs at 1830 MHz).
    l2_bytes_per_clk_per_sm: float = 64.0
    # mbarrier arrive → the waiting warp sees the phase flip (one smem round trip + wake-up).
    mbarrier_clk: float = 2 * 29.0        # arXiv 2402.13499 tab. IV smem latency, twice
    # FA2's mma.sync path: arXiv 2402.13499 measures mma.sync m16n8k16 at ~63% of the wgmma peak
    # in isolation; inside FA2 (ldmatrix, softmax and mma.sync on the same warps, 255 registers)
    # it sustains less. Set so that the `fa2` schedule gives the FA2 rate we measured on our H200
    # (SDPA-flash, d 128, S 8K: 343 TF/s = 35% of 989; shared/reference/hardware.md), which is
    # also what FA3 §1 reports for FA2 on the H100 (~35%).
    mma_sync_fraction: float = 0.42
    # FA2 keeps 2 CTAs of 4 warps per SM (its d128 forward: 128×64 tiles, 64 KiB smem, 255 regs).
    fa2_ctas_per_sm: int = 2

    # --- derived -------------------------------------------------------------------------------
    @property
    def peak_tflops(self) -> float:
        """Dense fp16/bf16 tensor peak of the whole GPU in TFLOP/s."""
        return self.sms * self.tensor_flop_per_clk * self.clock_hz / 1e12

    def with_(self, **changes) -> Hardware:
        """A copy with some constants changed (for what-ifs and calibration)."""
        return replace(self, **changes)


H100 = Hardware(name="h100")

# H200 SXM: the same GH100 die and compute (H200.md; NVIDIA H200 datasheet), more and faster HBM3e.
# `h200-datasheet` is that, at the H100's 1830 MHz (our H200 reports 1980 MHz max, and read 1305-1575
# MHz right after long tensor-core runs: "clocks_after" in kernels/results/h200*.json). `h200` is the
# same machine with whatever the microbenchmarks measured on our H200 (`python -m kernels.bench
# micro` → kernels/results/h200-micro.json, "constants"), the datasheet where nothing was measured.
H200_DATASHEET = Hardware(name="h200-datasheet", hbm_bytes_per_s=4.8e12)   # 4.8 TB/s, datasheet
MICRO = Path(__file__).resolve().parents[1] / "kernels" / "results" / "h200-micro.json"
# What a microbenchmark may set, and the field it sets.
MEASURED_FIELDS = {
    "clock_hz_under_load": "clock_hz", "tensor_flop_per_clk": "tensor_flop_per_clk",
    "wgmma_latency_clk": "wgmma_latency_clk", "sfu_exp_per_clk": "sfu_exp_per_clk",
    "fma_lanes_per_clk": "fma_lanes_per_clk", "tma_latency_clk": "tma_latency_clk",
    "l2_bytes_per_clk_per_sm": "l2_bytes_per_clk_per_sm", "mbarrier_clk": "mbarrier_clk",
}
# Measured, and deliberately not taken, each with the evidence against using it as the model's
# constant. The TMA bandwidth microbenchmark (every SM streaming its own 16 KiB boxes from a 16 MiB
# buffer) saturates at 36 B/clk/SM = 8.9 TB/s on our H200 (2026-12-02), yet our own 128x128
# ws_pingpong GEMM moves 64 FLOP per operand byte at 650-700 TFLOP/s, i.e. 10.2-10.9 TB/s through
# the same path (kernels/results/h200.json): the microbenchmark's access pattern reaches less than
# the GEMM's tile order does, so its figure is a floor, not the rate the model needs.
NOT_TAKEN = {
    "l2_bytes_per_clk_per_sm": "the bandwidth microbenchmark reaches 8.9 TB/s; our own 128x128 "
                               "GEMM tiles pull 10.2-10.9 TB/s, so it is a floor, not the rate",
}


def with_measurements(base: Hardware, path: Path, name: str) -> Hardware:
    """`base` with the constants a microbenchmark run measured (the file's "micro"/"constants");
    `base` unchanged, renamed, if the file does not exist."""
    if not path.exists():
        return replace(base, name=name)
    constants = json.loads(path.read_text())["micro"]["constants"]
    unknown = set(constants) - set(MEASURED_FIELDS)
    if unknown:
        raise ValueError(f"{path.name}: unknown measured constants {sorted(unknown)}; "
                         f"expected some of {sorted(MEASURED_FIELDS)}")
    taken = {MEASURED_FIELDS[k]: float(v) for k, v in constants.items() if k not in NOT_TAKEN}
    return replace(base, name=name, **taken)


H200 = with_measurements(H200_DATASHEET, MICRO, "h200")

# Blackwell what-if for chapter 06 (a model, not a measurement: no Blackwell here). FA4 §2.2:
# 8192 dense fp16 FLOP/clk/SM, MUFU still 16 exp/clk/SM; 148 SMs, and 2.25 PF dense bf16
# (B200 datasheet) = 148 · 8192 · 1.856 GHz; 8 TB/s HBM3e. Assumption, not data: an MMA's fixed
# cycles shrink with its math cycles (half of Hopper's wgmma overhead).
B200 = Hardware(name="b200", sms=148, tensor_flop_per_clk=8192, clock_hz=1.856e9,
                hbm_bytes_per_s=8.0e12, wgmma_overhead_clk=H100.wgmma_overhead_clk / 2)

PRESETS: dict[str, Hardware] = {h.name: h for h in (H100, H200, H200_DATASHEET, B200)}


def get(name: str) -> Hardware:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown hardware {name!r}: expected one of {sorted(PRESETS)}") from None
