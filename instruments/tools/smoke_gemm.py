"""One variant, a few shapes, checked against float64; prints one line. Used by gpu_run.sh to
catch a hang (run under `timeout`) or a wrong answer before the full tests and benchmark."""
import sys
import time

import torch

from kernels import gemm

variant = sys.argv[1]
stages = int(sys.argv[2]) if len(sys.argv) > 2 else None
t0 = time.time()
for M, N, K in ((128, 256, 64), (1000, 520, 264), (2048, 2048, 2048)):
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    out = gemm(a, b, variant=variant, stages=stages)
    torch.cuda.synchronize()
    ref = a.double() @ b.double()
    err = ((out.double() - ref).norm() / ref.norm()).item()
    print(f"smoke {variant} s{stages} {M}x{N}x{K} rel_err {err:.2e} {'ok' if err < 3e-3 else 'FAIL'}",
          flush=True)
print(f"smoke {variant} done in {time.time() - t0:.1f}s")
