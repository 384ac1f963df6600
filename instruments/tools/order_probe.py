"""Order/compile probe: is fa3's headline number a property of the ring depth, of the
order of measurement, or of where the compiled kernel came from? Times fa3 with 2 and 3 slots
alternately, twice, around an overlap run, in one process; prints one line per measurement.
Run it twice with the same TRITON_CACHE_DIR: the second process loads every kernel from the
cache the first one wrote."""
import json
import sys

import torch

from kernels.attention import attention, flops
from instruments.harness import measure

tag = sys.argv[1] if len(sys.argv) > 1 else ""
B, H, S, D = 4, 16, 8448, 128
q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(3))
out = torch.empty_like(q)
f = flops(B, H, S, D, False)
for variant, stages in (("fa3", 2), ("fa3", 3), ("overlap", 3), ("fa3", 2), ("fa3", 3), ("fa3", 2)):
    fn = lambda v_=variant, s_=stages: attention(q, k, v, variant=v_, stages=s_, out=out)
    r = measure(fn, f)
    print(json.dumps({"probe": tag, "variant": variant, "stages": stages,
                      "tflops": round(r["tflops"], 1), "ms": round(r["ms"], 4),
                      "p20": round(r["ms_p20"], 4), "p80": round(r["ms_p80"], 4)}), flush=True)
