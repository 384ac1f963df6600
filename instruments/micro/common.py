"""Shared pieces of the microbenchmarks: in-kernel clocks, the SM id, a CPU-only compile helper
for sm_90a, and per-CTA bookkeeping on the host.

In-kernel timing reads PTX special registers through ``gl.inline_asm_elementwise`` (Gluon has
no clock builtin in Triton 3.6):

* ``%clock64``     -- the SM's cycle counter (per SM; the unit every model constant is in);
* ``%globaltimer`` -- nanoseconds, the same on every SM (its update step is coarse, ~32 ns to
  1 us: only long spans are read with it);
* ``%smid``        -- which SM the CTA ran on (to check one CTA per SM).

The reads are ``is_pure=False`` (volatile asm), so neither LLVM nor ptxas moves them across the
other volatile asm or the barriers around them.
"""
from __future__ import annotations

import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

try:  # torch is needed to launch, not to read this file
    import torch
except ImportError:  # pragma: no cover
    torch = None

SM90_TARGET = ("cuda", 90, 32)
# Where the host side puts its tensors. Only the CPU test of the host code (kernels replaced by
# torch fakes, tests/kernels/test_micro_compile.py) sets it to "cpu".
DEVICE = "cuda"


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


class _HostEvent:
    """Stands in for ``torch.cuda.Event`` when DEVICE is "cpu" (host-code test only)."""

    def record(self):
        import time

        self.t = time.perf_counter()

    def query(self) -> bool:
        return True

    def elapsed_time(self, end) -> float:
        return (end.t - self.t) * 1e3


def event():
    return torch.cuda.Event(enable_timing=True) if DEVICE == "cuda" else _HostEvent()


@gluon.jit
def clock64(dep):
    """The SM cycle counter. ``dep`` (any int32 scalar, or a tensor for one read per element —
    per thread) only gives the asm an operand."""
    return gl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,r", [dep], dtype=gl.int64,
                                     is_pure=False, pack=1)


@gluon.jit
def globaltimer(dep):
    """Nanoseconds of the global timer (same clock on every SM)."""
    return gl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,r", [dep], dtype=gl.int64,
                                     is_pure=False, pack=1)


@gluon.jit
def smid(dep):
    return gl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [dep], dtype=gl.int32,
                                     is_pure=False, pack=1)


@gluon.jit
def record(stats_ptr, t0, t1, g0, g1, sm):
    """Write one CTA's [clock start, clock end, globaltimer start, end, smid] (int64 x 5)."""
    base = stats_ptr + gl.program_id(0) * 5
    gl.store(base + 0, t0)
    gl.store(base + 1, t1)
    gl.store(base + 2, g0)
    gl.store(base + 3, g1)
    gl.store(base + 4, sm.to(gl.int64))


def stats_buffer(ctas: int):
    return torch.full((ctas, 5), -1, dtype=torch.int64, device=DEVICE)


def cta_stats(stats) -> dict:
    """Per-CTA cycles and ns, and whether every CTA had an SM of its own."""
    s = stats.cpu()
    cycles = (s[:, 1] - s[:, 0]).double()
    ns = (s[:, 3] - s[:, 2]).double()
    sms = s[:, 4].tolist()
    return {"cycles": cycles, "ns": ns, "smids": sms, "written": bool((s >= 0).all()),
            "one_cta_per_sm": len(set(sms)) == len(sms)}


def median(t) -> float:
    return float(t.median().item()) if hasattr(t, "median") else float(sorted(t)[len(t) // 2])


def sm_count() -> int:
    return torch.cuda.get_device_properties(0).multi_processor_count


def compile_sm90(kernel, signature: dict, constexprs: dict, num_warps: int = 4, **options):
    """Compile a Gluon kernel for sm_90a without a GPU. ``signature`` maps each runtime argument
    to its type string ('*fp16', 'i32', or a mangled TMA descriptor); ``constexprs`` the rest.
    Returns triton's CompiledKernel (``.asm['ptx']``, ``.metadata``)."""
    from triton.backends.compiler import GPUTarget
    from triton.experimental.gluon._runtime import GluonASTSource

    cex = dict(constexprs)
    if "num_warps" in kernel.arg_names:
        cex["num_warps"] = num_warps
    sig = dict(signature)
    for n in cex:
        sig[n] = "constexpr"
    sig = {n: sig[n] for n in kernel.arg_names}  # in argument order
    src = GluonASTSource(kernel, sig, cex)
    return triton.compile(src, target=GPUTarget(*SM90_TARGET),
                          options={"num_warps": num_warps, **options})


def descriptor_type(t_shape, block, torch_dtype) -> tuple:
    """(mangled signature type, descriptor) of a TMA descriptor over a CPU tensor -- for
    ``compile_sm90`` without a GPU."""
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    from triton.runtime.jit import mangle_type

    t = torch.empty(*t_shape, dtype=torch_dtype)
    layout = gl.NVMMASharedLayout.get_default_for(list(block), _gl_dtype(torch_dtype))
    d = TensorDescriptor.from_tensor(t, list(block), layout)
    return mangle_type(d), d


def _gl_dtype(torch_dtype):
    return {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16, torch.float32: gl.float32}[torch_dtype]


ONE_CTA_SMEM = gl.constexpr(128 * 1024)  # > half of an SM's 228 KiB: no second CTA fits


@gluon.jit
def occupy_smem(num_warps: gl.constexpr):
    """Hold ``ONE_CTA_SMEM`` bytes of shared memory for the CTA's lifetime, so that no second CTA of the
    launch can share this SM (the block scheduler would otherwise be free to double up). One
    row is written so that the allocation is not optimised away. Call it after the kernel's
    other shared-memory allocations: the buffer is dead once written, and the allocator could
    otherwise place a later buffer on top of it."""
    ROW: gl.constexpr = 256
    buf = gl.allocate_shared_memory(gl.int32, [ONE_CTA_SMEM // (4 * ROW), ROW],
                                    gl.SwizzledSharedLayout(1, 1, 1, [1, 0]))
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, num_warps], [1, 0])
    row = gl.expand_dims(gl.arange(0, ROW, gl.SliceLayout(0, layout)), 0)
    buf.slice(0, 1).store(row)
    return buf


def cli(doc: str, filename: str, seed: int, rows, line) -> int:
    """``python -m instruments.micro.<bench> [--out DIR]``: ``rows(gen)`` measures, ``line(row)``
    prints one line per row, ``DIR/filename`` gets the rows as JSON; exit 1 if a check failed."""
    import argparse
    import json
    import pathlib

    import torch

    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--out", type=pathlib.Path, default=None, help=f"folder for {filename}")
    args = p.parse_args()
    out = rows(torch.Generator(device=DEVICE).manual_seed(seed))
    for r in out:
        print(line(r))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / filename).write_text(json.dumps(out, indent=1))
    return 0 if all(r["ok"] for r in out) else 1
