"""CUDA C++ twins of the Gluon kernels, written with the raw Hopper instructions (inline PTX):

    gemm_ws.cu           the ``ws`` GEMM: producer warpgroup + 2 consumer warpgroups, 128x256x64
                         tiles, a 3-stage TMA ring on mbarriers, persistent, setmaxnreg
    gemm_ws_pingpong.cu  the ``ws_pingpong`` GEMM: 128x128 tiles, one per consumer, turns on
                         named barriers, 4-stage ring
    gemm.cuh             what both GEMMs share: producer, ring layout, tile order, host launch
    attention_fa3.cu     the ``fa3`` attention forward: producer + 2 (or 3) consumers, K and V
                         rings, intra-warpgroup overlap, pingpong on named barriers; the tile
                         a template parameter: d 128 at 128x128 and FA3's tiles (ATTENTION_TILES);
                         a persistent launch at PERSISTENT_TILES (the Gluon fa3's tile order)
    attention.cuh        its consumer's steps: qk, softmax, rescale, pack, pv
    ring.cuh             produce / acquire / release on a ring, wait_turn / pass_turn
    staging.cuh          the epilogue's swizzled staging of an accumulator
    hopper.cuh, ptx/     the PTX wrappers, one header per kind (mbarrier, TMA, wgmma, ...)

Built on first use by ``torch.utils.cpp_extension.load`` (ninja, nvcc with
``-gencode=arch=compute_90a,code=sm_90a``) as a plain shared library, called through ctypes.
The inputs are checked by the same functions as the Gluon kernels' (``kernels.gemm.check_inputs``,
``kernels.attention.check_inputs``), so the errors read the same; the twins then also need them
contiguous (``require_contiguous``: they index raw pointers, where the Gluon kernels read any
layout a TMA descriptor can address).

>>> from kernels import cuda
>>> c = cuda.gemm(a, b)                                  # a: M x K, b: K x N
>>> o, lse = cuda.attention(q, k, v, causal=True, return_lse=True)   # (B, H, S, 128)
>>> o = cuda.attention(q, k, v, tile="fa3")            # FA3's own tile: 128x176 at d 128
>>> o = cuda.attention(q, k, v, cond_rescale=True)     # FA4's conditional rescaling (d 128)
>>> o = cuda.attention(q, k, v, causal=True, persistent=True)  # one CTA an SM, tiles in pairs
"""
from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

from ..tiles import TILES

HERE = Path(__file__).resolve().parent
SOURCES = ("gemm_ws.cu", "gemm_ws_pingpong.cu", "attention_fa3.cu")
HEADERS = ("hopper.cuh", "ptx/math.cuh", "ptx/mbarrier.cuh", "ptx/schedule.cuh", "ptx/smem.cuh",
           "ptx/sync.cuh", "ptx/tma.cuh", "ptx/wgmma.cuh", "ring.cuh", "staging.cuh", "gemm.cuh",
           "attention.cuh", "twins.h", "ptx/wgmma_shapes.cuh")
# -gencode with the "a" target: wgmma and setmaxnreg exist only in sm_90a. (Naming the arch
# here also keeps torch from adding its own plain sm_90 pass, which would reject them.)
NVCC_FLAGS = ("-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-lineinfo")
GEMM_VARIANTS = ("ws", "ws_pingpong")
GEMM_STAGES = {"ws": (3, 2), "ws_pingpong": (4, 5)}  # the first is the default
HEAD_DIM = 128  # the head dim of the first twin (its default tile: 128 x 128)
# The attention instances, (block_m, block_n) per head dim, the default first (attention_fa3.cu
# builds the same list). FA3_TILES: FlashAttention-3's own tiles, the "fa3" table of sim/tiles.json
# (non-causal; kernels/tiles.py reads it); 176 and 80 are no powers of two, which Gluon's layouts
# cannot hold: the top rung of the ladder only raw PTX reaches.
ATTENTION_TILES = {64: ((192, 128), (128, 128)), 128: ((128, 128), (128, 176)),
                   256: ((128, 80), (128, 64))}
FA3_TILES = {d: (t.block_m, t.block_n) for d, t in TILES["fa3"]["full"].items()}
# The head dims at which the twin is also built with FA4's conditional rescaling (attention.cuh:
# RESCALE_THRESHOLD; attention_fa3.cu: cond_rescale_built), at every tile of that dim. Off by
# default: cuda.attention(..., cond_rescale=True) picks it.
COND_RESCALE_DIMS = (128,)
# The tiles the twin is also built persistent at (attention_fa3.cu: persistent_built): min(SMs,
# tiles) CTAs walking the tiles in the Gluon persistent fa3's order (kernels/attention/
# persistent.py; causal: "pairs"), without turns. d 64's 128x128 is the Gluon fa3's persistent
# tile there (kernels/attention/host.py: SHORT_TILE). cuda.attention(..., persistent=True).
PERSISTENT_TILES = {64: ((128, 128), (192, 128)), 128: ((128, 128),), 256: ((128, 80), (128, 64))}
# ws only, stages 3: A/B variants for the benchmark (gemm_ws.cu, enum Ablation; their rows in
# results/h200-cuda.json). "stsm": the epilogue staged with stmatrix.x4 (the default stages with
# st.shared.b32); "lockstep": both consumers bar.sync each k-step and one thread releases the
# slot, as the Gluon ws compiles; "l2_128": the default kernel with TMA descriptors asking L2 for
# 128-byte promotion (Triton's) instead of 256.
GEMM_ABLATIONS = {None: 0, "stsm": 1, "lockstep": 2, "l2_128": 3}


@functools.cache
def library() -> ctypes.CDLL:
    """Build (once; ninja rebuilds only when a source changed) and load the shared library."""
    from torch.utils import cpp_extension

    build = Path(os.environ.get("KERNELS_CUDA_BUILD", HERE / "build"))
    build.mkdir(parents=True, exist_ok=True)
    path = cpp_extension.load(
        name="hopper_cuda_twins", sources=[str(HERE / s) for s in SOURCES],
        extra_cuda_cflags=list(NVCC_FLAGS), extra_include_paths=[str(HERE)],
        build_directory=str(build), is_python_module=False, verbose=False)
    lib = ctypes.CDLL(str(path))
    p, i, b, f = ctypes.c_void_p, ctypes.c_int, ctypes.c_bool, ctypes.c_float
    lib.twin_gemm_ws.argtypes = [p, p, p, i, i, i, b, i, i, i, p]  # + ablation
    lib.twin_gemm_ws_pingpong.argtypes = [p, p, p, i, i, i, b, i, i, p]
    for fn in (lib.twin_gemm_ws, lib.twin_gemm_ws_pingpong):
        fn.restype = ctypes.c_char_p
    lib.twin_attention_fa3.argtypes = [p, p, p, p, p, i, i, i, i, i, f, b, b, b, b, i, p]
    lib.twin_attention_fa3.restype = ctypes.c_char_p
    return lib


def _raise_on(err: bytes | None, what: str) -> None:
    if err is not None:
        raise RuntimeError(f"{what}: {err.decode()}")


def _stream(device) -> int:
    import torch

    return torch.cuda.current_stream(device).cuda_stream


@functools.cache
def _sm_count(index: int) -> int:
    import torch

    return torch.cuda.get_device_properties(index).multi_processor_count


def require_contiguous(tensors: dict) -> None:
    """Raise ValueError unless every tensor (name -> tensor) is contiguous: the twins index raw
    pointers row-major (the Gluon kernels, whose checks they share, also take other layouts)."""
    for name, t in tensors.items():
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (row-major) for the CUDA twins; got "
                             f"shape {tuple(t.shape)}, stride {t.stride()}")


def gemm(a, b, variant: str = "ws", stages: int | None = None, out=None,
         ablation: str | None = None):
    """C = A @ B with a CUDA twin: ``variant`` "ws" (cooperative, 128x256 tiles, 3 stages) or
    "ws_pingpong" (128x128 tiles, 4 stages). a (M, K), b (K, N), both fp16 or both bf16,
    contiguous, 16-byte aligned, on one CUDA sm_90 device; M, N, K positive multiples of 8.
    ``ablation`` ("stsm", "lockstep" or "l2_128"; ws with 3 stages only): see GEMM_ABLATIONS.
    Returns C (M, N) in the input dtype. Raises TypeError/ValueError otherwise."""
    from kernels.gemm import check_inputs
    from kernels.hopper import require_hopper

    if variant not in GEMM_VARIANTS:
        raise ValueError(f"variant must be one of {', '.join(GEMM_VARIANTS)}; got {variant!r}")
    check_inputs(a, b, variant, require_gpu=False)
    require_contiguous({"a": a, "b": b})
    stages = GEMM_STAGES[variant][0] if stages is None else stages
    if stages not in GEMM_STAGES[variant]:
        raise ValueError(f"cuda {variant}: stages must be in {GEMM_STAGES[variant]}; got {stages}")
    if ablation not in GEMM_ABLATIONS:
        raise ValueError(f"ablation must be one of {list(GEMM_ABLATIONS)}; got {ablation!r}")
    if ablation is not None and (variant, stages) != ("ws", 3):
        raise ValueError(f"ablation {ablation!r} exists for ws with 3 stages only")
    require_hopper({"a": a, "b": b})
    import torch

    M, K = a.shape
    N = b.shape[1]
    if out is None:
        out = torch.empty((M, N), dtype=a.dtype, device=a.device)
    elif out.shape != (M, N) or out.dtype != a.dtype or not out.is_contiguous() or out.device != a.device:
        raise ValueError(f"out must be a contiguous {M} x {N} {a.dtype} tensor on {a.device}")
    lib = library()
    args = (a.data_ptr(), b.data_ptr(), out.data_ptr(), M, N, K, a.dtype == torch.bfloat16, stages)
    with torch.cuda.device(a.device):
        if variant == "ws":
            err = lib.twin_gemm_ws(*args, GEMM_ABLATIONS[ablation], _sm_count(a.device.index),
                                   _stream(a.device))
        else:
            err = lib.twin_gemm_ws_pingpong(*args, _sm_count(a.device.index), _stream(a.device))
    _raise_on(err, f"cuda gemm {variant}")
    return out


def resolve_tile(d: int, tile: tuple[int, int] | str | None = None) -> tuple[int, int]:
    """The (block_m, block_n) of ``tile`` at head dim d: None -> the default, "fa3" -> FA3's."""
    if tile is None:
        return ATTENTION_TILES[d][0]
    if tile == "fa3":
        return FA3_TILES[d]
    if isinstance(tile, str) or tuple(tile) not in ATTENTION_TILES[d]:
        raise ValueError(f"tile at head dim {d} must be None, 'fa3' or one of "
                         f"{ATTENTION_TILES[d]}; got {tile!r}")
    return tuple(tile)


def check_persistent(d: int, tile: tuple[int, int], persistent: bool, cond_rescale: bool,
                     sms: int | None) -> None:
    """Raise TypeError/ValueError unless ``persistent`` (a bool) has a build at head dim d and
    ``tile`` (PERSISTENT_TILES, no conditional rescaling), and ``sms`` (the persistent grid's
    CTAs at most; None: the device's SMs) is None or a positive int given with persistent."""
    if not isinstance(persistent, bool):
        raise TypeError(f"persistent must be a bool; got {type(persistent).__name__}")
    if sms is not None:
        if not persistent:
            raise ValueError("sms is the persistent grid's size: pass it with persistent=True")
        if isinstance(sms, bool) or not isinstance(sms, int) or sms < 1:
            raise ValueError(f"sms must be a positive int; got {sms!r}")
    if not persistent:
        return
    if tile not in PERSISTENT_TILES.get(d, ()):
        raise ValueError(f"persistent=True is built at head dim {d} for tiles "
                         f"{PERSISTENT_TILES.get(d, ())} only; got {tile}")
    if cond_rescale:
        raise ValueError("cond_rescale has no persistent build: pass persistent=False")


def attention(q, k, v, causal: bool = False, scale: float | None = None,
              return_lse: bool = False, out=None, tile: tuple[int, int] | str | None = None,
              cond_rescale: bool = False, persistent: bool = False, sms: int | None = None):
    """Attention forward with the CUDA ``fa3`` twin. q, k, v: (batch, heads, seq, d), d 64, 128
    or 256, all fp16 or all bf16, the same shape, contiguous, 16-byte aligned, on one CUDA sm_90
    device; any seq >= 1. ``tile``: (block_m, block_n), one of ATTENTION_TILES[d]; None: the
    first of them (d 128: 128 x 128, the twin results/h200-cuda.json measures); "fa3": FA3's
    own (FA3_TILES). ``scale`` defaults to 1/sqrt(d). ``cond_rescale``: FA4's conditional
    rescaling (a row keeps a stale max within 2^8 of the true one; a warp whose rows all kept
    theirs skips O *= alpha), head dims COND_RESCALE_DIMS only. ``persistent``: min(SMs, tiles)
    CTAs each walking tiles in the Gluon persistent fa3's order (causal: in pairs), at the tiles
    of PERSISTENT_TILES; ``sms`` caps that grid below the device's SM count (the tests force many
    tiles a CTA with it). Returns O, or (O, LSE) with LSE float32 (batch, heads, seq), natural
    log. Raises TypeError/ValueError otherwise."""
    from kernels.attention import check_inputs, host
    from kernels.hopper import require_hopper

    check_inputs(q, k, v, "fa3", require_gpu=False)
    require_contiguous({"q": q, "k": k, "v": v})
    if not isinstance(causal, bool):
        raise TypeError(f"causal must be a bool; got {type(causal).__name__}")
    B, H, S, D = q.shape
    if D not in ATTENTION_TILES:
        raise ValueError(f"the CUDA fa3 twin is written for head dim 64, 128 or 256; got {D}")
    tile = resolve_tile(D, tile)
    if not isinstance(cond_rescale, bool):
        raise TypeError(f"cond_rescale must be a bool; got {type(cond_rescale).__name__}")
    if cond_rescale and D not in COND_RESCALE_DIMS:
        raise ValueError(f"cond_rescale is built at head dim {COND_RESCALE_DIMS} only; got {D}")
    check_persistent(D, tile, persistent, cond_rescale, sms)
    scale = host.default_scale(D) if scale is None else float(scale)
    if not scale > 0:
        raise ValueError(f"scale must be positive; got {scale}")
    require_hopper({"q": q, "k": k, "v": v})
    import torch

    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or not out.is_contiguous() or out.device != q.device:
        raise ValueError(f"out must be a contiguous {tuple(q.shape)} {q.dtype} tensor on {q.device}")
    lse = torch.empty((B, H, S), dtype=torch.float32, device=q.device)
    lib = library()
    sms = _sm_count(q.device.index) if sms is None else sms
    with torch.cuda.device(q.device):
        err = lib.twin_attention_fa3(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                                     lse.data_ptr(), B * H, S, D, *tile, scale, causal,
                                     q.dtype == torch.bfloat16, cond_rescale, persistent, sms,
                                     _stream(q.device))
    _raise_on(err, "cuda attention_fa3")
    return (out, lse) if return_lse else out


__all__ = ["ATTENTION_TILES", "COND_RESCALE_DIMS", "FA3_TILES", "GEMM_ABLATIONS", "GEMM_STAGES",
           "GEMM_VARIANTS", "HEADERS", "HEAD_DIM", "NVCC_FLAGS", "PERSISTENT_TILES", "SOURCES",
           "attention", "gemm", "library"]
