"""What the chapters share: the committed measurements, and whether a Hopper GPU is here.

A chapter's GPU section runs live when `hopper_gpu()` names a GPU; otherwise it plots what
`measured()` finds in `kernels/results/` and says so.
"""
from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "kernels" / "results"


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
    """The committed results of `python -m kernels.bench <subcommand>` on `gpu`, or None."""
    for path in (RESULTS / f"{gpu}.json", RESULTS / f"{gpu}-{subcommand}.json"):
        if path.exists():
            data = json.loads(path.read_text())
            if subcommand in data:
                return data[subcommand]
            if "rows" in data:
                return data
    return None


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
