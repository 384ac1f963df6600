"""The machine the model runs on: one Hopper SM and how many of them there are.

Every constant carries its source. Two kinds:

* **datasheet** constants — rates, sizes, clocks from NVIDIA's documents or the FA3 paper;
* **calibrated** constants — what no datasheet gives (how long a wgmma's operand fetch occupies the
  tensor pipe, how many FMA-pipe instructions softmax spends around each exp, a TMA's latency). They
  are few, named ``*_clk`` / ``*_per_elem``, and each says which measurement set it. ``sim/calibrate.py``
  fits the two that the paper's tab. 2 pins down; issue 5 re-measures all of them on the H200.

Times inside the model are in SM clock cycles; ``clock_hz`` turns them into seconds.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

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
    # Tensor-pipe cycles a wgmma spends beyond its N/2 clk of math (operand fetch from shared
    # memory, accumulator hand-off). Fit to FA3 tab. 2 by sim/calibrate.py; re-measure with a
    # back-to-back m64nNk16 microbenchmark (issue 5).
    wgmma_overhead_clk: float = 39.0
    # From the last wgmma's end to its accumulators being readable after warpgroup_mma_wait.
    # arXiv 2402.13499 measures m64n256k16 at 128 clk latency for 128 clk of math: the drain is
    # short against the math; we take one smem round trip plus an L1 hit.
    wgmma_latency_clk: float = 70.0       # 29 (smem) + 41 (L1), arXiv 2402.13499 tab. IV
    # FMA-pipe instructions per score element that softmax spends around each exp: row max,
    # scale-and-subtract, row sum, fp16 pack (FA3 §3.1 counts only the exps). Fit to FA3 tab. 2
    # by sim/calibrate.py; re-measure by timing softmax alone (issue 5).
    softmax_fma_per_elem: float = 4.0
    softmax_stall_per_elem: float = 0.06
    # Latency of the cross-thread row reductions (max and sum: 2 shuffle rounds each, plus the
    # dependent FMNMX/FADD tail): 4 dependent shared-latency-class steps.
    row_reduce_clk: float = 4 * 29.0      # 4 × smem-class latency, arXiv 2402.13499 tab. IV
    # Issue to arrival of a TMA copy whose bytes come from L2 (K/V tiles are reused by every
    # q-block of a head, so they hit L2): L2 latency, arXiv 2402.13499 tab. IV (263 clk), plus the
    # copy engine's descriptor walk, which no datasheet gives: we take one more L2 round trip.
    tma_latency_clk: float = 2 * 263.0
    # Bytes per clk per SM the copy engine can pull from L2 when every SM pulls at once. A lower
    # bound comes from cuBLAS's 8192³ GEMM (fast.cu: 798 TF/s moves ~38 B/clk/SM of 128×256
    # tiles); we take 48 (≈ 11.6 TB/s over 132 SMs).
    l2_bytes_per_clk_per_sm: float = 64.0
    # mbarrier arrive → the waiting warp sees the phase flip (one smem round trip + wake-up).
    mbarrier_clk: float = 2 * 29.0        # arXiv 2402.13499 tab. IV smem latency, twice
    # Pre-Hopper tensor path FA2 uses: mma.sync m16n8k16 sustains ~63% of the wgmma peak.
    mma_sync_fraction: float = 0.42
    # FA2 keeps 2 CTAs of 4 warps per SM (its d128 tiles: 128×64, 64 KiB smem, ≤255 regs × 128).
    fa2_ctas_per_sm: int = 2              # FA2 kernel traits, d128 fwd (Dao 2023, §3.3)

    # --- derived -------------------------------------------------------------------------------
    @property
    def peak_tflops(self) -> float:
        """Dense fp16/bf16 tensor peak of the whole GPU in TFLOP/s."""
        return self.sms * self.tensor_flop_per_clk * self.clock_hz / 1e12

    def with_(self, **changes) -> "Hardware":
        """A copy with some constants changed (for what-ifs and calibration)."""
        return replace(self, **changes)


H100 = Hardware(name="h100")

# H200 SXM: the same GH100 die and compute (H200.md; NVIDIA H200 datasheet), more and faster HBM3e.
# Clock: our lent H200 reports 1980 MHz max; under tensor load it runs lower — issue 5 measures it.
# Until then the model uses the H100's 1830 MHz, the clock the FA3 paper quotes its peak at.
H200 = Hardware(name="h200", hbm_bytes_per_s=4.8e12)    # 4.8 TB/s, H200 datasheet

# Blackwell what-if for chapter 06 (a model, not a measurement: no Blackwell here). FA4 §2.2:
# 8192 dense fp16 FLOP/clk/SM, MUFU still 16 exp/clk/SM; 148 SMs (B200 datasheet), 8 TB/s HBM3e.
B200 = Hardware(name="b200", sms=148, tensor_flop_per_clk=8192, clock_hz=1.85e9,
                hbm_bytes_per_s=8.0e12)

PRESETS: dict[str, Hardware] = {h.name: h for h in (H100, H200, B200)}


def get(name: str) -> Hardware:
    try:
        return PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown hardware {name!r}: expected one of {sorted(PRESETS)}") from None
