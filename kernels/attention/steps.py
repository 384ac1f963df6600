"""The device steps every attention schedule is built of (``sim/attention/cta.py``'s steps, the
same names): where the CTA's tile is, how many K/V blocks it visits, the loads, the two GEMMs, the
online softmax, the rescale of O, the pack of P, the epilogue. The variants' consumers
(``ws.py``, ``overlap.py``) are these steps in their schedule's order; ``kernels/ring.py`` has the
ring's ``acquire``/``release`` and the turns.

Layout: contiguous q, k, v, o are seen as 2-D ``(batch·heads·seq, d)`` so one TMA descriptor
serves every head. A block that runs past the end of one head's sequence reads the next head's
rows (or zeros past the tensor): those columns are masked to ``-inf`` before the softmax, and rows
past the end are not stored (O is written with masked stores, not TMA, for that reason). Any
other layout TMA can address goes through rank-4 descriptors whose bounds stop at each
sequence's end (``boxes.py``); the row arithmetic (``row0``, the 2-D view's row of a head's
first element) is the same, and ``boxes`` turns it into the box's coordinates.

Scores are kept in base 2: ``qk_scale = scale·log2(e)``, ``P = exp2(S·qk_scale − m)``,
``LSE = (m + log2 l)·ln 2``.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier, tma, warpgroup_mma

from ..scopes import enter, exit
from . import boxes


@gluon.constexpr_function
def mma_layout(N, num_warps):
    """wgmma accumulator layout: warps stack along M (a warpgroup covers 64 rows), one
    instruction covers all N columns (m64nNk16)."""
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, N, 16])


@gluon.constexpr_function
def score_layout(BN, num_warps):
    """Layout of a block's scores (a block in pieces: of its first; every piece holds the same
    rows in the same threads, so the row statistics live in this one's row slice)."""
    return mma_layout(boxes.pieces(BN)[0], num_warps)


@gluon.constexpr_function
def p_layout(D, num_warps):
    """P as the A operand of P·V, from registers (wgmma RS): a dot operand of O's layout."""
    return gl.DotOperandLayout(operand_index=0, parent=mma_layout(D, num_warps), k_width=2)


@gluon.jit
def tile_position(seqlen, BM: gl.constexpr, CAUSAL: gl.constexpr):
    """(first row of this (batch, head) in the 2-D view, first Q row of this CTA within the
    sequence). Causal: the longest rows (last Q tiles) are launched first."""
    bh = gl.program_id(1)
    pid_m = gl.program_id(0)
    if CAUSAL:
        pid_m = gl.num_programs(0) - 1 - pid_m
    return bh * seqlen, pid_m * BM


@gluon.jit
def num_blocks(m0, seqlen, BM: gl.constexpr, BN: gl.constexpr, CAUSAL: gl.constexpr):
    """K/V blocks this CTA visits: all of them, or (causal) those left of its last row."""
    if CAUSAL:
        return gl.cdiv(gl.minimum(seqlen, m0 + BM), BN)
    else:
        return gl.cdiv(seqlen, BN)


@gluon.jit
def load_q(q_desc, q_smem, q_full, row0, m0, PARTS: gl.constexpr):
    """TMA the CTA's Q rows (``PARTS`` boxes, one per consumer in the ws variants) -> q_full."""
    ROWS: gl.constexpr = boxes.box_rows(q_desc)
    mbarrier.expect(q_full, PARTS * q_desc.block_type.nbytes)
    for w in gl.static_range(PARTS):
        boxes.load(q_desc, row0, m0 + w * ROWS, q_full, q_smem.index(w))


@gluon.jit
def load_block(desc, ring, full, j, row0, STAGES: gl.constexpr, pred=True):
    """expect_tx on full[slot], then TMA block j into its slot (the caller saw the slot free)."""
    BN: gl.constexpr = boxes.box_rows(desc)
    s = j % STAGES
    mbarrier.expect(full.index(s), boxes.box_bytes(desc), pred=pred)
    boxes.load(desc, row0, j * BN, full.index(s), boxes.index(ring, s), pred=pred)


@gluon.jit
def produce(desc, ring, j, row0):
    """Producer: wait until block j's slot of ``ring`` (``kernels/ring.py``'s ``Ring``) is free
    (the first lap falls through), then load it."""
    enter("wait slot", ring.PROFILE)
    ring.wait_slot(j)
    exit("wait slot", ring.PROFILE)
    enter("TMA issue", ring.PROFILE)
    load_block(desc, ring.slots, ring.full, j, row0, ring.STAGES)
    exit("TMA issue", ring.PROFILE)


# ``SOFTMAX`` (a constexpr of the overlapped kernels; the launcher's ``softmax=``): bits that
# take work off a consumer's serial chain. The first two shorten the softmax's dependent chains.
# Each thread of the wgmma accumulator holds 2 rows x BN/4 columns of S (column = 8 i +
# 2 (lane % 4) + r: r and i in its registers, the lane's 2 bits across the 4 threads of a row);
# ``gl.max``/``gl.sum`` along a row fold a thread's BN/4 values one after another (a chain of
# BN/4 - 1 dependent FMNMX / FADD per row, h200-stall.json's reading: depth ~35 at BN 128), then
# across the 4 lanes (2 shuffles). The others move or drop steps or barriers of the loop
# (``overlap.py``, ``fa3.py``).
# All but ``LANE_SUM`` (the row sums add in another order), ``COND_RESCALE`` (P, the sums and O
# scaled by a stale max) and ``POLY_EXP`` (a quarter of P from a cubic) leave O and the LSE
# bit-identical.
TREE_MAX = gl.constexpr(1)  # halve the block in registers (log2(BN/8) levels), then reduce 8 columns
LANE_SUM = gl.constexpr(2)  # row sums kept per thread ([M, 8]: 4 a thread), lanes summed once, at the end
RESCALE_EARLY = gl.constexpr(4)  # O *= alpha_{j-1} under Q·K_jᵀ, before P_{j-1}·V_{j-1} is issued
NO_TURNS = gl.constexpr(8)  # fa3: the consumers issue their GEMMs without taking turns
# fa3's barriers: Triton puts a warpgroup bar.sync before every mbarrier arrive
ONE_RELEASE = gl.constexpr(16)  # one arrive a block frees K_j's and V_{j-1}'s slots (overlap.py)
NAMED_TURNS = gl.constexpr(32)  # the turns on named barriers, not mbarriers (kernels/ring.py)
COND_RESCALE = gl.constexpr(64)  # FA4's conditional rescaling: O rescaled only when a max moved far
POLY_EXP = gl.constexpr(128)  # FA4's exps on the FMA pipe: a quarter of a block's as a polynomial
LIVE_HALF = gl.constexpr(256)  # causal: a block whose right half is all masked takes its left alone
SOFTMAX_BITS = {"tree_max": 1, "lane_sum": 2, "rescale_early": 4, "no_turns": 8,
                "one_release": 16, "named_turns": 32, "cond_rescale": 64, "poly_exp": 128,
                "live_half": 256}
# COND_RESCALE: a row keeps its running max until a block's max passes it by more than this
# (base 2), so every P = 2^(s - m) stays <= 2^8 = 256, which fp16 and bf16 hold; FA4's own
# forward passes rescale_threshold 8.0 for 16-bit inputs (flash_attn/cute, the sm100 forward).
# The sums and O then carry the same stale max, so O / l and the LSE come out as before.
RESCALE_THRESHOLD = gl.constexpr(8.0)


@gluon.jit
def halve(x, COLS: gl.constexpr, MAX: gl.constexpr):
    """Fold the columns of ``x`` ([M, N]) in halves down to ``COLS``: max (``MAX``) or sum of the
    two halves, elementwise, each level splitting off the top column bit, which a thread holds in
    its registers: no data moves, and the chain is log2(N / COLS) deep instead of N / 4."""
    M: gl.constexpr = x.type.shape[0]
    N: gl.constexpr = x.type.shape[1]
    if N > COLS:
        y = gl.reshape(x, [M, 2, N // 2]).permute((0, 2, 1))
        a, b = gl.split(y)
        if MAX:
            x = gl.maximum(a, b)
        else:
            x = a + b
        x = halve(x, COLS, MAX)
    return x


@gluon.jit
def row_max(s, SOFTMAX: gl.constexpr = 0):
    """max over each row of S: ``gl.max`` (a thread's columns one after another) or, with
    ``TREE_MAX``, the block folded in halves first. Bit-identical (max is exact). A block in
    pieces: the larger of the pieces' maxima."""
    if boxes.in_pieces(s):
        return gl.maximum(row_max(s[0], SOFTMAX), in_rows_of(row_max(s[1], SOFTMAX), s[0]))
    elif SOFTMAX & TREE_MAX:  # (the same rows in the same threads: the convert moves nothing)
        return gl.convert_layout(gl.max(halve(s, 8, True), 1), gl.SliceLayout(1, s.type.layout))
    else:
        return gl.max(s, 1)


@gluon.jit
def init_state(M: gl.constexpr, D: gl.constexpr, BN: gl.constexpr, num_warps: gl.constexpr,
               SOFTMAX: gl.constexpr = 0):
    """Running row max (base 2, finite so a fully masked block cannot make NaN), row sum, O.
    With ``LANE_SUM`` the row sum is [M, 8], a thread's own partial sums (folded in the
    epilogue)."""
    s_l: gl.constexpr = score_layout(BN, num_warps)
    m_i = gl.full([M], -1.0e30, gl.float32, gl.SliceLayout(1, s_l))
    if SOFTMAX & LANE_SUM:
        HEAD: gl.constexpr = boxes.pieces(BN)[0]  # (a block in pieces: as its first's sums)
        l_i = halve(gl.zeros([M, HEAD], gl.float32, s_l), 8, False)
    else:
        l_i = gl.full([M], 0.0, gl.float32, gl.SliceLayout(1, s_l))
    acc = gl.zeros([M, D], gl.float32, mma_layout(D, num_warps))
    return m_i, l_i, acc


@gluon.jit
def row_sum(l_i):
    """The row sums as [M]: ``l_i`` itself, or its per-thread partials summed across lanes."""
    if len(l_i.type.shape) == 2:
        return gl.sum(l_i, 1)
    else:
        return l_i


@gluon.jit
def qk(q, k_slot, num_warps: gl.constexpr, is_async: gl.constexpr = False):
    """S = Q·K_jᵀ (SS wgmma: both operands in shared memory; a block in pieces: a wgmma a
    piece, n = 64 and n = 16, each its own group)."""
    if boxes.in_pieces(k_slot):
        return qk(q, k_slot[0], num_warps, is_async), qk(q, k_slot[1], num_warps, is_async)
    else:
        M: gl.constexpr = q.type.shape[0]
        BN: gl.constexpr = k_slot.type.shape[0]
        zero = gl.zeros([M, BN], gl.float32, mma_layout(BN, num_warps))
        return warpgroup_mma(q, k_slot.permute((1, 0)), zero, use_acc=False, is_async=is_async)


@gluon.jit
def pv(p, v_slot, acc, is_async: gl.constexpr = False):
    """O += P_j·V_j (RS wgmma: P from registers; a block in pieces: a wgmma a piece, k = 64
    then k = 16, onto the same O)."""
    if boxes.in_pieces(v_slot):
        acc = warpgroup_mma(p[0], v_slot[0], acc, is_async=is_async)
        return warpgroup_mma(p[1], v_slot[1], acc, is_async=is_async)
    else:
        return warpgroup_mma(p, v_slot, acc, is_async=is_async)


# The softmax switches ``LIVE_HALF``'s path (``live_half``) does not carry: with any of them a
# causal block is taken whole.
WHOLE_ONLY = gl.constexpr(TREE_MAX | LANE_SUM | COND_RESCALE | POLY_EXP)


@gluon.jit
def softmax(s, m_i, l_i, j, m0, rows, seqlen, qk_scale, BN: gl.constexpr, CAUSAL: gl.constexpr,
            SOFTMAX: gl.constexpr = 0):
    """Online softmax of block j: mask (only blocks that reach past the sequence's end or, causal,
    the diagonal), new row max, P = exp2(S·qk_scale − m), the rescale factor, the row sum.
    Returns (P in fp32, alpha, m, l); a block in pieces: S and P pieces, one m and l. With
    ``LIVE_HALF``, causal, a block whose right half lies right of every row's diagonal
    (warpgroup 0's on the diagonal at BM = BN with two consumers) takes ``live_half``: the same
    P, half the exps (a block in pieces is taken whole)."""
    if CAUSAL and (SOFTMAX & LIVE_HALF) and not (SOFTMAX & WHOLE_ONLY) and not boxes.in_pieces(s):
        if j * BN + BN // 2 >= m0 + s.type.shape[0]:  # past this warpgroup's last row
            p, alpha, m_new, l_new = live_half(s, m_i, l_i, j * BN, rows, qk_scale)
        else:
            p, alpha, m_new, l_new = whole(s, m_i, l_i, j, m0, rows, seqlen, qk_scale, BN,
                                           CAUSAL, SOFTMAX)
        return p, alpha, m_new, l_new
    else:
        return whole(s, m_i, l_i, j, m0, rows, seqlen, qk_scale, BN, CAUSAL, SOFTMAX)


@gluon.jit
def live_half(s, m_i, l_i, col0, rows, qk_scale):
    """``whole``'s result for a causal block whose columns [N/2, N) all lie right of every row's
    diagonal: those are -inf after the mask, so their P is 0, and the row max and sum are the
    left half's. Only the left half is masked and exponentiated; the halves split and join on
    the top column bit, which a thread holds in its registers (``halve``): no data moves."""
    M: gl.constexpr = s.type.shape[0]
    N: gl.constexpr = s.type.shape[1]
    lo, hi = gl.split(gl.reshape(s, [M, 2, N // 2]).permute((0, 2, 1)))
    lo = mask(lo, col0 + gl.arange(0, N // 2, gl.SliceLayout(0, lo.type.layout)),
              in_rows_of(rows, lo), 0, True)
    m_new = gl.maximum(m_i, gl.convert_layout(gl.max(lo, 1), m_i.type.layout) * qk_scale)
    p_lo = gl.exp2(lo * qk_scale - gl.expand_dims(in_rows_of(m_new, lo), 1))
    p = gl.reshape(gl.join(p_lo, gl.zeros_like(p_lo)).permute((0, 2, 1)), [M, N])
    alpha = gl.exp2(m_i - m_new)
    l_i = l_i * alpha + gl.convert_layout(gl.sum(p_lo, 1), l_i.type.layout)
    return gl.convert_layout(p, s.type.layout), alpha, m_new, l_i


@gluon.jit
def whole(s, m_i, l_i, j, m0, rows, seqlen, qk_scale, BN: gl.constexpr, CAUSAL: gl.constexpr,
          SOFTMAX: gl.constexpr = 0):
    """The softmax of block j over all its columns (``softmax``)."""
    cols = columns(s, j * BN)
    last_col = j * BN + BN - 1
    needs_mask = last_col >= seqlen
    if CAUSAL:
        needs_mask = needs_mask | (last_col > m0)  # m0: this warpgroup's first row
    if needs_mask:
        s = mask(s, cols, rows, seqlen, CAUSAL)
    m_new = gl.maximum(m_i, row_max(s, SOFTMAX) * qk_scale)
    if SOFTMAX & COND_RESCALE:  # the old max while the new one stays within the threshold
        m_new = gl.where(m_new - m_i > RESCALE_THRESHOLD, m_new, m_i)
    p = exp2_rows(s, qk_scale, m_new, SOFTMAX)
    alpha = gl.exp2(m_i - m_new)
    if SOFTMAX & COND_RESCALE:  # exactly 1 where the max stayed: those rows need no rescale
        alpha = gl.where(m_new == m_i, 1.0, alpha)
    if SOFTMAX & LANE_SUM:
        part = p_sums(p, True)  # [M, 8]: this thread's 4 partial sums, no shuffle
        a = gl.convert_layout(alpha, gl.SliceLayout(1, part.type.layout))
        l_i = l_i * gl.expand_dims(a, 1) + part
    else:
        l_i = l_i * alpha + p_sums(p, False)
    return p, alpha, m_new, l_i


@gluon.jit
def in_rows_of(x, s):
    """A row vector ``x`` in the row slice of ``s``'s layout (between a block's pieces: the same
    rows in the same threads)."""
    return gl.convert_layout(x, gl.SliceLayout(1, s.type.layout))


@gluon.jit
def columns(s, col0):
    """The key columns of S, the first ``col0``, in its column slice (a block in pieces: each
    piece's)."""
    if boxes.in_pieces(s):
        return columns(s[0], col0), columns(s[1], col0 + s[0].type.shape[1])
    else:
        return col0 + gl.arange(0, s.type.shape[1], gl.SliceLayout(0, s.type.layout))


@gluon.jit
def mask(s, cols, rows, seqlen, CAUSAL: gl.constexpr):
    """S with ``-inf`` where its column (``columns``) lies past the sequence's end or, causal,
    right of the row's diagonal (a block in pieces: piece by piece)."""
    if boxes.in_pieces(s):
        return (mask(s[0], cols[0], rows, seqlen, CAUSAL),
                mask(s[1], cols[1], in_rows_of(rows, s[1]), seqlen, CAUSAL))
    else:
        col = gl.expand_dims(cols, 0)
        if CAUSAL:  # col <= row < seqlen for every row stored, so no second test: rows past the
            # end see keys past it too (finite: zeros, or the next head's), and are not stored
            valid = col <= gl.expand_dims(rows, 1)
        else:
            valid = col < seqlen
        return gl.where(valid, s, -float("inf"))


@gluon.jit
def exp2_rows(s, qk_scale, m, SOFTMAX: gl.constexpr = 0):
    """P = exp2(S·qk_scale − m), ``m`` each row's max (a block in pieces: piece by piece); with
    ``POLY_EXP`` the block's last quarter of columns through ``exp2_poly``."""
    if boxes.in_pieces(s):
        return (exp2_rows(s[0], qk_scale, m, SOFTMAX),
                exp2_rows(s[1], qk_scale, in_rows_of(m, s[1]), SOFTMAX))
    elif SOFTMAX & POLY_EXP:
        return exp2_split(s * qk_scale - gl.expand_dims(m, 1))
    else:
        return gl.exp2(s * qk_scale - gl.expand_dims(m, 1))


@gluon.jit
def exp2_split(x):
    """2^x of an [M, N] block, columns [0, 3N/4) on the SFU (MUFU.EX2), [3N/4, N) on the FMA pipe
    (``exp2_poly``). The split and join are on the top column bits, which a thread holds in its
    registers (``halve``): no data moves."""
    M: gl.constexpr = x.type.shape[0]
    N: gl.constexpr = x.type.shape[1]
    lo, hi = gl.split(gl.reshape(x, [M, 2, N // 2]).permute((0, 2, 1)))
    mid, top = gl.split(gl.reshape(hi, [M, 2, N // 4]).permute((0, 2, 1)))
    hi = gl.reshape(gl.join(gl.exp2(mid), exp2_poly(top)).permute((0, 2, 1)), [M, N // 2])
    hi = gl.convert_layout(hi, lo.type.layout)  # (the same registers, another spelling)
    y = gl.reshape(gl.join(gl.exp2(lo), hi).permute((0, 2, 1)), [M, N])
    return gl.convert_layout(y, x.type.layout)


# 2^f on [-1/2, 1/2] as a cubic (relative error < 7.5e-5, under fp16's half ulp of 2.4e-4: P
# goes to 16 bits next), fitted here for minimal relative error; FA4's sm100 forward computes
# part of its exps the same way (a cubic in the fraction, the integer part into the exponent;
# flash_attn/cute).
POLY = (0.05517132207751274, 0.24261054396629333, 0.6932609677314758, 0.9999281167984009)
COEF3, COEF2, COEF1, COEF0 = (gl.constexpr(c) for c in POLY)
ROUND = gl.constexpr(12582912.0)  # 1.5·2^23: x + ROUND rounds x to an integer in the low bits


@gluon.jit
def exp2_poly(x):
    """2^x on the FMA pipe, for x <= 0: x = j + f with j = round(x) (the add of ROUND, no
    conversion instruction: those run on the SFU too), the cubic in f, and j added into the
    result's exponent field. x is clamped at −125 first (a masked −inf among them): 2^−125 is
    still a normal float, and a P that small is 0 in 16 bits."""
    x = gl.maximum(x, -125.0)
    t = x + ROUND
    f = x - (t - ROUND)
    p = ((COEF3 * f + COEF2) * f + COEF1) * f + COEF0
    bits = p.to(gl.int32, bitcast=True) + (t.to(gl.int32, bitcast=True) << 23)
    return bits.to(gl.float32, bitcast=True)


@gluon.jit
def p_sums(p, LANES: gl.constexpr):
    """P's row sums: [M] (a thread's columns, then across the 4 lanes of a row) or, with
    ``LANES``, [M, 8], the thread's own 4 partial sums (``halve``: no shuffle). A block in
    pieces: the pieces' sums added, in the first piece's layout."""
    if boxes.in_pieces(p):
        head = p_sums(p[0], LANES)
        return head + gl.convert_layout(p_sums(p[1], LANES), head.type.layout)
    elif LANES:
        return halve(p, 8, False)
    else:
        return gl.sum(p, 1)


def clock_fence_asm(result: str, ptr: int, seqlen: int) -> str:
    """The schedule fence's PTX: read ``%clock``, store it to operand ``$ptr`` if operand
    ``$seqlen`` is negative (never), and return ``result``."""
    return (f"{{ .reg .u32 t; .reg .pred q; mov.u32 t, %clock; setp.lt.s32 q, ${seqlen}, 0; "
            f"@q st.global.b32 [${ptr}], t; mov.b32 $0, {result}; }}")


FENCE_ASM = gl.constexpr(clock_fence_asm("0", 1, 2))
HOLD_ASM = gl.constexpr(clock_fence_asm("$1", 2, 3))  # passes operand $1 through


@gluon.jit
def schedule_fence(ptr, seqlen):
    """Keep ptxas from moving code across this point (a no-op otherwise).

    ptxas does not reorder instructions across a read of ``%clock`` whose value is used; the
    value goes to a store predicated on ``seqlen < 0``, which never runs (the launch rejects empty
    sequences) but keeps the read alive. The overlapped kernels need it before
    ``warpgroup_mma_wait(0)``: without it ptxas hoists that wait above the softmax (to pack P_j
    into the registers P_{j-1}·V_{j-1} is still reading), and the softmax no longer runs under
    its own P·V (``test_softmax_runs_under_its_own_pv`` reads both SASS; the two builds time
    the same on the H200: ``results/h200-ab-fence.json``)."""
    gl.inline_asm_elementwise(FENCE_ASM, "=r,l,r", [ptr.to(gl.int64), seqlen], dtype=gl.int32,
                              is_pure=False, pack=1)


@gluon.jit
def hold(x, ptr, seqlen):
    """``x`` (fp32) unchanged, but available no earlier than here: ``schedule_fence`` that also
    passes ``x`` through its asm. Arithmetic that uses the result stays below this point in LLVM
    (a data dependence on an asm with side effects, which keeps its place among the wgmma
    issues) and in ptxas (the clock read); pure arithmetic otherwise floats to where its inputs
    are ready. One clock read per element a thread holds: pass a small tensor (a row factor)."""
    return gl.inline_asm_elementwise(HOLD_ASM, "=r,r,l,r", [x, ptr.to(gl.int64), seqlen],
                                     dtype=gl.float32, is_pure=False, pack=1)


@gluon.jit
def pack(p, dtype: gl.constexpr, D: gl.constexpr, num_warps: gl.constexpr):
    """P (fp32, accumulator layout) -> input dtype, as the register A operand of P·V (a block in
    pieces: each piece)."""
    if boxes.in_pieces(p):
        return pack(p[0], dtype, D, num_warps), pack(p[1], dtype, D, num_warps)
    else:
        return gl.convert_layout(p.to(dtype), p_layout(D, num_warps))


@gluon.jit
def rescale(acc, alpha):
    """O *= exp2(m_old − m_new), row by row."""
    a = gl.convert_layout(alpha, gl.SliceLayout(1, acc.type.layout))
    return acc * gl.expand_dims(a, 1)


@gluon.jit
def moved(alpha):
    """Whether any row of this warpgroup's block moved its max (``COND_RESCALE``: alpha < 1
    somewhere), as one value for the whole warpgroup: a branch on it skips the rescale's
    D/2 FMULs a thread at once. Computed in the softmax, so its reduction across the four warps
    (through shared memory) runs under P_{j-1}·V_{j-1}, not after it."""
    return gl.max((alpha < 1.0).to(gl.int32), 0) != 0


@gluon.jit
def q_rows(m0, M: gl.constexpr, BN: gl.constexpr, num_warps: gl.constexpr):
    """This warpgroup's row indices within the sequence, in the score layout."""
    return m0 + gl.arange(0, M, gl.SliceLayout(1, score_layout(BN, num_warps)))


@gluon.constexpr_function
def out_layout(D, num_warps):
    """O as the epilogue stores it: 8 elements (16 bytes) a thread along a row, a warp's threads
    across whole rows, so one store instruction writes full 128-byte lines."""
    cols = min(32, D // 8)
    return gl.BlockedLayout([1, 8], [32 // cols, cols], [num_warps, 1], [1, 0])


@gluon.jit
def epilogue(acc, m_i, l_i, o_ptr, lse_ptr, row0, m0, seqlen, q, num_warps: gl.constexpr):
    """O /= l and LSE = (m + log2 l)·ln 2; masked stores of this warpgroup's rows (rows past the
    sequence's end belong to the next head and are not written). ``o_ptr``: O's pointer, or
    its rank-4 descriptor (``boxes.py``: O goes out by TMA, clipped at the sequence's end).

    O goes out through ``q``, this warpgroup's Q tile in shared memory — dead once its last
    Q·Kᵀ is done, and exactly O's size: written in the accumulator's layout, read back 16 bytes a
    thread along a row, stored a row per 8-32 threads. Stored straight from the accumulator's
    layout, each thread writes 4 bytes of 8 rows an instruction: that epilogue took 2.3 K clk a
    warpgroup at d 128 and 7.7 K at d 256, a quarter of a CTA's time at S 1K
    (``results/archive/traces/old_epilogue/``)."""
    o_l: gl.constexpr = acc.type.layout
    M: gl.constexpr = acc.type.shape[0]
    D: gl.constexpr = acc.type.shape[1]
    l_i = gl.convert_layout(row_sum(l_i), m_i.type.layout)  # (LANE_SUM: lanes summed, once)
    l_o = gl.convert_layout(l_i, gl.SliceLayout(1, o_l))
    q.store((acc / gl.expand_dims(l_o, 1)).to(q.dtype))
    if isinstance(o_ptr, tma.tensor_descriptor):  # rank 4: its bounds stop at the sequence's end
        boxes.store(o_ptr, q, row0, m0)
    else:
        gl.thread_barrier()  # every warp's rows are in before any warp reads another's
        lay: gl.constexpr = out_layout(D, num_warps)
        o = q.load(lay)
        rows = m0 + gl.arange(0, M, gl.SliceLayout(1, lay))
        cols = gl.arange(0, D, gl.SliceLayout(0, lay))
        flat = (row0 + rows).to(gl.int64)
        ptrs = o_ptr + gl.expand_dims(flat * D, 1) + gl.expand_dims(cols, 0)
        gl.store(ptrs, o, mask=gl.expand_dims(rows < seqlen, 1))
    lse = (m_i + gl.log2(l_i)) * 0.6931471805599453
    lse_rows = m0 + gl.arange(0, M, l_i.type.layout)
    gl.store(lse_ptr + (row0 + lse_rows).to(gl.int64), lse, mask=lse_rows < seqlen)
