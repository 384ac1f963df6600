"""What the chapters share: the committed measurements, and whether a Hopper GPU is here.

A chapter's GPU section runs live when `hopper_gpu()` names a GPU; otherwise it plots what
`measured()` finds in `results/` and says so. Prose that quotes a number the chapter computes
says it through `md(f"...")`, so the sentence and the number cannot drift apart
(`tests/test_prose.py`).
"""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"


def md(text: str):
    """Show `text` as Markdown: a sentence whose numbers are the variables beside it."""
    from IPython.display import Markdown, display
    display(Markdown(text))


def hopper_gpu() -> str | None:
    """The Hopper GPU's name, or None (no torch, no CUDA, not sm_90)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available() or torch.cuda.get_device_capability(0)[0] != 9:
        return None
    return torch.cuda.get_device_name(0)


def measured(subcommand: str, gpu: str = "h200") -> dict | None:
    """The committed results of `python -m instruments.bench <subcommand>` on `gpu`, or None."""
    for path in (RESULTS / f"{gpu}.json", RESULTS / f"{gpu}-{subcommand}.json"):
        if path.exists():
            data = json.loads(path.read_text())
            if subcommand in data:
                return data[subcommand]
            if "rows" in data:
                return data
    return None


def live_gemm(variants, size: int = 8192) -> dict[str, float]:
    """Time our Gluon GEMMs and torch.matmul (cuBLAS) at size³ fp16 in one run on this GPU:
    TFLOP/s, do_bench medians, fresh random inputs, each checked against cuBLAS first."""
    import torch

    import kernels
    from instruments.bench import measure, rel_error

    a = torch.randn(size, size, device="cuda", dtype=torch.float16)
    b = torch.randn(size, size, device="cuda", dtype=torch.float16)
    ref = (a.double() @ b.double())
    flops = 2.0 * size ** 3
    out = {"cublas": measure(lambda: a @ b, flops)["tflops"]}
    for v in variants:
        c = kernels.gemm(a, b, variant=v)
        err = rel_error(c, ref)
        if err > 3e-3:
            raise AssertionError(f"{v}: relative error {err:.1e} against float64")
        out[v] = measure(lambda v=v: kernels.gemm(a, b, variant=v), flops)["tflops"]
    return out


def live_attention(variants=("fa3",), batch=2, heads=16, seqlen=8192, headdim=128) -> dict:
    """Time our Gluon attention variants beside SDPA's flash (FA2) and cuDNN backends in one run:
    TFLOP/s (4·B·H·S²·d), do_bench medians, fresh random inputs, ours checked against SDPA first."""
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.functional import scaled_dot_product_attention as sdpa

    from kernels.attention import attention
    from instruments.bench import measure, rel_error

    q, k, v = (torch.randn(batch, heads, seqlen, headdim, device="cuda", dtype=torch.float16)
               for _ in range(3))
    flops = 4.0 * batch * heads * seqlen ** 2 * headdim
    out = {}
    for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION),
                          ("cudnn", SDPBackend.CUDNN_ATTENTION)):
        with sdpa_kernel(backend):
            ref = sdpa(q, k, v)
            out[name] = measure(lambda: sdpa(q, k, v), flops)["tflops"]
    for variant in variants:
        err = rel_error(attention(q, k, v, variant=variant), ref.double())
        if err > 1e-2:
            raise AssertionError(f"{variant}: relative error {err:.1e} against SDPA")
        out[variant] = measure(lambda variant=variant: attention(q, k, v, variant=variant),
                               flops)["tflops"]
    return out


def gemm_ladder(variants) -> dict[str, float]:
    """TFLOP/s at 8192³ fp16 of `variants` and cuBLAS: live on a Hopper GPU, else the best of the
    committed H200 measurements; prints which. Empty if neither exists."""
    gpu = hopper_gpu()
    if gpu:
        best = live_gemm(variants)
        print(f"measured live on {gpu}, 8192³ fp16:")
    elif (res := measured("gemm")) is not None:
        best = best_by_variant(res["rows"], M=8192, N=8192, K=8192, dtype="float16")
        print(f"no Hopper GPU here: the committed measurements of {res['environment']['gpu']} "
              f"({res['environment']['date']}), best per variant at 8192³ fp16:")
    else:
        print("no Hopper GPU here and no committed GEMM measurements yet")
        return {}
    for v in (*variants, "cublas"):
        if v in best:
            print(f"  {v:12s} {best[v]:6.0f} TFLOP/s")
    return best


def best_by_variant(rows: list[dict], **where) -> dict[str, float]:
    """The best TFLOP/s each variant reached among the rows matching `where` (e.g. M=8192)."""
    best: dict[str, float] = {}
    for r in rows:
        if all(r.get(k) == v for k, v in where.items()) and r.get("ok", True) and "tflops" in r:
            best[r["variant"]] = max(best.get(r["variant"], 0.0), r["tflops"])
    return best


def explore(fn, **sliders) -> None:
    """Redraw `fn(**values)` from sliders (ipywidgets), each given as (min, max, step, value).
    Without ipywidgets, say so: the chapter's static figures tell the same story."""
    try:
        from ipywidgets import IntSlider, interact
    except ImportError:
        print("ipywidgets is not installed: the static figures above tell the same story")
        return
    interact(fn, **{name: IntSlider(min=lo, max=hi, step=step, value=value, description=name)
                    for name, (lo, hi, step, value) in sliders.items()})


# --- the kernel beside the model (chapters 02-04) -----------------------------------------------
# What running a chapter's kernel needs, said where no Hopper GPU is found.
KERNELS_NEED = ("a Hopper GPU (sm_90a: H100 or H200) with CUDA, and the kernels' packages "
                "(triton 3.6.0, torch): `pip install -e '.[kernels]'` in the course repository, "
                "`pip install -r requirements-kernels.txt` in the student release")


def kernel_file(pair) -> str:
    """The file of a pair's kernel consumer (`fidelity.pairs`: a `Source`, or a function)."""
    import inspect

    kernel = pair[2]
    if hasattr(kernel, "path"):
        return kernel.path
    return str(Path(inspect.getsourcefile(getattr(kernel, "fn", kernel))).relative_to(ROOT))


def beside(pair, model_name: str, kernel_name: str):
    """The model's consumer and the kernel's, step by step, as each file spells them: the steps
    are read from the functions' source (`fidelity.pairs.steps`), never typed here."""
    from IPython.display import HTML

    from fidelity.pairs import diff_table, steps

    model, model_switches, kernel, kernel_switches = pair
    return HTML(diff_table(steps(model, **model_switches), steps(kernel, **kernel_switches),
                           model_name, kernel_name))


def run_kernels(workload: str, variants) -> dict[str, float] | None:
    """On a Hopper GPU: time `variants` of `workload` ("attention" or "gemm") beside their peers
    (SDPA's flash and cuDNN backends, or cuBLAS), each checked for correctness first, and print
    TFLOP/s. Without one, say what running them needs and return None."""
    gpu = hopper_gpu()
    if gpu is None:
        print(f"No Hopper GPU here, so the kernels do not run. Running "
              f"{', '.join(variants)} ({workload}) needs {KERNELS_NEED}.")
        return None
    if workload == "attention":
        out = live_attention(tuple(variants))
        print(f"measured live on {gpu}: attention, batch 2, 16 heads, S 8192, d 128, fp16")
    else:
        out = live_gemm(list(variants))
        print(f"measured live on {gpu}: GEMM 8192³ fp16")
    for name, tf in out.items():
        print(f"  {name:12s} {tf:6.0f} TFLOP/s")
    return out


def explore_options(fn, name: str, options: dict, value: str | None = None) -> None:
    """Redraw `fn(**options[label])` from one slider over the labels: only the settings listed,
    so every step of the slider is one that runs (ipywidgets' SelectionSlider)."""
    try:
        from ipywidgets import SelectionSlider, interact
    except ImportError:
        print("ipywidgets is not installed: the static figures above tell the same story")
        return
    labels = list(options)
    interact(lambda **kw: fn(**options[kw[name]]),
             **{name: SelectionSlider(options=labels, value=value or labels[len(labels) // 2],
                                      description=name, continuous_update=False,
                                      layout={"width": "600px"})})
