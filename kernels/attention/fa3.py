"""``fa3`` — everything together (``sim/attention/fa3.py``): producer/consumer roles and
setmaxnreg (``ws``), turns on the tensor cores (``ws_pingpong``) and, inside each consumer,
Q·K_jᵀ and P_{j-1}·V_{j-1} issued back to back with the softmax under them (``overlap``).
This is the FlashAttention-3 forward (FA3 §3, tab. 2's 661 TFLOP/s on an H100). As in the model,
the consumer is ``overlap.py``'s with turns and the producer ``ws.py``'s::

    producer (1 warp, setmaxnreg 24/32)   consumer WG w (4 warps, setmaxnreg 240/160), 64 rows
    load_q; for each block j:             overlap.consumer with t.TURNS: per block
        produce(k, j)                         acquire(k, j), acquire(v, j-1); wait_turn
        produce(v, j)                         qk: S_j = Q K_jᵀ; pv: O += P_{j-1} V_{j-1}; pass_turn
                                              wait_qk; release(k, j); softmax j
                                              wait_pv, release(v, j-1); rescale O; pack P

``FENCE`` (default True) keeps the wait for P_{j-1}·V_{j-1} after the softmax (``overlap.py``).
``SOFTMAX`` bits (``steps.py``): ``RESCALE_EARLY`` rescales O under Q·K_jᵀ (``overlap.py``);
``NO_TURNS`` drops wait_turn/pass_turn: each consumer issues as soon as its K and V are in, the
tensor cores take the GEMMs in issue order, and what keeps them busy is each warpgroup's own
GEMM/softmax overlap (FA3 turns the turns off above d 128). ``ONE_RELEASE`` frees K_j's and
V_{j-1}'s slots with one arrive, ``NAMED_TURNS`` takes the turns on named barriers: a warpgroup
``bar.sync`` fewer per block each (``overlap.py``).
``PERSISTENT`` (default False): one CTA per SM over a list of tiles (``persistent.py``); the
launcher's grid is then 1-D, ``min(tiles, SMs)``. ``PAIRS`` (persistent, causal): the tiles in
pairs m, n_m-1-m of one head instead of longest first (``persistent.cta_tile``).
A K/V block of 80 rows (FA3's d 256 tile, ``tile=(128, 80)``) comes as two descriptors, a 64-row
and a 16-row box (``boxes.py``; the second ones as ``k_tail``, ``v_tail``, ``host.tail_args``):
every step takes the block's two pieces where it took one. On the H200 it is slower than 128×64
at every point of the d 256 grid but S 16K non-causal (results/h200-attention-grid-d256-128x80.json,
tests/kernels/test_tile_pieces_measured.py): the 16-row piece's Q·Kᵀ wgmma reads Q's 64×16 slice
from shared memory for 16 columns, bound by the reads and not by its math.
"""
from __future__ import annotations

from triton.experimental import gluon
from triton.experimental.gluon import language as gl

from .boxes import in_pieces
from .overlap import consumer
from .partitions import warp_specialized
from .persistent import fa3_persistent
from .steps import NAMED_TURNS, NO_TURNS, ONE_RELEASE, RESCALE_EARLY
from .ws import producer


@gluon.jit
def fa3_kernel(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM: gl.constexpr,
               STAGES: gl.constexpr, CONSUMERS: gl.constexpr, CAUSAL: gl.constexpr,
               num_warps: gl.constexpr, PROFILE: gl.constexpr = False, FENCE: gl.constexpr = True,
               SOFTMAX: gl.constexpr = 0, PERSISTENT: gl.constexpr = False,
               PAIRS: gl.constexpr = False, k_tail=None, v_tail=None):
    gl.static_assert(num_warps == 4, "the default partition is consumer 0 (one warpgroup)")
    if k_tail is not None:  # a block in pieces: the launcher hands the 16-row boxes apart
        k_desc = (k_desc, k_tail)
        v_desc = (v_desc, v_tail)
    if PERSISTENT:
        gl.static_assert(not in_pieces(k_desc), "persistent fa3 holds a K/V block in one box")
        gl.static_assert(not (SOFTMAX & (RESCALE_EARLY | NAMED_TURNS)),
                         "rescale_early, named_turns: the plain grid's fa3 only")
        fa3_persistent(q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen, qk_scale, BM, STAGES,
                       CONSUMERS, CAUSAL, FENCE, SOFTMAX, PAIRS, PROFILE)
    else:
        gl.static_assert(not PAIRS, "PAIRS: an order of the persistent build's causal tiles")
        gl.static_assert(not (SOFTMAX & NO_TURNS and SOFTMAX & NAMED_TURNS),
                         "named_turns: turns on named barriers; no_turns: no turns")
        warp_specialized(consumer, producer, q_desc, k_desc, v_desc, o_ptr, lse_ptr, seqlen,
                         qk_scale, BM, STAGES, CONSUMERS, CAUSAL, TURNS=not (SOFTMAX & NO_TURNS),
                         PROFILE=PROFILE, FENCE=FENCE, SOFTMAX=SOFTMAX)
