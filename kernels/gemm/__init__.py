"""Hopper GEMM in Gluon, one module per schedule: C = A @ B, fp16/bf16 in, fp32 accumulate,
C in the input dtype.

    sequential   load a k-step, wait, wgmma; one stage, no overlap
    pipelined    an s-stage TMA ring issued by the compute warps themselves
    ws           producer warp + two cooperating consumer warpgroups, setmaxnreg, persistent
    ws_pingpong  ws + each consumer owns a tile; turn barriers put one's epilogue under the
                 other's wgmmas

Each consumer takes the steps of its model in ``sim/gemm/`` in the same order, on
``kernels/ring.py``'s ``Ring``/``Turns`` and ``tile.py``'s ``Tile`` (``sequential`` indexes its one
slot by hand).

>>> from kernels import gemm
>>> c = gemm(a, b, variant="ws_pingpong")           # a: M x K, b: K x N, CUDA, sm_90
>>> c = gemm(a, b, variant="auto")                  # schedule, tile, L2 group by shape
>>> c = gemm(x, w.t())                              # w: an (N, K) weight, read as it lies
"""
from __future__ import annotations

from . import auto, common, pipelined, sequential, ws, ws_pingpong
from .. import plans
from ..hopper import check_start, check_tma
from .common import VARIANTS, check_inputs

AUTO = "auto"  # gemm(variant="auto"): schedule, tile and L2 group chosen by shape (auto.py)

MODULES = {"sequential": sequential, "pipelined": pipelined, "ws": ws, "ws_pingpong": ws_pingpong}
KERNELS = {
    "sequential": sequential.sequential_kernel,
    "pipelined": pipelined.pipelined_kernel,
    "ws": ws.ws_kernel,
    "ws_pingpong": ws_pingpong.ws_pingpong_kernel,
}


def config(variant: str, stages: int | None = None, persistent: bool | None = None,
           tile: tuple[int, int, int] | None = None, group_m: int | None = None) -> common.Config:
    """The launch configuration of ``variant`` (raises ValueError for stages it cannot take).
    ``tile=(BM, BN, BK)`` overrides the variant's tile (for experiments; checked again);
    ``group_m``: row blocks per L2 group of the tile order (``common.tile_coords``; default 8)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    mod = MODULES[variant]
    cfg = mod.config(stages, persistent)
    if tile is not None:
        cfg = common.retile(cfg, tile)
        cfg.check(variant, mod.STAGES_ALLOWED)
    if group_m is not None:
        cfg = common.regroup(cfg, group_m)
    return cfg


def gemm(a, b, variant: str = "ws_pingpong", stages: int | None = None,
         persistent: bool | None = None, out=None, tile: tuple[int, int, int] | None = None,
         group_m: int | None = None):
    """C = A @ B on a Hopper GPU with the named schedule.

    a: (M, K), b: (K, N), both torch.float16 or both torch.bfloat16, on one CUDA sm_90 device;
    M, N, K positive multiples of 8. Read in place, never copied: a row-major with any row
    stride TMA can address (``kernels/hopper.py``'s ``TMA_RULE``), b row-major so, or stored
    transposed (an (N, K) weight ``w`` handed in as ``w.t()``: loaded as it lies, fed to wgmma
    through its transpose, ``common.b_operand``). ``out`` (M, N) may have any such row stride. Returns C (M, N) in
    the input dtype (fp32 accumulation). ``variant="auto"`` picks schedule, tile and L2 group
    from the shape (``auto.choose``; ``stages``, ``persistent``, ``tile`` and ``group_m`` must
    then be None). ``stages``: ring depth (variant default if None). ``persistent``: ws
    variants only (default True). ``tile``: (BM, BN, BK) override, for experiments.
    ``group_m``: row blocks per L2 group (default 8). Raises TypeError/ValueError otherwise.
    A second call with the same shapes, strides, dtype, device and options launches by the
    first one's plan (``kernels/plans.py``).
    """
    key = plans.key((a, b, out), (variant, stages, persistent, tile, group_m))
    plan = _PLANS.get(key)
    if plan is not None:
        return _again(plan, a, b, out)
    if variant == AUTO:
        if any(x is not None for x in (stages, persistent, tile, group_m)):
            raise ValueError("variant='auto' chooses stages, tile and group_m itself: "
                             "leave them None")
        check_inputs(a, b, "ws")
        pick = auto.choose(a.shape[0], b.shape[1], a.shape[1], dtype=a.dtype)
        variant, stages, tile, group_m = pick.variant, pick.stages, pick.tile, pick.group_m
    check_inputs(a, b, variant)
    cfg = config(variant, stages, persistent, tile, group_m)  # validates before any allocation
    M, N = a.shape[0], b.shape[1]
    if out is None:
        import torch

        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif out.shape != (M, N) or out.dtype != a.dtype or out.device != a.device:
        raise ValueError(f"out must be a {M} x {N} {a.dtype} tensor on {a.device}")
    else:
        check_tma("out", out)
    _PLANS.put(key, common.launch(KERNELS[variant], a, b, out, cfg))
    return out


_PLANS = plans.Plans()


def _again(plan, a, b, out):
    """``gemm`` by a plan: the key holds every check but the tensors' start addresses."""
    check_start("a", a)
    check_start("b", b)
    if out is None:
        import torch

        out = torch.empty((a.shape[0], b.shape[1]), dtype=a.dtype, device=a.device)
    else:
        check_start("out", out)
    common.relaunch(plan, a, b, out)
    return out


__all__ = ["AUTO", "KERNELS", "VARIANTS", "auto", "check_inputs", "config", "gemm"]
