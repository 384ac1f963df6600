"""Runs on the submission's side: launch the submission's `attention_fwd` kernel itself (never its
host code) on the grader's cases, in buffers poisoned around the data, and hand back the buffers.

Each of Q, K, V is laid out (batch, rows, d) with a common row count S_pad (the longer sequence,
rounded up to whole blocks, plus one more block) and one extra batch at the end; every row that is
not data is NaN. A load past ``seqlen_k`` (or past the last batch) that is not masked reads NaN
and poisons the output. O starts as NaN too: a row the kernel should write and does not stays NaN,
and the rows past ``seqlen_q`` must still be NaN after the run (a store that is not masked shows).
The grader, in its own process, reads all of it.
"""
import math

import numpy as np


def _launchable(fn):
    """The kernel must be Triton's (a @triton.jit function), not a stand-in."""
    mod = type(fn).__module__ or ""
    if not mod.startswith("triton."):
        raise TypeError(f"attention_fwd is a {mod}.{type(fn).__qualname__}, not a @triton.jit kernel")


def warm():
    """Run once by the sandbox's warm process (exercise.json's "preload") before any submission:
    import torch and Triton and, under the interpreter, run a small kernel (its first launch sets
    the interpreter up), so each submission's run, forked from here, does only its own work.
    For a GPU run nothing is launched: CUDA must start in the forked run, never before a fork."""
    import os

    import torch
    import triton
    import triton.language as tl

    if os.environ.get("TRITON_INTERPRET") != "1":
        return

    @triton.jit
    def add_one(X, N, B: tl.constexpr):
        offs = tl.arange(0, B)
        tl.store(X + offs, tl.load(X + offs, mask=offs < N) + 1, mask=offs < N)

    x = torch.zeros(16)
    add_one[(1,)](x, 16, B=16)
    if x.sum().item() != 16:
        raise RuntimeError("the interpreter's warm-up kernel computed the wrong values")


def run_cases(cases, device="cpu"):
    """{name: {"o": O buffer, "lse": LSE buffer} or {"error": traceback}} for every case
    ({name: {"q", "k", "v", "scale", "blocks"}})."""
    import traceback

    import attention_tl as mod
    import torch

    _launchable(mod.attention_fwd)
    out = {}
    for name, c in cases.items():
        try:
            out[name] = _run(mod.attention_fwd, c, device, torch)
        except Exception:  # noqa: BLE001 - the failure is the answer for this case
            out[name] = {"error": traceback.format_exc(limit=6)[-3000:]}
    return out


def _run(kernel, c, device, torch):
    q, k, v = c["q"], c["k"], c["v"]
    bm, bn = int(c["blocks"][0]), int(c["blocks"][1])
    B, Sq, D = q.shape
    Sk = k.shape[1]
    S_pad = math.ceil(max(Sq, Sk) / max(bm, bn)) * max(bm, bn) + max(bm, bn)

    def poisoned(x):
        buf = torch.full((B + 1, S_pad, D), float("nan"), dtype=torch.float32)
        buf[:B, :x.shape[1]] = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        return buf.to(device)

    qb, kb, vb = poisoned(q), poisoned(k), poisoned(v)
    ob = torch.full((B + 1, S_pad, D), float("nan"), dtype=torch.float32, device=device)
    lse = torch.full(((B + 1) * Sq,), float("nan"), dtype=torch.float32, device=device)
    grid = (math.ceil(Sq / bm), B)
    kernel[grid](qb, kb, vb, ob, lse, Sq, Sk, float(c["scale"]), qb.stride(0), qb.stride(1),
                 HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn)
    if device != "cpu":
        torch.cuda.synchronize()
    return {"o": ob.cpu().numpy(), "lse": lse.cpu().numpy()}
