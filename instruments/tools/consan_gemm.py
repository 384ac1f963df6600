"""One GEMM configuration under Triton's concurrency sanitizer, with timings, for finding out
which configuration is slow or stuck under ConSan (the GPU test runs several in one process).

    TRITON_INSTRUMENTATION_MODE=consan python -m instruments.tools.consan_gemm ws_pingpong 2 [BMxBNxBK]
"""
from __future__ import annotations

import sys
import time

import torch
import triton

from kernels import gemm


def main(argv: list[str]) -> int:
    variant, stages = argv[0], int(argv[1])
    tile = tuple(int(x) for x in argv[2].split("x")) if len(argv) > 2 else None
    triton.set_allocator(
        lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    for M, N, K in ((256, 512, 320), (392, 264, 136)):
        a = torch.randn(M, K, device="cuda", dtype=torch.float16)
        b = torch.randn(K, N, device="cuda", dtype=torch.float16)
        t0 = time.time()
        out = gemm(a, b, variant=variant, stages=stages, tile=tile)
        torch.cuda.synchronize()
        ref = a.double() @ b.double()
        err = ((out.double() - ref).norm() / ref.norm()).item()
        print(f"{variant} s{stages} {tile} {M}x{N}x{K} err {err:.1e} {time.time() - t0:.1f}s",
              flush=True)
        if not err < 3e-3:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
