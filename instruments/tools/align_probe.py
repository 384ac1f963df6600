"""Does a row stride that is not a multiple of 128 bytes slow the GEMMs' TMA copies?

The ragged sweep shapes (8000×8008×4104, 3000×5000×1336) run 23-45 % more cycles per k-step than
the model gives them without this effect (`results/h200-gemm-sweep.json`), and their row strides — 8208, 16016, 2672, 10000 bytes — are all
16-byte but not 128-byte multiples, so every 128-byte box row of A, B and C straddles L2 lines.
This times each persistent/default variant on the same logical shapes twice, in one process:
once on contiguous tensors (the sweep's strides) and once on views into buffers whose rows are
padded to a multiple of 64 elements (128-byte strides), and the same on 8192×8192×4096 with its
rows padded *off* 128 bytes (stride 4104 / 8200 elements): the tile counts do not change, only
the alignment. CUPTI's device time in do_bench's loop, medians; each launch checked first.

    python3 -m instruments.tools.align_probe --out align.json
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from .gemm_sweep import TOL, _checked, kernel_durations

SHAPES = [(8000, 8008, 4104), (3000, 5000, 1336), (8192, 8192, 4096)]
VARIANTS = ("pipelined", "ws", "ws_pingpong")


def _strided(rows: int, cols: int, pad_to: int, gen, misalign: bool = False):
    """A rows × cols fp16 view whose row stride is cols rounded up to `pad_to` elements (plus 8
    with `misalign`: 16 bytes off a 128-byte multiple)."""
    import torch

    stride = -(-cols // pad_to) * pad_to + (8 if misalign else 0)
    buf = torch.randn(rows, stride, device="cuda", dtype=torch.float16, generator=gen)
    return buf[:, :cols]


def probe(rounds: int = 50) -> list[dict]:
    import torch

    from kernels.gemm import KERNELS, common, config

    gen = torch.Generator(device="cuda").manual_seed(7)
    rows = []
    for M, N, K in SHAPES:
        aligned = (M, N, K) != (8192, 8192, 4096)      # the ragged ones: pad to 128 B
        layouts = ({"contiguous": {"pad_to": 8}, "padded": {"pad_to": 64}} if aligned else
                   {"contiguous": {"pad_to": 8}, "misaligned": {"pad_to": 64, "misalign": True}})
        for layout, kw in layouts.items():
            a = _strided(M, K, gen=gen, **kw)
            b = _strided(K, N, gen=gen, **kw)
            c = _strided(M, N, gen=gen, **kw)
            ref = a.double() @ b.double()
            for v in VARIANTS:
                cfg = config(v)
                fn = lambda v=v, cfg=cfg, a=a, b=b, c=c: common.launch(KERNELS[v], a, b, c, cfg)
                err = _checked(fn, c, ref)
                row = {"M": M, "N": N, "K": K, "variant": v, "layout": layout,
                       "strides_bytes": [2 * a.stride(0), 2 * b.stride(0), 2 * c.stride(0)],
                       "rel_err": err, "ok": err < TOL}
                if row["ok"]:
                    ms = statistics.median(kernel_durations(fn, rounds))
                    row.update(device_ms=ms, device_tflops=2.0 * M * N * K / (ms * 1e-3) / 1e12)
                rows.append(row)
                print(json.dumps(row), flush=True)
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path)
    p.add_argument("--rounds", type=int, default=50)
    a = p.parse_args(argv)
    rows = probe(a.rounds)
    if a.out:
        a.out.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\n{'shape':16s} {'variant':12s} {'layout':11s} {'strides (B)':22s} {'device us':>9s}")
    for r in rows:
        t = f"{r['device_ms'] * 1e3:9.1f}" if "device_ms" in r else "  failed"
        print(f"{r['M']}x{r['N']}x{r['K']:<6d} {r['variant']:12s} {r['layout']:11s} "
              f"{r['strides_bytes']!s:22s} {t}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
