"""Hopper GEMM in Gluon, one module per schedule: C = A @ B, fp16/bf16 in, fp32 accumulate,
C in the input dtype.

    sequential   load a k-step, wait, wgmma; one stage, no overlap
    pipelined    an s-stage TMA ring issued by the compute warps themselves
    ws           producer warp + two cooperating consumer warpgroups, setmaxnreg, persistent
    ws_pingpong  ws + each consumer owns a tile; turn barriers put one's epilogue under the
                 other's wgmmas

>>> from kernels import gemm
>>> c = gemm(a, b, variant="ws_pingpong")           # a: M x K, b: K x N, CUDA, sm_90
"""
from __future__ import annotations

from . import common, pipelined, sequential, ws, ws_pingpong
from .common import VARIANTS, check_inputs

MODULES = {"sequential": sequential, "pipelined": pipelined, "ws": ws, "ws_pingpong": ws_pingpong}
KERNELS = {
    "sequential": sequential.sequential_kernel,
    "pipelined": pipelined.pipelined_kernel,
    "ws": ws.ws_kernel,
    "ws_pingpong": ws_pingpong.ws_pingpong_kernel,
}


def config(variant: str, stages: int | None = None, persistent: bool | None = None,
           tile: tuple[int, int, int] | None = None) -> common.Config:
    """The launch configuration of ``variant`` (raises ValueError for stages it cannot take).
    ``tile=(BM, BN, BK)`` overrides the variant's tile (for experiments; checked again)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(VARIANTS)}; got {variant!r}")
    mod = MODULES[variant]
    cfg = mod.config(stages, persistent)
    if tile is not None:
        cfg = common.retile(cfg, tile)
        cfg.check(variant, mod.STAGES_ALLOWED)
    return cfg


def gemm(a, b, variant: str = "ws_pingpong", stages: int | None = None,
         persistent: bool | None = None, out=None, tile: tuple[int, int, int] | None = None):
    """C = A @ B on a Hopper GPU with the named schedule.

    a: (M, K), b: (K, N), both torch.float16 or both torch.bfloat16, contiguous, 16-byte
    aligned, on one CUDA sm_90 device; M, N, K positive multiples of 8. Returns C (M, N) in
    the input dtype (fp32 accumulation). ``stages``: ring depth (variant default if None).
    ``persistent``: ws variants only (default True). ``tile``: (BM, BN, BK) override, for
    experiments. Raises TypeError/ValueError otherwise.
    """
    check_inputs(a, b, variant)
    cfg = config(variant, stages, persistent, tile)  # validates stages before any allocation
    M, N = a.shape[0], b.shape[1]
    if out is None:
        import torch

        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif out.shape != (M, N) or out.dtype != a.dtype or not out.is_contiguous() or out.device != a.device:
        raise ValueError(f"out must be a contiguous {M} x {N} {a.dtype} tensor on {a.device}")
    common.launch(KERNELS[variant], a, b, out, cfg)
    return out


__all__ = ["KERNELS", "VARIANTS", "check_inputs", "config", "gemm"]
