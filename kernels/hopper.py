"""Host-side pieces every kernel family shares: is this a Hopper GPU, and Gluon's name for a
torch dtype."""
from __future__ import annotations

import functools

from triton.experimental.gluon import language as gl


def require_hopper(tensors: dict) -> None:
    """Raise ValueError unless every tensor in `tensors` (name -> tensor) sits on one CUDA
    device of compute capability 9.0 (wgmma, TMA and setmaxnreg are sm_90a instructions)."""
    import torch

    names = " and ".join(", ".join(tensors).rsplit(", ", 1))
    devs = {t.device for t in tensors.values()}
    if any(d.type != "cuda" for d in devs):
        raise ValueError(f"{names} must be on a CUDA device (a Hopper sm_90 GPU); "
                         f"got {', '.join(str(t.device) for t in tensors.values())}")
    if len(devs) != 1:
        raise ValueError(f"{names} must be on the same device; got {sorted(map(str, devs))}")
    dev = next(iter(devs))
    cap = torch.cuda.get_device_capability(dev)
    if cap != (9, 0):
        raise ValueError(f"these kernels need a Hopper GPU (sm_90: wgmma, TMA, setmaxnreg); "
                         f"{torch.cuda.get_device_name(dev)} is sm_{cap[0]}{cap[1]}")


def gl_dtype(torch_dtype):
    import torch

    return {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}[torch_dtype]


@functools.cache
def smem_layout(block: tuple, torch_dtype):
    """The shared-memory layout of a TMA box (``NVMMASharedLayout.get_default_for``): ~7-10 us
    to build, so cached, or every short launch pays it once a descriptor on the host."""
    return gl.NVMMASharedLayout.get_default_for(list(block), gl_dtype(torch_dtype))


# What a TMA descriptor can address in place (CUDA driver API, cuTensorMapEncodeTiled: the global
# address 16-byte aligned, every stride but the innermost's a multiple of 16 bytes; the innermost
# dimension is contiguous, as the descriptor has no stride for it). A stride of 0 (a broadcast
# view) is refused too: nothing here needs it, and an output with one would race with itself.
TMA_RULE = ("the last dimension contiguous (stride 1), every other stride a positive multiple "
            "of 16 bytes and the first element 16-byte aligned (what a TMA descriptor can "
            "address)")


def tma_strides(t) -> tuple[int, ...]:
    """``t``'s strides, each dimension of size 1 given its row-major stride (the product of the
    sizes and strides inside it): torch leaves such a stride arbitrary, and it is never used."""
    strides = list(t.stride())
    for i in reversed(range(t.dim())):
        if t.shape[i] == 1:
            strides[i] = 1 if i == t.dim() - 1 else strides[i + 1] * t.shape[i + 1]
    return tuple(strides)


def check_tma(name: str, t) -> None:
    """Raise ValueError naming ``TMA_RULE`` unless a TMA descriptor can address ``t`` in place."""
    strides = tma_strides(t)
    size = t.element_size()
    if strides[-1] != 1 or any(s <= 0 or s * size % 16 for s in strides[:-1]):
        raise ValueError(f"{name} must have {TMA_RULE}; got shape {tuple(t.shape)}, stride "
                         f"{t.stride()} ({size} bytes an element)")
    check_start(name, t)


def check_start(name: str, t) -> None:
    """Raise ValueError unless ``t`` starts 16-byte aligned (the part of ``TMA_RULE`` a launch
    plan's key cannot hold: ``kernels/plans.py``)."""
    if t.data_ptr() % 16:
        raise ValueError(f"{name} must start at a 16-byte aligned address (TMA: {TMA_RULE}); "
                         f"got {t.data_ptr():#x}")
