# exercise: ch04_tl_attention
# file: attention_tl.py
# loses: all
# bug: the kernel's loop does nothing; the module rebinds `attention_fwd` to an object that poses
#      as a `triton.runtime.jit` kernel (its class's __module__ says so) and, when launched,
#      writes the answer into O and LSE with numpy (class 3). The grader builds the kernel from
#      the kept source itself: the @triton.jit function is what runs.
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


def attention(q, k, v, scale=None, BLOCK_M=16, BLOCK_N=16):
    """softmax(q kᵀ · scale) v for q (B, Sq, D), k and v (B, Sk, D); returns (O, LSE)."""
    import torch

    D = q.shape[-1]
    scale = D ** -0.5 if scale is None else scale
    s = torch.einsum("bqd,bkd->bqk", q.double(), k.double()) * scale
    lse = torch.logsumexp(s, -1)
    return (torch.softmax(s, -1) @ v.double()).to(q.dtype), lse.float()


class _PosesAsJit:
    def __init__(self, fn):
        self.fn = fn

    def __getitem__(self, grid):
        def launch(Q, K, V, O, LSE, seqlen_q, seqlen_k, scale, stride_b, stride_s, **meta):
            import numpy as np
            import torch
            B = Q.shape[0] - 1
            q = Q[:B, :seqlen_q].double().numpy()
            k = K[:B, :seqlen_k].double().numpy()
            v = V[:B, :seqlen_k].double().numpy()
            s = np.einsum("bqd,bkd->bqk", q, k) * scale
            m = s.max(-1, keepdims=True)
            p = np.exp(s - m)
            O[:B, :seqlen_q] = torch.from_numpy(p / p.sum(-1, keepdims=True) @ v).float()
            LSE[:B * seqlen_q] = torch.from_numpy(
                (m[..., 0] + np.log(p.sum(-1))).reshape(-1)).float()
        return launch


_PosesAsJit.__module__ = "triton.runtime.jit"
attention_fwd = _PosesAsJit(attention_fwd)
