"""Microbenchmarks of one Hopper SM ("measure the machine"): the rates and latencies
behind ``sim/hardware.py``'s constants. See README.md here; run them all with
``python -m instruments.bench micro``.

    wgmma.py   back-to-back wgmma m64nNk16 (fp16/bf16, N 64/128/256, 1 or 2 warpgroups)
    units.py   SFU exp2 rate, FP32 FMA rate
    tma.py     TMA load latency (L2, HBM) and per-SM bandwidth with 1..4 copies in flight
    mbar.py    mbarrier arrive -> wait hand-off between two warps
    pair.py    the same hand-off across the two SMs of a cluster of two (pair.cu, CUDA C++)
    rescale.py O's FMULs right after a warpgroup's own queued Q·Kᵀ wgmmas
    run.py     all of them + the SM clock under tensor load; model constants from the rows
    common.py  %clock64 / %globaltimer / %smid reads, CPU-only sm_90a compile helper
"""
