"""One variant, a few small shapes (every head dim, causal and not), against float64; one line
each. Run under ``timeout`` by gpu_run.sh: a protocol bug hangs, it does not crash."""
import sys
import time

import torch

from kernels.attention import attention

variant = sys.argv[1]
t0 = time.time()
bad = 0
for d in (64, 128, 256):
    for causal in (False, True):
        B, H, S = 1, 2, 333
        q, k, v = (torch.randn(B, H, S, d, device="cuda", dtype=torch.float16) for _ in range(3))
        o = attention(q, k, v, causal=causal, variant=variant)
        torch.cuda.synchronize()
        ref = torch.nn.functional.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                               is_causal=causal)
        err = ((o.double() - ref).norm() / ref.norm()).item()
        ok = err < 4e-3
        bad += not ok
        print(f"smoke {variant} d{d} {'causal' if causal else 'full'} rel_err {err:.2e} "
              f"{'ok' if ok else 'FAIL'}", flush=True)
print(f"smoke {variant} done in {time.time() - t0:.1f}s")
sys.exit(1 if bad else 0)
