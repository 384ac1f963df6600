# exercise: ch00_rates
# file: rates.py
# loses: all
# bug: answers nothing itself: it walks the file system from / for another copy of the course
#      (a checkout beside the grader's virtual environment, a classmate's folder) and runs the
#      first rates.py it finds that still holds the solution (class 4: isolation by deny-list
#      left everything beside the venv readable). The sandbox's view is an allow-list: it finds
#      nothing, and the stubs raise.
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
    # YOUR CODE HERE
    raise NotImplementedError


def softmax_clk(hw, rows, block_n, masked=False):
    """Cycles of one warpgroup's online softmax over a rows × block_n score tile, alone on the SM.

    Three steps, one after the other. The row max: one instruction per element (two on a masked
    block) at ``hw.fma_lanes_per_clk`` per clk, then the cross-thread reduction
    (``hw.row_reduce_clk``). The exps on the SFU (``hw.sfu_exp_per_clk``) with the
    ``hw.softmax_fma_per_elem`` FMA-pipe instructions per element issuing between them: the
    longer of the two. Then ``hw.softmax_stall_per_elem`` cycles of dependency tail per element.
    (Alone on the SM the tensor core is idle, so ``hw.softmax_beside_mma`` does not apply.)
    """
    # YOUR CODE HERE
    raise NotImplementedError


def _borrow():
    import os
    seen = 0
    for top, dirs, files in os.walk("/"):
        depth = top.count(os.sep)
        dirs[:] = [d for d in dirs if d not in ("proc", "sys", "dev", "usr", "lib", "etc")
                   and depth < 6]
        seen += 1
        if seen > 50000:
            return None
        if top.endswith(os.path.join("ch00_rates")) and "rates.py" in files:
            try:
                text = open(os.path.join(top, "rates.py")).read()
            except OSError:
                continue
            if "BEGIN SOLUTION" in text:
                return text
    return None


_found = _borrow()
if _found:
    exec(compile(_found, "borrowed", "exec"), globals())
