# exercise: ch04_tl_attention
# file: attention_tl.py
# loses: all
# bug: splits the keys across the programs of one batch × head ("split-K"): program p takes the
#      p-th chunk of the keys for every query row, and merges its partial result into O and LSE
#      with a plain read-modify-write (load O and LSE, combine, store back), no atomics and no
#      second pass. Under the interpreter the programs run one after another, so every merge
#      sees the one before it and O is exact; on a GPU they run at once and the merges race
#      (lost updates, or a merge of what program 0 has not stored yet). The grader refuses every
#      load from O or LSE (a correct kernel never reads its output): every case has more rows
#      than one block, so every test fails.
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
    # "split-K" over the programs of a (batch x head): program p takes the p-th chunk of the keys
    # for ALL query rows and merges its partial result into O / LSE (read, combine, write back).
    pid = tl.program_id(0)
    bh = tl.program_id(1)
    nprog = tl.num_programs(0)
    offs_n = tl.arange(0, BLOCK_N)
    offs_d = tl.arange(0, HEAD_DIM)
    chunk = tl.cdiv(tl.cdiv(seqlen_k, nprog), BLOCK_N) * BLOCK_N
    lo = pid * chunk
    hi = tl.minimum(lo + chunk, seqlen_k)
    for qs in range(0, seqlen_q, BLOCK_M):
        offs_m = qs + tl.arange(0, BLOCK_M)
        row_ok = offs_m < seqlen_q
        q = tl.load(Q + bh * stride_b + offs_m[:, None] * stride_s + offs_d[None, :],
                    mask=row_ok[:, None], other=0.0)
        m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
        l_i = tl.zeros([BLOCK_M], tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
        for start_n in range(lo, hi, BLOCK_N):
            cols = start_n + offs_n
            col_ok = cols < hi
            kv_off = bh * stride_b + cols[:, None] * stride_s + offs_d[None, :]
            k = tl.load(K + kv_off, mask=col_ok[:, None], other=0.0)
            v = tl.load(V + kv_off, mask=col_ok[:, None], other=0.0)
            s = tl.dot(q, tl.trans(k)) * scale
            s = tl.where(col_ok[None, :], s, float("-inf"))
            m_new = tl.maximum(m_i, tl.max(s, 1))
            alpha = tl.exp(m_i - m_new)
            p = tl.exp(s - m_new[:, None])
            l_i = l_i * alpha + tl.sum(p, 1)
            acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
            m_i = m_new
        has = l_i > 0
        lse_new = tl.where(has, m_i + tl.log(tl.where(has, l_i, 1.0)), float("-inf"))
        o_new = acc / tl.where(has, l_i, 1.0)[:, None]
        o_ptr = O + bh * stride_b + offs_m[:, None] * stride_s + offs_d[None, :]
        lse_ptr = LSE + bh * seqlen_q + offs_m
        if pid == 0:
            tl.store(o_ptr, o_new, mask=row_ok[:, None])
            tl.store(lse_ptr, lse_new, mask=row_ok)
        else:
            # the earlier programs' merged result: no atomics, no second pass, no ordering
            o_old = tl.load(o_ptr, mask=row_ok[:, None], other=0.0)
            lse_old = tl.load(lse_ptr, mask=row_ok, other=0.0)
            mx = tl.maximum(lse_old, lse_new)
            lse = mx + tl.log(tl.exp(lse_old - mx) + tl.exp(lse_new - mx))
            o = o_old * tl.exp(lse_old - lse)[:, None] + o_new * tl.exp(lse_new - lse)[:, None]
            tl.store(o_ptr, o, mask=row_ok[:, None])
            tl.store(lse_ptr, lse, mask=row_ok)


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
