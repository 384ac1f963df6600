# exercise: ch00_rates
# file: rates.py
# loses: test_wgmma_fp8_random, test_other_hardware
# bug: pads a wgmma's N up to a multiple of 16 before its math and B's read: right for every N that
#      is a multiple of 16 (every public case), too many cycles for any N = 8 mod 16 (m64n8k16,
#      m64n24k16, ...: 64 x 24 x 16 on H200 costs 24 cycles, the model charges 22), which the
#      model takes and the hidden tests draw.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 00 — what one step costs, from the rates in ``sim/hardware.py``.

Both functions take a ``sim.Hardware`` (e.g. ``sim.H200_DATASHEET``) and must return the
number of SM clock cycles the course's model charges — work it out from the rates and the cost
rules in ``sim/cta.py`` / ``sim/attention/cta.py`` docstrings, not by running the model.
"""
import math


def wgmma_group_clk(hw, rows, n, k, dtype="fp16", a_from_smem=True):
    """Tensor-pipe cycles of one warpgroup's async wgmma group computing a (rows × k)·(k × n)
    product with m64nNk16 instructions (`rows` a multiple of 64).

    One instruction: its math is 64·n·16 multiply-adds at ``hw.tensor_flop_per_clk`` (N/2 clk for
    fp16, ``hw.fp8_speedup`` times less for fp8) — unless reading its shared-memory operands takes
    longer (B: n × 16 elements, plus A: 64 × 16 elements when A comes from shared memory, at
    ``hw.smem_bytes_per_clk``) — plus ``hw.wgmma_overhead_clk``. Elements are 2 bytes (fp16,
    bf16) or 1 (fp8). How many instructions make the group?
    """
    el = 1 if dtype == "fp8" else 2
    n = -(-n // 16) * 16                # n padded to 16
    math_clk = 2 * 64 * n * 16 / hw.tensor_flop_per_clk / (hw.fp8_speedup if dtype == "fp8" else 1)
    smem_bytes = (64 * 16 * el if a_from_smem else 0) + n * 16 * el
    per_instr = max(math_clk, smem_bytes / hw.smem_bytes_per_clk) + hw.wgmma_overhead_clk
    return (rows // 64) * math.ceil(k / 16) * per_instr


def softmax_clk(hw, rows, block_n, masked=False):
    """Cycles of one warpgroup's online softmax over a rows × block_n score tile, alone on the SM.

    Three steps, one after the other. The row max: one instruction per element (two on a masked
    block) at ``hw.fma_lanes_per_clk`` per clk, then the cross-thread reduction
    (``hw.row_reduce_clk``). The exps on the SFU (``hw.sfu_exp_per_clk``) with the
    ``hw.softmax_fma_per_elem`` FMA-pipe instructions per element issuing between them: the
    longer of the two. Then ``hw.softmax_stall_per_elem`` cycles of dependency tail per element.
    (Alone on the SM the tensor core is idle, so ``hw.softmax_beside_mma`` does not apply.)
    """
    elems = rows * block_n
    max_clk = elems * (2 if masked else 1) / hw.fma_lanes_per_clk + hw.row_reduce_clk
    exp_clk = elems / hw.sfu_exp_per_clk
    fma_clk = elems * hw.softmax_fma_per_elem / hw.fma_lanes_per_clk
    return max_clk + max(exp_clk, fma_clk) + elems * hw.softmax_stall_per_elem
