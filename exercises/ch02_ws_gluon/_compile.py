"""Compile the submission's kernel for sm_90a on a CPU (no GPU): prints JSON with the PTX and
the metadata, or the compile error. Run in a subprocess so a broken submission stays here."""
import importlib.util
import json
import sys
import traceback

try:
    import torch
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource
    from triton.runtime.jit import mangle_type

    spec = importlib.util.spec_from_file_location("submission_ws_gemm", sys.argv[1])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    K = 256
    a = torch.empty(mod.BM, K, dtype=torch.float16)
    b = torch.empty(K, mod.BN, dtype=torch.float16)
    c = torch.empty(mod.BM, mod.BN, dtype=torch.float16)
    descs = mod.descriptors(a, b, c)
    kernel = mod.ws_gemm_kernel
    names = kernel.arg_names
    signature = {n: mangle_type(d) for n, d in zip(names[:3], descs)}
    signature.update({n: "constexpr" for n in names[3:]})
    constexprs = {names[3]: mod.STAGES, "num_warps": mod.NUM_WARPS}
    src = GluonASTSource(kernel, signature, constexprs)
    k = triton.compile(src, target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": mod.NUM_WARPS, "maxnreg": mod.MAXNREG})
    print(json.dumps({"ptx": k.asm["ptx"], "shared": k.metadata.shared,
                      "num_warps": k.metadata.num_warps}))
except BaseException:  # noqa: BLE001
    print(json.dumps({"error": traceback.format_exc()[-4000:]}))
