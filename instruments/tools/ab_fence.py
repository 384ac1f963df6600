"""A/B of ``steps.schedule_fence``: the overlapped attention kernels with and without it, timed
in the same process, interleaved (``python -m instruments.tools.ab_fence [--rounds N] [--out DIR]``).

The "without" side is the same kernel built with ``fence=False`` (the ``FENCE`` constexpr of
``kernels/attention/overlap.py``), so ptxas hoists the wait for P·V above the softmax again; the
CPU test ``test_softmax_runs_under_its_own_pv`` shows the SASS of both. Each is checked against
a float64 reference first; ``ws_pingpong`` (no overlap, unchanged) is the control. Besides
TFLOP/s it reports the SM clock seen in each kernel's windows and clk per CTA-block — time ×
clock, what the model predicts — since under the power cap the clock differs kernel to kernel.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from instruments.bench_attention import TOL, check, reference
from instruments.harness import ClockLog, check_then_time, environment

# (row name, variant, fence): the two sides of each overlapped kernel, and the controls
SIDES = [("fa3", "fa3", True), ("fa3 no fence", "fa3", False),
         ("overlap", "overlap", True), ("overlap no fence", "overlap", False),
         ("ws_pingpong", "ws_pingpong", True), ("pipelined", "pipelined", True)]


def main(argv=None) -> int:
    import torch

    from kernels import attention as kattention

    p = argparse.ArgumentParser(prog="python -m instruments.tools.ab_fence")
    p.add_argument("--rounds", type=int, default=9)
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--tile", default=None, help="BMxBN, e.g. 64x128: one consumer warpgroup, no "
                   "pingpong partner (default: the variants' own tiles)")
    a = p.parse_args(argv)
    tile = tuple(int(x) for x in a.tile.split("x")) if a.tile else None
    B, H, S, D = 4, 16, 8448, 128  # FA3 tab. 2's setting
    rows = []
    with ClockLog() as clocks:
        gen = torch.Generator(device="cuda").manual_seed(0)
        for causal in (False, True):
            q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16, generator=gen)
                       for _ in range(3))
            ref = reference(q, k, v, causal)
            f = kattention.flops(B, H, S, D, causal)
            out = torch.empty_like(q)
            cands = {}
            for name, variant, fence in SIDES:
                try:
                    kattention.config(variant, D, causal, tile=tile)
                except ValueError:  # fa3 and ws_pingpong need two consumers to take turns
                    continue
                cands[name] = (lambda n=variant, fe=fence: kattention.attention(
                    q, k, v, causal=causal, variant=n, tile=tile, out=out, fence=fe), {})
            done = check_then_time(cands, check(out, ref, B, H, S, D), TOL["float16"], f,
                                   {"B": B, "H": H, "S": S, "d": D, "dtype": "float16",
                                    "causal": causal, "tile": a.tile}, a.rounds, clocks)
            for row in done:
                if not row["ok"]:
                    raise AssertionError(f"{row['variant']} causal={causal}: "
                                         f"{row.get('error') or row['rel_err']}")
            cfg = kattention.config("overlap", D, causal, tile=tile)
            blocks = B * H * (S // 128) * (S // cfg.BN) / (2 if causal else 1) / 132
            for row in done:
                if row.get("sm_mhz"):  # clk per KV block per SM (both consumers' rows)
                    row["clk_per_block"] = row["ms"] * 1e-3 * row["sm_mhz"] * 1e6 / blocks
            rows += done
            del q, k, v, ref, out
    env = environment()
    print(f"\nschedule_fence A/B, B4 H16 S8448 d128 fp16, tile {a.tile or 'default'} (median of "
          "interleaved rounds; clk/block: per 128 rows x BN, at nvidia-smi's clock)")
    for r in rows:
        print(f"  {'causal' if r['causal'] else 'full  '} {r['variant']:<17} {r['tflops']:6.1f} "
              f"TFLOP/s [{r['tflops_min']:.0f}-{r['tflops_max']:.0f}]  {r['sm_mhz'] or 0:.0f} MHz  "
              f"{r.get('clk_per_block', 0):6.0f} clk/block  (rel_err {r['rel_err']:.1e})")
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        name = f"ab_fence_{a.tile}.json" if a.tile else "ab_fence.json"
        (a.out / name).write_text(json.dumps({"environment": env, "rows": rows},
                                                        indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
