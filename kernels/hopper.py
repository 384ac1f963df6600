"""Host-side pieces every kernel family shares: is this a Hopper GPU, and Gluon's name for a
torch dtype."""
from __future__ import annotations

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
