"""Each attention kernel of the fidelity table launched once for Nsight Compute's full set — the
plain kernels, no Proton scopes: cycles per SM, each pipe's busy share, and where the warps stall,
per SASS instruction (PC sampling). The model predicts cycles; the scoped traces cost 11-18 % of
them, this costs none (issue 5).

    ncu --clock-control none --set full --import-source no -k regex:'^(sequential|pipelined|ws|
        ws_pingpong|overlap|fa3)_kernel' -o stall python3 -m kernels.tools.stall_probe
    ncu -i stall.ncu-rep --page raw --csv > raw.csv      (and --page source --print-source sass)

The launches are `l2_probe`'s attention lines (B 4 H 16 S 8448 d 128 fp16), each checked against
torch after it ran. `device_session.sh stall_probe` runs the three commands.
"""
from __future__ import annotations

import sys

from .l2_probe import CONFIGS, run

ATTENTION = [c for c in CONFIGS if c[0] == "attention"]

if __name__ == "__main__":
    sys.exit(run(ATTENTION))
