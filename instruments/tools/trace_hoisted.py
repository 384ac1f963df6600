"""Proton timelines of fa3 and overlap with the wait for P_{j-1}·V_{j-1} moved, in the source,
to right after the wait for the scores — what ptxas made of the kernels before
``common.schedule_fence`` (results/lab-notebook.md, runs F1-F5), written so that the Proton records
cannot put it back. Its ``PV`` scope is then the time a warpgroup waits for its own P·V once its
scores are in: what the intra-warpgroup overlap can hide at most.

    python -m instruments.tools.trace_hoisted --out DIR     # on a Hopper GPU; the instruments.trace CLI
"""
from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path

from .ab_fence import edited_copy, fence_line

W0 = '''        enter("PV", PROFILE)
        acc = warpgroup_mma_wait(0, deps=(o_tok,))  # P_{j-1} V_{j-1} done
        exit("PV", PROFILE)
        release(v_desc, v_ring, v_full, v_empty, vs, j - 1 + STAGES, n, row0, STAGES, REFILL)
'''
SCORES = '''        exit("QK", PROFILE)
'''


def hoisted_copy(tmp: Path, name: str = "kernels_hoisted"):
    """This package, imported as ``name``, with overlap.py's wait for P·V right after the
    scores' wait (and no fence)."""
    return edited_copy(tmp, name, [(fence_line(), ""), (W0, ""), (SCORES, SCORES + W0)])


def main(argv=None) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        pkg = hoisted_copy(Path(tmp))
        trace = importlib.import_module(pkg.__name__ + ".trace")
        args = sys.argv[1:] if argv is None else argv
        return trace.main([*args, "--only", "attention_fa3", "attention_overlap"])


if __name__ == "__main__":
    raise SystemExit(main())
