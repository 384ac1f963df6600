"""Host path probe: the host's microseconds of one ``attention()`` and one ``gemm()`` call, by
their launch plan (``kernels/plans.py``) and the whole way (``plans.unplanned()``), beside the
peers' whole calls (SDPA to cuDNN, torch.matmul to cuBLAS). Each is timed by
``harness.host_us`` (``CALLS`` calls back to back, no synchronisation), as a row's host time is;
on a tiny problem as well, whose GPU time is far below its host time, so that nothing but the
host is timed there.

    python -m instruments.tools.host_path [OUT.json]
"""
import json
import sys

import torch

from instruments.harness import gpu_environment, host_us
from kernels import plans
from kernels.attention import attention
from kernels.gemm import gemm

CALLS = 200
# (d, S, causal, B, H): the grid's S 1K points (B·S 16K, H·d 2048), then a tiny one
ATTENTION = ((64, 1024, True, 16, 32), (128, 1024, True, 16, 16), (256, 1024, False, 16, 8),
             (64, 128, True, 1, 1))
GEMM = (4096, 256)  # M = N = K


def unplanned(fn):
    def call():
        with plans.unplanned():
            return fn()
    return call


def cudnn(q, k, v, causal):
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)


def attention_row(D, S, causal, B, H) -> dict:
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
    fn = lambda: attention(q, k, v, causal=causal)  # noqa: E731
    return {"d": D, "S": S, "causal": causal, "B": B, "H": H,
            "planned_us": host_us(fn, CALLS), "unplanned_us": host_us(unplanned(fn), CALLS),
            "sdpa_cudnn_us": host_us(lambda: cudnn(q, k, v, causal), CALLS)}


def gemm_row(n: int) -> dict:
    a, b = (torch.randn(n, n, device="cuda", dtype=torch.bfloat16) for _ in range(2))
    fn = lambda: gemm(a, b, variant="auto")  # noqa: E731
    return {"M=N=K": n, "planned_us": host_us(fn, CALLS),
            "unplanned_us": host_us(unplanned(fn), CALLS),
            "torch_matmul_us": host_us(lambda: a @ b, CALLS)}


def main() -> None:
    env = gpu_environment()
    if env is None:
        return
    rows = {"attention": [attention_row(*s) for s in ATTENTION],
            "gemm": [gemm_row(n) for n in GEMM]}
    for family, rs in rows.items():
        for r in rs:
            print(family, json.dumps({k: round(x, 1) if isinstance(x, float) else x
                                      for k, x in r.items()}))
    if len(sys.argv) > 1:
        with open(sys.argv[1], "w") as f:
            json.dump({"environment": env, "calls": CALLS, **rows}, f, indent=1)


if __name__ == "__main__":
    main()
