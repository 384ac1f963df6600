"""Hopper attention forward in Gluon, one module per schedule (names and order of operations as
in ``sim/attention/``): O = softmax(Q·Kᵀ·scale)·V and the row logsumexp.

    sequential   load a block, wait, compute; one slot per ring
    pipelined    s-stage K and V rings filled in-line by the compute warps
    ws           producer warp + consumer warpgroups (64 rows each), setmaxnreg
    ws_pingpong  ws + the consumers take turns on the tensor cores (mbarrier turns)
    overlap      Q·K_{j}ᵀ and P_{j-1}·V_{j-1} async back to back, softmax under them; no roles
    fa3          ws + ws_pingpong + overlap (``persistent=True``: one CTA per SM, ``persistent.py``)

Shared pieces: ``host`` (configuration, checks, descriptors, launcher, CPU compile), ``steps``
(the device steps the schedules are built of), ``partitions`` (shared memory, the producer, the
warp-specialized or single-partition region); ``kernels/ring.py`` (ring slots and turns, shared
with the GEMMs).

>>> from kernels.attention import attention
>>> o = attention(q, k, v, causal=True, variant="fa3")            # (batch, heads, seq, d)
>>> o, lse = attention(q, k, v, return_lse=True)
>>> o = attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))  # FA3's (b, s, h, d)
"""
from __future__ import annotations

from . import fa3, host, overlap, pipelined, sequential, ws, ws_pingpong
from .. import plans
from ..hopper import check_start, check_tma
from .host import FENCES, HEAD_DIMS, SOFTMAX_SWITCHES, VARIANTS, check_inputs, config, flops

KERNELS = {
    "sequential": sequential.sequential_kernel,
    "pipelined": pipelined.pipelined_kernel,
    "ws": ws.ws_kernel,
    "ws_pingpong": ws_pingpong.ws_pingpong_kernel,
    "overlap": overlap.overlap_kernel,
    "fa3": fa3.fa3_kernel,
}


def attention(q, k, v, causal: bool = False, variant: str = "fa3", scale: float | None = None,
              stages: int | None = None, tile: tuple[int, int] | None = None,
              return_lse: bool = False, out=None, fence=True, softmax=None,
              persistent: bool | None = None):
    """Attention forward on a Hopper GPU with the named schedule.

    q, k, v: (batch, heads, seq, d), all torch.float16 or all torch.bfloat16, the same shape,
    on one CUDA sm_90 device; d in 64, 128, 256; any seq >= 1. Any layout a TMA descriptor can
    address (``kernels/hopper.py``'s ``TMA_RULE``: last dim contiguous, other strides multiples
    of 16 bytes, 16-byte aligned start) is read in place, never copied: contiguous, FA3's
    (batch, seq, heads, d) handed in as ``x.transpose(1, 2)``, a slice of a packed QKV, a sliced
    head dim. O is ``torch.empty_like(q)`` (q's layout where q is dense, FA3's included) unless
    ``out`` (the same shape and dtype, any such layout) is given.
    ``scale`` defaults to 1/sqrt(d). ``stages``: K/V ring depth (variant default if None);
    ``tile=(BM, BN)`` overrides the tile (experiments; fa3's BN may be 80, FA3's d 256 tile, a
    K/V block held as a 64-row and a 16-row piece: ``boxes.py``). Returns O (input dtype) or, with
    ``return_lse``, (O, LSE) with LSE float32 (batch, heads, seq), natural log. ``fence``
    (overlap, fa3): True (default), False or "hoisted", where the wait for P·V goes
    (``overlap.py``). ``softmax`` (overlap, fa3): names from ``SOFTMAX_SWITCHES`` ("tree_max",
    "lane_sum": the softmax's shorter chains; "rescale_early": O rescaled under Q·Kᵀ;
    "cond_rescale": FA4's conditional rescaling, O rescaled only when a max moved by > 2^8;
    "poly_exp": a quarter of the exps as a cubic on the FMA pipe (FA4's move); "live_half":
    causal, a block whose right half is all masked takes its left half alone; fa3 only:
    "no_turns", no turns on the tensor cores, "one_release", one arrive a block frees K_j and
    V_{j-1}, "named_turns", the turns on named barriers; ``steps.py``), replacing
    ``host.SOFTMAX_DEFAULT`` (None: the default at d and launch: lane_sum and tree_max at d 256,
    no_turns on d 64's persistent launch). ``persistent`` (fa3):
    one CTA per SM over a list of tiles (``persistent.py``); ``"pairs"``: the same, its causal
    tiles in pairs m, n_m-1-m of one head (``persistent.cta_tile``); an int n: persistent with
    at most n CTAs (tests: many tiles a CTA on small problems); the persistent build takes the
    softmax switches in ``host.PERSISTENT_SOFTMAX`` and refuses the others. None, with no
    ``tile`` or ``stages`` named, the default fence and softmax switches from
    ``host.PERSISTENT_SOFTMAX`` only: ``host.launch_defaults``'s rule (fa3
    causal in pairs up to S 4K at d 64 and S 8448 beyond; not causal persistent at S <= 1K;
    d 64's persistent launches at 128x128); otherwise not persistent.
    Raises TypeError/ValueError for anything else. A second call with the same shapes,
    strides, dtype, device and options launches by the first one's plan (``kernels/plans.py``).
    """
    key = plans.key((q, k, v, out), (causal, variant, scale, stages, tile, fence, softmax,
                                     persistent))
    plan = _PLANS.get(key)
    if plan is not None:
        return _again(plan, q, k, v, out, return_lse)
    check_inputs(q, k, v, variant)
    host.fence_args(KERNELS[variant], fence)  # before any allocation
    host.softmax_args(KERNELS[variant], softmax)
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool; got {type(causal).__name__}")
    ctas = None
    B, H, S, D = q.shape
    tile, persistent = host.launch_defaults(variant, D, S, causal, tile=tile, stages=stages,
                                            softmax=softmax, fence=fence, persistent=persistent)
    if isinstance(persistent, int) and not isinstance(persistent, bool):
        if persistent < 1:
            raise ValueError(f"persistent: True, False, 'pairs' or a CTA count >= 1; got "
                             f"{persistent}")
        ctas, persistent = persistent, True
    host.persistent_args(KERNELS[variant], persistent)
    host.check_persistent_softmax(persistent, softmax)
    cfg = config(variant, D, causal, stages, tile, persistent)
    scale = host.default_scale(D) if scale is None else float(scale)
    if not scale > 0:
        raise ValueError(f"scale must be positive; got {scale}")
    import torch

    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or out.device != q.device:
        raise ValueError(f"out must be a {tuple(q.shape)} {q.dtype} tensor on {q.device}")
    check_tma("out", out)
    lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
    _PLANS.put(key, host.launch(KERNELS[variant], q, k, v, out, lse, cfg, causal, scale,
                                fence=fence, softmax=softmax, ctas=ctas))
    return (out, lse) if return_lse else out


_PLANS = plans.Plans()


def _again(plan, q, k, v, out, return_lse: bool):
    """``attention`` by a plan: the key holds every check but the tensors' start addresses."""
    import torch

    for name, t in (("q", q), ("k", k), ("v", v)):
        check_start(name, t)
    if out is None:
        out = torch.empty_like(q)
    else:
        check_start("out", out)
    lse = torch.empty(q.shape[:3], dtype=torch.float32, device=q.device)
    host.relaunch(plan, q, k, v, out, lse)
    return (out, lse) if return_lse else out


__all__ = ["FENCES", "HEAD_DIMS", "KERNELS", "SOFTMAX_SWITCHES", "VARIANTS", "attention", "check_inputs", "config",
           "flops"]
