"""The layouts users hand in, timed beside the contiguous ones:
``python -m instruments.bench_layouts [--quick] [--rounds N] [--out DIR]``.

Attention (``fa3`` with the launcher's defaults): the same Q, K, V contiguous (batch, heads, seq,
d) (the 2-D descriptors), in FA3's (batch, seq, heads, d) handed in as its transpose, and sliced
out of a packed (batch, seq, 3, heads, d) QKV projection (both read in place through rank-4
descriptors, O stored by TMA in the input's layout: ``kernels/attention/boxes.py``), SDPA's
cuDNN beside them; at FA3 tab. 2's shape and the grid's S 1K and 16K points (B·S 16K, H·d 2048).
GEMM (``variant="auto"``): B row-major (K, N), and the same values as an (N, K) weight handed in
as ``w.t()`` (``kernels/gemm/common.py``'s ``B_TRANSPOSED``), cuBLAS on both. Each candidate is
checked against float64 on a poisoned output of its own, then all of a setting are timed
together in interleaved rounds with the SM clock and board power logged
(``harness.check_then_time``). Writes ``results/<gpu>-layouts.json`` (and into ``--out`` /
``$OUT``); prints each row's TFLOP/s and its ratio to the contiguous row of its setting.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from instruments.bench import GEMM_TOL
from instruments.bench_attention import CHECK_HEADS, TOL, peer_fn, reference
from instruments.harness import (ClockLog, check_then_time, gpu_environment, gpu_slug, now, out_dirs,
                                 rel_error, smi)

ATTENTION_LAYOUTS = ("contiguous", "bshd", "packed_qkv")
GEMM_LAYOUTS = ("row_major", "weight_t")


def attention_inputs(q, k, v, layout):
    """The same values as ``q, k, v`` (contiguous (B, H, S, d)) in ``layout``, and an O of it."""
    import torch

    B, H, S, D = q.shape
    if layout == "contiguous":
        return q, k, v, torch.empty_like(q)
    if layout == "bshd":
        qs, ks, vs = (x.transpose(1, 2).contiguous().transpose(1, 2) for x in (q, k, v))
        return qs, ks, vs, torch.empty_like(qs)
    x = torch.stack([t.transpose(1, 2) for t in (q, k, v)], dim=2)  # (B, S, 3, H, d)
    return x[:, :, 0].transpose(1, 2), x[:, :, 1].transpose(1, 2), x[:, :, 2].transpose(1, 2), \
        torch.empty(B, S, H, D, device=q.device, dtype=q.dtype).transpose(1, 2)


def attention_check(outs, ref, B, H, S, D):
    """``check_then_time``'s check: every output poisoned, ``fn()`` returns its own, whose
    first CHECK_HEADS (batch, head) pairs are compared with ``ref``."""
    import torch

    def rel_err(fn) -> float:
        for o in outs:
            o.fill_(float("nan"))
        o = fn()
        torch.cuda.synchronize()
        return rel_error(o.reshape(B * H, S, D)[:CHECK_HEADS], ref)
    return rel_err


def attention_setting(B, H, S, D, causal, gen, rounds, clock_log) -> list[dict]:
    import torch

    from kernels.attention import attention, flops

    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16, generator=gen)
               for _ in range(3))
    ref = reference(q, k, v, causal)
    cands, outs = {"sdpa_cudnn": (peer_fn("sdpa_cudnn", q, k, v, causal), {})}, []
    for layout in ATTENTION_LAYOUTS:
        qs, ks, vs, o = attention_inputs(q, k, v, layout)
        outs.append(o)
        cands[f"fa3 {layout}"] = ((lambda qs=qs, ks=ks, vs=vs, o=o: attention(
            qs, ks, vs, causal=causal, out=o)), {"layout": layout, "stride": list(qs.stride())})
    f = flops(B, H, S, D, causal)
    rows = check_then_time(cands, attention_check(outs, ref, B, H, S, D), TOL["float16"], f,
                           {"workload": "attention", "B": B, "H": H, "S": S, "d": D,
                            "causal": causal, "dtype": "float16", "flops": f}, rounds, clock_log)
    del q, k, v, ref, cands, outs
    torch.cuda.empty_cache()
    return rows


def gemm_setting(M, N, K, gen, rounds, clock_log) -> list[dict]:
    import torch

    from kernels.gemm import gemm

    a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=gen)
    w = torch.randn(N, K, device="cuda", dtype=torch.float16, generator=gen)  # a weight, (N, K)
    b = w.t().contiguous()  # the same values, row-major (K, N)
    ref = a.double() @ b.double()
    out = torch.empty(M, N, device="cuda", dtype=torch.float16)
    operands = {"row_major": b, "weight_t": w.t()}
    cands = {}
    for layout, bb in operands.items():
        cands[f"cublas {layout}"] = ((lambda bb=bb: torch.matmul(a, bb, out=out)),
                                     {"layout": layout})
        cands[f"auto {layout}"] = ((lambda bb=bb: gemm(a, bb, "auto", out=out)), {"layout": layout})

    def check(fn) -> float:
        out.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        return rel_error(out, ref)

    rows = check_then_time(cands, check, GEMM_TOL["float16"], 2.0 * M * N * K,
                           {"workload": "gemm", "M": M, "N": N, "K": K, "dtype": "float16"},
                           rounds, clock_log)
    del a, w, b, ref, out, cands
    torch.cuda.empty_cache()
    return rows


def settings(quick: bool):
    """(attention settings (B, H, S, d, causal), GEMM shapes (M, N, K))."""
    if quick:
        return [(4, 16, 8448, 128, False), (16, 16, 1024, 128, False)], [(4096,) * 3]
    att = [(4, 16, 8448, 128, c) for c in (False, True)]
    att += [(16384 // S, 2048 // D, S, D, c) for D in (64, 128, 256) for S in (1024, 16384)
            for c in (False, True)]
    return att, [(8192,) * 3, (4096,) * 3, (8192, 8192, 2048)]


def print_table(rows):
    print("\nTFLOP/s by layout (median over interleaved rounds; x = vs the contiguous / row-major "
          "row of the same setting; ! = failed)")
    keys = []
    for r in rows:
        key = tuple(r.get(x) for x in ("workload", "B", "H", "S", "d", "causal", "M", "N", "K"))
        if key not in keys:
            keys.append(key)
    for key in keys:
        rs = [r for r in rows
              if tuple(r.get(x) for x in ("workload", "B", "H", "S", "d", "causal", "M", "N",
                                          "K")) == key]
        print(" ".join(f"{n}{v}" for n, v in zip(("", "B", "H", "S", "d", "causal=", "M", "N", "K"),
                                                 key) if v is not None))
        for r in rs:
            if not r["ok"]:
                print(f"  {r['variant']:<18} !  {r.get('error') or r['rel_err']}")
                continue
            head = r["variant"].split()[0]
            base = next((x for x in rs if x["variant"] in (f"{head} contiguous",
                                                           f"{head} row_major") and x["ok"]), None)
            x = f"{r['tflops'] / base['tflops']:6.3f}x" if base and head != "sdpa_cudnn" else ""
            print(f"  {r['variant']:<18} {r['tflops']:7.1f} [{r['tflops_min']:.0f}-"
                  f"{r['tflops_max']:.0f}] {x}  (rel_err {r['rel_err']:.1e})")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m instruments.bench_layouts")
    p.add_argument("--quick", action="store_true", help="tab. 2 non-causal, one S 1K point, 4096³")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, action="append", default=None)
    args = p.parse_args(argv)
    import torch

    env = gpu_environment()
    if env is None:
        return 2
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    att, gemms = settings(args.quick)
    rows: list[dict] = []
    with ClockLog() as clock_log:
        for s in att:
            rows += attention_setting(*s, gen, args.rounds, clock_log)
        for shape in gemms:
            rows += gemm_setting(*shape, gen, args.rounds, clock_log)
    env["clocks_after"] = smi("clocks.sm,clocks.mem")
    env["power_field"] = clock_log.power_field
    doc = {"layouts": {"environment": env, "rows": rows, "rounds": args.rounds,
                       "check": f"float64 reference (attention: first {CHECK_HEADS} (batch, head) "
                                f"pairs)", "written": now()}}
    for d in out_dirs(args.out):
        d.mkdir(parents=True, exist_ok=True)
        path = d / f"{gpu_slug(env['gpu'])}-layouts.json"
        path.write_text(json.dumps(doc, indent=1) + "\n")
        print(f"wrote {path}")
    print_table(rows)
    return 0 if all(r["ok"] for r in rows if not r["variant"].startswith(("sdpa", "cublas"))) else 1


if __name__ == "__main__":
    sys.exit(main())
