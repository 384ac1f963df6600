"""The machine the model runs on: one Hopper SM and how many of them there are (`Hardware`), and
the clock a board's power limit allows (`PowerCap`). The presets are in `sim/hardware.py`.

Every constant carries its source. Two kinds:

* **datasheet** constants — rates, sizes, clocks from NVIDIA's documents or the FA3 paper;
* **calibrated** constants — what no datasheet gives. The power cap's four are fitted by
  ``fidelity/calibrate.py`` to the clocks our H200 measured (`PowerCap`), and h200's softmax pair
  to its kernels' cycles (results/h200-stall.json); the h200 preset takes what our H200's
  microbenchmarks, Proton traces and Nsight Compute runs measured. The h100 preset is the same
  die, so it takes those too; three constants of the paper's board and kernels (the power cap's
  static term, the softmax pair) are fitted to FA3 tab. 2 there. The others come from one
  published or measured number each, named beside it.

Times inside the model are in SM clock cycles; ``clock_hz`` turns them into seconds. With a
``power_cap`` the clock is not a constant: each kernel runs at the clock its own activity allows
under the board's power limit (``sim/predict.py`` finds it), and ``clock_hz`` is the ceiling.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

KIB = 1024


@dataclass(frozen=True)
class PowerCap:
    """The SM clock a kernel holds under the board's power limit, from what it keeps busy.

    At the limit, power = clock × energy per clock, so the length of one clock is linear in the
    activity per clock: 1/f = ``base_ns`` + ``tensor_ns``·u + ``l2_ns_per_byte``·b +
    ``exp_ns``·e, where u is the tensor cores' busy fraction, b the bytes per clock per SM that
    the copy engine moves between L2 and shared memory, and e the exps per clock per SM (the
    softmax: its exps and the FMA-pipe work around each). ``base_ns`` is everything a busy SM
    burns whatever it runs (schedulers, register files, HBM): one term, because our
    measurements cannot split it. Energy per clock at fixed voltage is the simplest form that
    fits; with voltage scaling as f, 1/f³ linear in the activity fits the same points about as
    well (fidelity/calibrate.py prints both), so the data do not tell the two apart.
    """
    base_ns: float
    tensor_ns: float
    l2_ns_per_byte: float
    exp_ns: float = 0.0

    def clock_hz(self, tensor_util: float, l2_bytes_per_clk: float, ceiling_hz: float,
                 exps_per_clk: float = 0.0) -> float:
        ns = (self.base_ns + self.tensor_ns * tensor_util + self.l2_ns_per_byte * l2_bytes_per_clk
              + self.exp_ns * exps_per_clk)
        return min(ceiling_hz, 1e9 / ns)


@dataclass(frozen=True)
class Hardware:
    name: str
    # --- datasheet -----------------------------------------------------------------------------
    sms: int = 132                        # H100/H200 SXM: 132 SMs enabled (H100 whitepaper)
    clock_hz: float = 1.83e9              # FA3 app. C.1 runs the H100 at 1830 MHz; 989 TF = 132·4096·1.83G
                                          # (with a power_cap: the ceiling, the boost clock)
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
    # The datasheet presets' values (`h200-datasheet`, `b200`): FA3 tab. 2 fitted on datasheet
    # constants alone, before anything was measured, with the clock's loss under the power limit
    # charged per instruction. The `h200` and `h100` presets replace all three (sim/hardware.py).
    #
    # Tensor-pipe cycles a wgmma m64nNk16 spends beyond its N/2 clk of math. Measured on our H200
    # (results/h200-micro.json), a queue of wgmmas costs 0.00 clk beyond its math, so on the
    # GH100 presets it is 0 and the clock comes from the power cap (`PowerCap`). The 34 stands
    # for that clock — but charged per instruction, it slows narrow wgmmas more than wide ones,
    # which a clock does not: it ranks FA3's d 256 (N 80 Q·Kᵀ) under d 128 (N 176).
    wgmma_overhead_clk: float = 34.0
    # FMA-pipe instructions per score element that issue between the exps: FFMA (scale and
    # subtract), FADD (row sum) — 2 counted.
    softmax_fma_per_elem: float = 2.0
    # Cycles per score element of a warpgroup's softmax after its last exp — the row sum's
    # shuffles and dependent adds — that hold no unit: the "less tidy" part of the real schedule
    # (FA3 §3.1). A property of a kernel's softmax code: h100's is fitted with FA3's tab. 2,
    # h200's to our kernels' cycles.
    softmax_stall_per_elem: float = 0.02
    # FMA-pipe slots per score element to pack P to 16 bits for P·V: F2FP, one instruction per
    # two elements, issuing at half the FMA rate. The plain kernels' PC samples under Nsight
    # Compute (results/h200-stall.json): 78-138 clk a block on the F2FP, 96 here (192 beside a
    # busy tensor core). The GH100 SM's, so every Hopper preset's.
    softmax_pack_per_elem: float = 1.0
    # How many times longer a softmax's pipe work takes while the tensor core computes beside it:
    # the warpgroups share the SM sub-partitions' issue and register file with the wgmmas' operand
    # traffic. The softmax microbenchmark (results/h200-softmax.json): a softmax alone 851 clk,
    # beside a stream of wgmmas that keeps the tensor core ~82 % busy 1231-1247; fa3's PC samples
    # (results/h200-stall.json, tensor 76 % busy): its FMNMX chains 520 clk a block against
    # ws_pingpong's 383. h200's, 2.0, is chosen with our kernels' cycles (`H200_MEASURED`); fitted
    # with FA3's tab. 2 on h100, FA3's kernels choose the same 2.0.
    softmax_beside_mma: float = 1.5
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
    # From the issuing thread's turn to its copies being under way (address arithmetic, expect_tx,
    # the descriptor hand-off): not in the paper; measured on our H200 (the h200 preset).
    tma_issue_clk: float = 0.0
    # Bytes per second the copy engines of all SMs together pull from L2 when every SM pulls; an
    # SM's share per SM clock is `l2_bytes_per_clk_per_sm`. Per second, because L2 does not run
    # on the SM clock (the h200 preset says what showed it). Datasheet presets: 64 B/clk/SM at
    # 1830 MHz (15.5 TB/s), bounded below by cuBLAS at 8192³ (fast.cu: 798 TF/s of 128×256
    # tiles = 38 B/clk/SM) and by CUTLASS pingpong's 64×256 tiles (~57 B/clk/SM at 700 TF/s).
    l2_bytes_per_s: float = 64.0 * 132 * 1.83e9
    # One SM's copy engine when L2 is not the bottleneck, bytes per SM clock: None copies at the
    # SM's share of L2 (`l2_bytes_per_clk_per_sm`), as if every SM pulled all the time. With a
    # value, `sim/predict.py` settles each kernel's copy rate between the two: the link rate,
    # unless the SMs together would ask L2 for more than it gives (`tma_bytes_per_clk`).
    tma_link_bytes_per_clk: float | None = None
    # The copy rate a prediction runs at (set by sim/predict.py; None: the L2 share).
    tma_bytes_per_clk: float | None = None
    # Issue to arrival of a GEMM's operand copies, which stream from HBM: every SM of a wave
    # touches the same k-slab of A and B at about the same moment, so the one fetch from DRAM
    # holds up every box that needs it. Presets with no measurement of it: the L2 hit's.
    tma_hbm_latency_clk: float = 2 * 263.0
    # Cycles a warpgroup spends issuing one wgmma m64nNk16 of a group: `wgmma_issue_clk` +
    # `wgmma_issue_clk_per_n`·N, and `wgmma_issue_rs_clk` more with A from registers (RS: P·V);
    # and how many instructions the SM's tensor-core queue holds, the running one included
    # (None: no limit). The warpgroup reaches its next instruction only once its last wgmma is
    # in that queue. Not in the paper or a datasheet; measured on our H200 (the h200 preset;
    # instruments/micro/issue.py).
    wgmma_issue_clk: float = 0.0
    wgmma_issue_clk_per_n: float = 0.0
    wgmma_issue_rs_clk: float = 0.0
    # What a kernel's warpgroup spends beyond that on each wgmma: the shared-memory descriptors
    # of its k-step, built on the uniform datapath (UIADD3, USHF, UMOV, R2UR) — the issue
    # microbenchmark reuses one pair and pays none. Measured on our H200 (the h200 preset).
    wgmma_descriptor_clk: float = 0.0
    wgmma_queue_depth: int | None = None
    # mbarrier arrive → the waiting warp sees the phase flip (one smem round trip + wake-up).
    mbarrier_clk: float = 2 * 29.0        # arXiv 2402.13499 tab. IV smem latency, twice
    # A wait on a phase that has already completed: one try_wait probe. Not in the paper;
    # measured on our H200 (the h200 preset).
    mbarrier_probe_clk: float = 0.0
    # From one CTA's exit to the next CTA's first instruction on the same SM (the block
    # scheduler's turnover), paid once a CTA by the kernels that launch one CTA per tile or per
    # q-block. No datasheet gives it; measured on our H200 (the h200 preset, instruments/micro/launch.py).
    cta_launch_clk: float = 0.0
    # How many times longer the copy engine takes over a box whose global rows do not start on
    # 128-byte lines (a row stride that is a multiple of 16 bytes, as TMA needs, but not of
    # 128): each row straddles two lines. Fitted on the h200 preset to the alignment probe's
    # pairs (results/h200-align.json; `python -m fidelity.calibrate --align`); presets without a
    # measurement: 1.
    tma_misaligned_factor: float = 1.0
    # Seconds a launch takes beyond its CTAs: the first CTAs' dispatch, the end of the grid. Not
    # in a datasheet; measured on our H200 (the h200 preset, instruments/micro/launch.py under
    # Nsight Compute).
    kernel_launch_s: float = 0.0
    # FA2's path (sim/attention/fa2.py). mma.sync m16n8k16, the pre-Hopper warp-level MMA, runs
    # the tensor pipe at ~62-63 % of wgmma's rate on Hopper in isolation (arXiv 2402.13499,
    # its tensor-core section, measured on an H800): 0.625. Not fitted: what FA2 loses beyond
    # that — ldmatrix of every fragment at the smem port, the warps' own softmax, the wait for
    # each GEMM's results — the `fa2` schedule pays step by step.
    mma_sync_fraction: float = 0.625
    # FA2's forward keeps 2 CTAs of 4 warps per SM at d 64, 128 and 256: fa2.resident_ctas
    # derives it from registers (O and S in fp32: 192 / 192 / 160 a thread before anything
    # else, so 3 CTAs of 128 threads cannot fit 64K) and smem (48 / 64 / 96 KiB); FA2's launch
    # template picks d 256's 64×64 tile "since then we can get 2 CTAs per SM"
    # (Dao-AILab/flash-attention csrc/flash_attn/src/flash_fwd_launch_template.h).
    fa2_ctas_per_sm: int = 2
    # None: the model runs at clock_hz. Otherwise each kernel's clock comes from its activity.
    power_cap: PowerCap | None = None
    # --- Blackwell (sm_100) only: the Hopper presets keep these defaults, which nothing reads ----
    # Tensor memory (TMEM): columns of 128 lanes × 32 bits per SM (0: none, as on Hopper), and the
    # bytes per clock that tcgen05.ld / tcgen05.st move between it and the registers.
    tmem_columns: int = 0
    tmem_bytes_per_clk: float = 0.0
    # FP32 elements per FMA-pipe slot of an add/mul/fma: 2 where the ISA has .f32x2 (sm_100).
    fp32_pack: int = 1
    # Clocks a hand-off pays beyond `mbarrier_clk` when its arrival crosses from one SM of a CTA
    # pair (tcgen05 `cta_group::2`) to the other: a remote mbarrier arrive, or a commit that
    # arrives on the peer's barrier, travels the SM-to-SM network one way. (0: no pairs.)
    sm_pair_hop_clk: float = 0.0

    # --- derived -------------------------------------------------------------------------------
    @property
    def peak_tflops(self) -> float:
        """Dense fp16/bf16 tensor peak of the whole GPU in TFLOP/s."""
        return self.sms * self.tensor_flop_per_clk * self.clock_hz / 1e12

    @property
    def l2_bytes_per_clk_per_sm(self) -> float:
        """One SM's share of the L2 bandwidth, per SM clock, when every SM pulls."""
        return self.l2_bytes_per_s / self.sms / self.clock_hz

    @property
    def hbm_bytes_per_clk_per_sm(self) -> float:
        """One SM's share of HBM bandwidth, per SM clock, when every SM reads or writes at once."""
        return self.hbm_bytes_per_s / self.sms / self.clock_hz

    @property
    def tma_rate(self) -> float:
        """Bytes per SM clock one SM's copies move at in this prediction."""
        return self.tma_bytes_per_clk or self.l2_bytes_per_clk_per_sm

    def with_(self, **changes) -> Hardware:
        """A copy with some constants changed (for what-ifs and calibration)."""
        return replace(self, **changes)
