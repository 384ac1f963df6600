"""The machine the model runs on: one Hopper SM and how many of them there are.

Every constant carries its source. Two kinds:

* **datasheet** constants — rates, sizes, clocks from NVIDIA's documents or the FA3 paper;
* **calibrated** constants — what no datasheet gives. Three are fitted jointly to FA3 tab. 2 by
  ``fidelity/calibrate.py`` on the h100 preset (``wgmma_overhead_clk``, ``softmax_stall_per_elem``,
  ``softmax_beside_mma``); the power cap's four are fitted there to the clocks our H200
  measured (`PowerCap`), and h200's `softmax_beside_mma` to its kernels' cycles (run S1); the
  others come from one published or measured number each, named beside it. The h200 preset
  takes what our H200's microbenchmarks, Proton traces and Nsight Compute runs measured.

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
    # The three that fidelity/calibrate.py fits, jointly, to FA3 tab. 2 (fa3 661, ws_pingpong 582,
    # overlap 570 TFLOPs/s) on the h100 preset (`wgmma_overhead_clk`, `softmax_stall_per_elem`,
    # `softmax_beside_mma`); the same values serve every variant.
    #
    # Tensor-pipe cycles a wgmma m64nNk16 spends beyond its N/2 clk of math, as the paper's
    # machine needs it. It sets the tensor ceiling: N = 256 runs at 128/(128+34) = 79 % of
    # the 1830 MHz peak. Measured on our H200 (results/h200-micro.json), a queue of
    # wgmmas costs 0.00 clk beyond its math, so on the h200 preset it is 0 and the model derives
    # the power-capped clock instead (`PowerCap`): the 34 stands for that clock, which FA3's
    # tab. 2 does not report (sim/README.md, "Against the machine").
    wgmma_overhead_clk: float = 34.0
    # FMA-pipe instructions per score element that issue between the exps: FFMA (scale and
    # subtract), FADD (row sum) — 2 counted.
    softmax_fma_per_elem: float = 2.0
    # Cycles per score element of a warpgroup's softmax after its last exp — the row sum's
    # shuffles and dependent adds — that hold no unit: the "less tidy" part of the real schedule
    # (FA3 §3.1). Fitted on h100 (tab. 2); h200's is fitted to its own kernels' cycles.
    softmax_stall_per_elem: float = 0.02
    # FMA-pipe slots per score element to pack P to 16 bits for P·V: F2FP, one instruction per
    # two elements, issuing at half the FMA rate. Run S1 (results/h200-stall.json, the
    # plain kernels' PC samples): 78-138 clk a block on the F2FP, 96 here (192 beside a busy
    # tensor core). The GH100 SM's, so every Hopper preset's.
    softmax_pack_per_elem: float = 1.0
    # How many times longer a softmax's pipe work takes while the tensor core computes beside it:
    # the warpgroups share the SM sub-partitions' issue and register file with the wgmmas' operand
    # traffic. Runs Q6/Q8 (h200-softmax.json): a softmax alone 851 clk, beside a stream of
    # wgmmas that keeps the tensor core ~82 % busy 1231-1247; run S1's fa3 (tensor 76 % busy):
    # its FMNMX chains 520 clk a block against ws_pingpong's 383. Fitted on h100 (tab. 2: FA3's
    # own kernels, 1.5); h200's, 2.0, is chosen with our kernels' cycles (`H200_MEASURED`).
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
    # 128): each row straddles two lines. Fitted on the h200 preset to run G2's alignment probe
    # (`python -m fidelity.calibrate --align`); presets without a measurement: 1.
    tma_misaligned_factor: float = 1.0
    # Seconds a launch takes beyond its CTAs: the first CTAs' dispatch, the end of the grid. Not
    # in a datasheet; measured on our H200 (the h200 preset, instruments/micro/launch.py under
    # Nsight Compute).
    kernel_launch_s: float = 0.0
    # FA2's mma.sync path: arXiv 2402.13499 measures mma.sync m16n8k16 at ~63% of the wgmma peak
    # in isolation; inside FA2 (ldmatrix, softmax and mma.sync on the same warps, 255 registers)
    # it sustains less. Set so that the `fa2` schedule gives the FA2 rate we measured on our H200
    # (SDPA-flash, d 128, S 8K: 343 TF/s = 35% of 989; shared/reference/hardware.md), which is
    # also what FA3 §1 reports for FA2 on the H100 (~35%).
    mma_sync_fraction: float = 0.42
    # FA2 keeps 2 CTAs of 4 warps per SM (its d128 forward: 128×64 tiles, 64 KiB smem, 255 regs).
    fa2_ctas_per_sm: int = 2
    # None: the model runs at clock_hz. Otherwise each kernel's clock comes from its activity.
    power_cap: PowerCap | None = None

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


H100 = Hardware(name="h100")

# H200 SXM: the same GH100 die and compute (H200.md; NVIDIA H200 datasheet), more and faster HBM3e.
# `h200-datasheet` is that, at the H100's 1830 MHz (our H200 reports 1980 MHz max, and read 1305-1575
# MHz right after long tensor-core runs: "clocks_after" in results/h200*.json). `h200` is the
# same machine with whatever the microbenchmarks measured on our H200 (`python -m instruments.bench
# micro` → results/h200-micro.json, "constants"), the datasheet where nothing was measured.
H200_DATASHEET = Hardware(name="h200-datasheet", hbm_bytes_per_s=4.8e12)   # 4.8 TB/s, datasheet
# What the unit microbenchmarks measured on our H200 (`python -m instruments.bench micro` →
# results/h200-micro.json, its "constants"; the TMA link rate is the slope of its L2 latency rows).
# Literal here so the model reads no file; tests/fidelity/test_measured_preset.py recomputes each
# from that file. The L2 bandwidth it also measured is not taken (see `l2_bytes_per_s` below).
H200_MICRO = {
    "tensor_flop_per_clk": 4095.9024330207253,   # a wgmma stream, both warpgroups
    "wgmma_latency_clk": 54.251917319207735,     # one m64nNk16 alone, issue to done
    "sfu_exp_per_clk": 15.963672016099903,       # MUFU.EX2 throughput, all four SM sub-partitions
    "fma_lanes_per_clk": 84.8899889311725,       # the softmax's FMUL/FADD mix
    "tma_latency_clk": 348.8817456593149,        # a copy that hits L2, intercept at 0 bytes
    "mbarrier_clk": 58.50022,                    # an arrive to the waiter's wake-up
    "tma_link_bytes_per_clk": 112.36002265588796,  # one SM's copies with L2 idle
}
# What our H200's traces and clock measurements set beyond the microbenchmarks' constants:
H200_MEASURED = {
    # a queue of wgmmas from two warpgroups costs 0.00 clk beyond its math at N 64/128/256
    # (h200-micro.json, wgmma rows "overhead_beyond_half_n"); the ws GEMM's traced k-step is
    # 1026 clk for 1024 of math
    "wgmma_overhead_clk": 0.0,
    # L2 per second: the TMA bandwidth microbenchmark reached 36 B/clk/SM at 1.98 GHz (9.2 TB/s),
    # our bandwidth-bound 128×128 pingpong GEMM 59 B/clk/SM at 1.34 GHz (10.4 TB/s; its k-step,
    # 32 KiB per 556.5 clk, in run T2's traces/gemm_ws_pingpong.summary.json, commit 8169f2d, at
    # the clock fidelity/calibrate.py reads off that trace): per clock the two disagree by 60 %, per
    # second by 12 %. We take the GEMM's, the pattern our kernels have.
    "l2_bytes_per_s": 10.4e12,
    # the traced producers' `TMA issue` scope: 62-64 clk per K or V block (attention ws,
    # ws_pingpong, fa3), 86 per A + B k-step (GEMM ws), 100 per three A boxes + B (pingpong
    # 192×128); the median, per load (traces/*.summary.json, producer "TMA issue" mean_clk)
    "tma_issue_clk": 64.0,
    # a wait that finds its phase complete still costs a probe: the traced consumers spend 85-166
    # clk in each `wait K` / `wait V` / `wait turn` scope although the producers wait 84-89 % of
    # the time for a free slot (the data is there first); part of that is the scope's own clock
    # reads, so we charge one hand-off, the mbarrier microbenchmark's 58.5 clk
    "mbarrier_probe_clk": 58.5,
    # a busy tensor core's cost to the softmax beside it, and the softmax's dependency tail:
    # chosen by `python -m fidelity.calibrate --softmax` (a grid of the two) for the smallest worst
    # error of the six attention kernels' cycles per K/V block in run S1 (h200-stall.json:
    # within 9.4 %; 0.02 before session 7 added a CTA's cold Q, its O, its turnover and the
    # wgmma descriptors, h100's); h100's tab. 2 fit (FA3's own kernels) wants 1.5 and 0.02. The
    # softmax microbenchmark (Q5-Q8) then reads 1083 clk alone (measured 851), two side by side
    # 1371 (1228), beside a wgmma stream 1816 (1240): inside our kernels the softmax is slower
    # than the microbenchmark's beside the same work, and the model's stands for that
    # (tests/model/test_softmax_measured.py holds the gap).
    "softmax_beside_mma": 2.0,
    "softmax_stall_per_elem": 0.01,
    # A GEMM's operand copies, issue to landed, from the traced refills of run Q1
    # (instruments.trace.hand_off_summary: the producer's `TMA issue` end to the consumer passing
    # `full`, medians over 54-133 k refills): ws s2 1506 clk for 48 KiB, pingpong s2 1419 and s3
    # 1437 for 40 KiB (run Q2 again: 1507, 1426, 1383; the committed traces are Q2's) — the same
    # at every ring depth, so not a queue that load builds. Less the
    # bytes at the link rate and the consumer's wake-up (mbarrier_clk): 996-1014, against 349 for
    # an L2 hit and 884-950 for an idle HBM read (h200-micro.json). Nsight Compute has the GEMMs
    # reading 1.45-1.49 GB from DRAM, 5.5× A and B (h200-l2.json): the operands stream from HBM.
    "tma_hbm_latency_clk": 1003.0,
    # instruments/micro/issue.py, run Q3 (h200-issue.json): one warpgroup's first group of 4 or 8
    # wgmmas, unblocked — 12.4, 18.0 and 29.8 clk per SS instruction at N 64, 128, 256, 10.75
    # more per RS one (`issue.constants`, a least-squares fit within 8 clk of each row). Each
    # warpgroup issues on its own here; on the H200 a second one issuing at the same time slows
    # the first by 20-50 % (m64n128k16 ×4: 79 clk alone, 108 beside another), which the model
    # leaves out (tests/model/test_wgmma_issue.py: its first group of two is early).
    "wgmma_issue_clk": 5.8,
    "wgmma_issue_clk_per_n": 0.098,
    "wgmma_issue_rs_clk": 10.75,
    # Nsight Compute's ledger of fa3's consumer warps (runs S1 at d 128, G5 at d 64 and d 256,
    # h200-stall*.json): their HGMMA samples per wgmma are the microbenchmark's issue (17-22 clk),
    # and the uniform-datapath address work beside them ("other": 157 / 173 / 297 clk a block
    # for 12 / 16 / 20 wgmmas) another 13 clk a wgmma
    "wgmma_descriptor_clk": 13.0,
    # the same run: once the queue is full, each issue returns when an instruction finishes,
    # with 7 in flight (issued less finished at the pipe's rate), for 1 or 2 warpgroups, SS or RS
    "wgmma_queue_depth": 7,
    # instruments/micro/launch.py, run G1 (h200-launch.json): from a CTA's exit to the next one's
    # entry on the same SM, 368-446 clk (medians; the SMs at 1.98 GHz); 368 with a copy in the
    # CTA, the row most like our kernels' CTAs
    "cta_launch_clk": 368.0,
    # run G4 (h200-launch.json "ncu"): each launch of that benchmark under Nsight Compute, its
    # busiest SM's cycles less its 9 CTAs and the 8 turnovers between them: 2922, 3162, 3531
    # clk at 1.96 GHz (1.5-1.8 µs; the longest with a cold copy in each CTA)
    "kernel_launch_s": 1.6e-6,
    # `python -m fidelity.calibrate --align`: the factor whose model puts each of run G2's nine
    # alignment pairs (h200-align.json: three kernels on three shapes, rows 16 bytes off 128 or
    # on it) nearest the measured slowdown (1.12-1.46): within 12.9 % of each ratio. A row that
    # straddles two 128-byte lines costs more than its 5 of 4 sectors (×1.25) would say.
    "tma_misaligned_factor": 1.55,
    # the boost clock, the ceiling under the power cap: nvidia-smi clocks.max, "1980 MHz" in
    # every results file's environment. (The microbenchmark's clock under a bare wgmma stream,
    # which `with_measurements` takes as clock_hz, is one of the points PowerCap is fitted to.)
    "clock_hz": 1.98e9,
    # at the 700 W limit (nvidia-smi power.limit): the plane `python -m fidelity.calibrate` fits
    # through twelve clocks measured under load (a wgmma stream, six traced attention kernels,
    # five traced GEMMs — the s2/s3 rings and in-line attention from runs Q1-Q2, fa3 and overlap
    # re-traced with the schedule fence in run F1, fa3 at d 256 in run G1; within 3.6 % of
    # each, d 256 the farthest). Without the exps term,
    # the s2 GEMMs sat 6 % under the line: the softmax burns power.
    "power_cap": PowerCap(base_ns=0.4105, tensor_ns=0.2384, l2_ns_per_byte=0.002570,
                          exp_ns=0.00883),
}


H200 = H200_DATASHEET.with_(name="h200", **H200_MICRO, **H200_MEASURED)

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
