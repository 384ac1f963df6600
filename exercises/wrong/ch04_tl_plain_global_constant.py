# exercise: ch04_tl_attention
# file: attention_tl.py
# loses: test_interpreter_matches_reference, test_interpreter_lse, test_interpreter_ragged, test_interpreter_large_scores, test_gpu_matches_reference
# bug: the exps as exp2 with log2(e) kept in a plain module-level float. The interpreter runs the
#      body as Python and reads the global, so every answer is right on CPU; the Triton compiler
#      reads only globals that are tl.constexpr ("Cannot access global variable LOG2E from within
#      @jit'ed function"), so the kernel never builds for a GPU. A compile of the kernel for sm_90a
#      shows it on a CPU.
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

LOG2E = 1.4426950408889634          # log2(e): exp(x) = exp2(x * LOG2E)


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
        cols = start_n + offs_n
        col_ok = cols < seqlen_k
        kv_off = bh * stride_b + cols[:, None] * stride_s + offs_d[None, :]
        k = tl.load(K + kv_off, mask=col_ok[:, None], other=0.0)
        v = tl.load(V + kv_off, mask=col_ok[:, None], other=0.0)
        s = tl.dot(q, tl.trans(k)) * scale
        s = tl.where(col_ok[None, :], s, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        alpha = tl.exp2((m_i - m_new) * LOG2E)       # exp as exp2, as the GPU computes it
        p = tl.exp2((s - m_new[:, None]) * LOG2E)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    acc = acc / l_i[:, None]
    tl.store(O + bh * stride_b + offs_m[:, None] * stride_s + offs_d[None, :],
             acc.to(O.dtype.element_ty), mask=row_ok[:, None])
    tl.store(LSE + bh * seqlen_q + offs_m, m_i + tl.log(l_i), mask=row_ok)


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
