"""A/B on a Hopper GPU: this tree's attention kernels against another tree's, in one process,
interleaved, beside cuDNN (for a change whose SASS ``sass_builds.py`` shows is not identical).

    python tests/kernels/ab_base.py BASE_DIR [--rounds 7] [--dims 64,128,256] [--out DIR]

``BASE_DIR/kernels`` is the other tree's kernels package (``git archive <commit> kernels | tar -x
-C BASE_DIR``); it is imported as ``kernels_base`` (its imports are relative). For each head
dim, non-causal and causal, at FA3 tab. 2's B 4, H 16, S 8448: ``fa3`` and ``fa3`` persistent
of both trees and SDPA's cuDNN backend, each checked against float64 first, then timed in
interleaved rounds (``instruments.bench.interleaved``). Prints each side's TFLOP/s and its ratio
to the base tree and to cuDNN; writes ``ab_base.json`` into ``--out`` (or ``$OUT``).
"""
import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

B, H, S = 4, 16, 8448  # FA3 tab. 2's setting


def load_base(base: Path):
    """The other tree's ``kernels.attention``, as ``kernels_base.attention``."""
    pkg = Path(tempfile.mkdtemp(prefix="ab-base-"))
    shutil.copytree(base / "kernels", pkg / "kernels_base")
    sys.path.insert(0, str(pkg))
    return importlib.import_module("kernels_base.attention")


def main(argv=None) -> int:
    import torch

    from instruments.bench import ClockLog, environment, interleaved, rel_error
    from instruments.bench_attention import TOL, peer_fn, reference
    from kernels import attention as new

    p = argparse.ArgumentParser(prog="python tests/kernels/ab_base.py")
    p.add_argument("base", type=Path)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--dims", default="64,128,256")
    p.add_argument("--out", type=Path, default=os.environ.get("OUT"))
    a = p.parse_args(argv)
    base = load_base(a.base)
    sides = {"fa3": (new, False), "fa3 base": (base, False),
             "fa3 persistent": (new, True), "fa3 persistent base": (base, True)}
    rows = []
    with ClockLog() as clocks:
        gen = torch.Generator(device="cuda").manual_seed(0)
        for d in (int(x) for x in a.dims.split(",")):
            for causal in (False, True):
                q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.float16,
                                       generator=gen) for _ in range(3))
                ref = reference(q, k, v, causal)
                fns = {}
                for name, (mod, pers) in sides.items():
                    out = torch.full_like(q, float("nan"))
                    fn = lambda m=mod, ps=pers, o=out: m.attention(q, k, v, causal=causal,
                                                                    variant="fa3", out=o,
                                                                    persistent=ps)
                    fn()
                    torch.cuda.synchronize()
                    err = rel_error(out.reshape(B * H, S, d)[:ref.shape[0]], ref)
                    if not err < TOL["float16"]:
                        raise AssertionError(f"{name} d {d} causal={causal}: rel_err {err:.2e}")
                    fns[name] = fn
                fns["sdpa_cudnn"] = peer_fn("sdpa_cudnn", q, k, v, causal)
                f = new.flops(B, H, S, d, causal)
                timed = interleaved(fns, dict.fromkeys(fns, f), a.rounds, clocks)
                for name, t in timed.items():
                    rows.append({"d": d, "causal": causal, "side": name, **t})
                cudnn = timed["sdpa_cudnn"]["tflops"]
                for name in sides:
                    t = timed[name]["tflops"]
                    vs_base = t / timed[name + " base"]["tflops"] if name + " base" in sides else 1
                    print(f"d {d:3d} {'causal' if causal else 'full  '} {name:20s} {t:7.1f} "
                          f"TFLOP/s  vs base {vs_base:6.3f}  vs cuDNN {t / cudnn:6.3f}", flush=True)
                del q, k, v, ref
    if a.out:
        a.out.mkdir(parents=True, exist_ok=True)
        (a.out / "ab_base.json").write_text(json.dumps({"environment": environment(),
                                                        "B": B, "H": H, "S": S, "rows": rows},
                                                       indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
