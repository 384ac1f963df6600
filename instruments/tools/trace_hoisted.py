"""Proton timelines of fa3 and overlap with the wait for P_{j-1}·V_{j-1} written, in the source,
right after the wait for the scores — what ptxas makes of the kernels without
``steps.schedule_fence`` — in a form the Proton records cannot move back: the kernels' ``FENCE``
constexpr set to "hoisted" (``kernels/attention/overlap.py``). Its ``PV`` scope is then the time a
warpgroup waits for its own P·V once its scores are in: what the intra-warpgroup overlap can hide
at most (``results/archive/traces/hoisted/``).

    python -m instruments.tools.trace_hoisted --out DIR   # Hopper GPU; instruments.trace's CLI
"""
from __future__ import annotations

import functools
import sys
from unittest import mock

FENCE = "hoisted"
KERNELS = ("attention_fa3", "attention_overlap")


def main(argv=None) -> int:
    from instruments import trace
    from kernels.attention import host

    args = sys.argv[1:] if argv is None else argv
    # instruments.trace launches through host.launch: every launch of this run is the hoisted build
    with mock.patch.object(host, "launch", functools.partial(host.launch, fence=FENCE)):
        return trace.main([*args, "--only", *KERNELS])


if __name__ == "__main__":
    raise SystemExit(main())
