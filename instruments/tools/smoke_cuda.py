"""Small calls of both twins, each checked against float64: the first thing a device run does
(a hang or a wrong answer shows here in seconds) and what compute-sanitizer runs under memcheck
and racecheck (``python -m instruments.tools.smoke_cuda``; exit code 1 on a wrong answer)."""
from __future__ import annotations

import math
import sys


def main() -> int:
    import torch

    from kernels import cuda

    torch.manual_seed(0)
    bad = 0
    for variant, M, N, K, dtype, abl in (("ws", 200, 136, 72, torch.float16, None),
                                         ("ws", 296, 520, 264, torch.bfloat16, None),
                                         ("ws", 296, 520, 264, torch.float16, "lockstep"),
                                         ("ws_pingpong", 1000, 520, 264, torch.float16, None)):
        a = torch.randn(M, K, device="cuda", dtype=dtype)
        b = torch.randn(K, N, device="cuda", dtype=dtype)
        c = cuda.gemm(a, b, variant, ablation=abl)
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        err = ((c.double() - ref).norm() / ref.norm()).item()
        ok = err < (3e-3 if dtype == torch.float16 else 1.5e-2)
        bad += not ok
        print(f"gemm {variant}{'/' + abl if abl else ''} {M}x{N}x{K} {dtype}: rel err {err:.2e} {'ok' if ok else 'WRONG'}", flush=True)
    for S, causal, dtype in ((200, False, torch.float16), (300, True, torch.bfloat16)):
        q, k, v = (torch.randn(1, 2, S, 128, device="cuda", dtype=dtype) for _ in range(3))
        o, lse = cuda.attention(q, k, v, causal=causal, return_lse=True)
        torch.cuda.synchronize()
        s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(128)
        if causal:
            s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device="cuda").triu(1), -math.inf)
        ref = torch.softmax(s, -1) @ v.double()
        err = ((o.double() - ref).norm() / ref.norm()).item()
        lse_err = (lse.double() - torch.logsumexp(s, -1)).abs().max().item()
        ok = err < (4e-3 if dtype == torch.float16 else 2.5e-2) and lse_err < 2e-3
        bad += not ok
        print(f"attention S{S} causal={causal} {dtype}: rel err {err:.2e}, LSE err {lse_err:.2e} "
              f"{'ok' if ok else 'WRONG'}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
