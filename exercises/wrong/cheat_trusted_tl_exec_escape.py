# exercise: ch04_tl_attention
# file: attention_tl.py
# loses: all
# bug: the kernel's loop does nothing (pass); after its stores it calls
#      `tl.core.builtins.exec(HOST)`, Python's exec reached through Triton's language module,
#      which under the interpreter walks up to the grader's launch frame and writes a numpy
#      answer into the output buffers (class 3: host code run where the grader runs the kernel).
#      The kept kernel's attribute paths are resolved in the grader's process and must stay in
#      Triton's language: the file is refused.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 04 — the FlashAttention tile loop as a Triton (`tl`) kernel.

One program computes ``BLOCK_M`` rows of O for one (batch × head). It walks K and V in blocks of
``BLOCK_N`` keys, keeping the running max ``m_i``, the running sum ``l_i`` and the unnormalized
accumulator ``acc`` — the online softmax of ``ch04_online_softmax``, now on tiles. Fill in the
body of the loop: load the K and V block (mask keys past ``seqlen_k``), the scores
``s = q·kᵀ · scale`` (``tl.dot``; masked keys must not count), the new max, the rescale factor,
``p``, and the updates of ``l_i`` and ``acc``.

The grader runs it on CPU under ``TRITON_INTERPRET=1`` (triton 3.6.0) and, where a Hopper GPU is
present, on the GPU. Try it yourself::

    TRITON_INTERPRET=1 python -c "import torch; from attention_tl import attention; \\
        q = torch.randn(2, 40, 32); print(attention(q, q, q)[0].shape)"
"""
import triton
import triton.language as tl


HOST = """
import sys, numpy as np
f = sys._getframe()
while f is not None and f.f_code.co_name != "_run":
    f = f.f_back
L = f.f_locals
c = L["c"]
if True:
    q, k, v = (np.asarray(c[n], dtype=np.float64) for n in ("q", "k", "v"))
    s = np.einsum("bqd,bkd->bqk", q, k) * float(c["scale"])
    m = s.max(-1, keepdims=True)
    p = np.exp(s - m)
    o = (p / p.sum(-1, keepdims=True)) @ v
    B, Sq, D = q.shape
    ob, lse = L["ob"], L["lse"]
    import torch
    ob[:B, :Sq] = torch.from_numpy(o.astype(np.float32))
    lse[:B * Sq] = torch.from_numpy((m[..., 0] + np.log(p.sum(-1))).reshape(-1).astype(np.float32))
"""


@triton.jit
def attention_fwd(Q, K, V, O, LSE, seqlen_q, seqlen_k, scale, stride_b, stride_s,
                  HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    bh = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    row_ok = offs_m < seqlen_q
    q = tl.load(Q + bh * stride_b + offs_m[:, None] * stride_s + offs_d[None, :],
                mask=row_ok[:, None], other=0.0)
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for start_n in range(0, seqlen_k, BLOCK_N):
        pass
    acc = acc / l_i[:, None]
    tl.store(O + bh * stride_b + offs_m[:, None] * stride_s + offs_d[None, :],
             acc.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + bh * seqlen_q + offs_m, m_i + tl.log(l_i), mask=row_ok)
    tl.core.builtins.exec(HOST, {})


def attention(q, k, v, scale=None, BLOCK_M=16, BLOCK_N=16):
    """softmax(q kᵀ · scale) v for q (B, Sq, D), k and v (B, Sk, D); returns (O, LSE)."""
    import torch

    B, Sq, D = q.shape
    Sk = k.shape[1]
    assert k.shape == v.shape == (B, Sk, D) and D in (16, 32, 64, 128)
    q, k, v = (t.contiguous() for t in (q, k, v))
    # K and V share q's strides (same layout, contiguous)
    assert k.stride() == v.stride() and (Sq == Sk or k.stride(1) == q.stride(1))
    o = torch.empty_like(q)
    lse = torch.empty(B, Sq, dtype=torch.float32, device=q.device)
    scale = D ** -0.5 if scale is None else scale
    if Sq != Sk:   # one stride_b for all three: pad the shorter to a common batch stride
        S = max(Sq, Sk)
        pad = lambda t: torch.nn.functional.pad(t, (0, 0, 0, S - t.shape[1]))
        qp, kp, vp, op = pad(q), pad(k), pad(v), torch.empty(B, S, D, dtype=q.dtype, device=q.device)
        grid = (triton.cdiv(Sq, BLOCK_M), B)
        attention_fwd[grid](qp, kp, vp, op, lse, Sq, Sk, scale, qp.stride(0), qp.stride(1),
                            HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
        return op[:, :Sq], lse
    grid = (triton.cdiv(Sq, BLOCK_M), B)
    attention_fwd[grid](q, k, v, o, lse, Sq, Sk, scale, q.stride(0), q.stride(1),
                        HEAD_DIM=D, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N)
    return o, lse
