"""`fa3`, persistent (`AttentionConfig(variant="fa3", persistent=True)`; the kernel's
``fa3_kernel(..., PERSISTENT=True)``, ``kernels/attention/persistent.py``): one CTA per SM walks a
list of (batch·head, Q tile) tiles instead of one CTA per tile. The roles are fa3's, run once per
tile with their ring positions and turns counted on across tiles::

    producer                                     consumer WG w, 64 rows of each tile
    for each tile t of this CTA:                 for each tile t of this CTA:
        wait q_empty (parity of t-1)                 wait q_full (parity of t)
        load_q -> q_full                             fa3's loop at ring positions it + j and
        for each block j of t:                       turns tk + j (tk = it + t); after its last
            produce K, V at ring position it+j       Q·Kᵀ: arrive q_empty -> the producer loads
                                                     Q of t+1 and its first K/V under this
                                                     tile's last P·V and epilogue
                                                 epilogue: O through its own shared buffer
                                                 (one they take in turns where only one fits)

Nothing here costs what a step of the plain `fa3` does not: the same `load_q`, TMA copies, wgmma
groups, softmax, rescale, pack and epilogue (`sim/attention/cta.py`); what changes is only who
waits for what. The consumer is written as the kernel's (`fidelity.pairs` holds them together).

The tile order is the kernel's rule (`tile_coords`, `cta_tile`), reimplemented here (the model
imports nothing of `kernels/`): non-causal, a head's Q tiles consecutive, CTA p takes tiles
p, p + P, p + 2P, ...; causal, longest first (every head's last Q tile, then every head's
next-to-last, ...) handed out in a zigzag (odd rounds in reverse CTA order). The kernel's other
causal order (``persistent="pairs"``: one head's Q tiles n_m-1-k and k a CTA in consecutive
rounds) is `pairs_tiles_of`, which `sim.predict.predict_attention_persistent` takes as its
``tiles_of``; the model has no L2, so it cannot tell the two orders' K/V locality apart.
"""
from __future__ import annotations

import math

import simpy

from ..config import AttentionConfig, o_buffers
from ..engine import MBarrier, Turns
from ..hardware import Hardware
from ..memo import on_disk
from ..trace import Trace
from . import fa3, overlap
from .cta import AttentionCTA

WARP_SPECIALIZED = fa3.WARP_SPECIALIZED
LIVE_S, LIVE_P = fa3.LIVE_S, fa3.LIVE_P


# --- the tile order (kernels/attention/persistent.py `tile_count`, `tile_coords`, `cta_tile`) ----
def tile_count(cfg: AttentionConfig) -> tuple[int, int, int]:
    """(Q tiles per head, batch·heads, tiles)."""
    n_m = math.ceil(cfg.seqlen / cfg.block_m)
    heads = cfg.batch * cfg.heads
    return n_m, heads, n_m * heads


def tile_coords(t: int, n_m: int, heads: int, causal: bool) -> tuple[int, int]:
    """Tile t -> (batch·head, Q tile index): non-causal a head's Q tiles consecutive; causal
    longest first, every head's last Q tile, then every head's next-to-last, ..."""
    if causal:
        r, bh = divmod(t, heads)
        return bh, n_m - 1 - r
    bh, m = divmod(t, n_m)
    return bh, m


def cta_tile(i: int, p: int, P: int, causal: bool) -> int:
    """CTA p's i-th tile (possibly past the last): round-robin; causal in a zigzag."""
    if causal and i % 2:
        p = P - 1 - p
    return i * P + p


def ctas(cfg: AttentionConfig, hw: Hardware) -> int:
    """The launch's CTAs: min(tiles, SMs), one per SM."""
    return min(tile_count(cfg)[2], hw.sms)


def num_blocks(m: int, cfg: AttentionConfig) -> tuple[int, int]:
    """(K/V blocks, of which masked) of Q tile m (`sim.predict._lengths`' rule; the kernel's
    `num_blocks`)."""
    kv = math.ceil(cfg.seqlen / cfg.block_n)
    if not cfg.causal:
        return kv, 1 if cfg.seqlen % cfg.block_n else 0
    n = math.ceil(min(cfg.seqlen, (m + 1) * cfg.block_m) / cfg.block_n)
    return n, n - (m * cfg.block_m) // cfg.block_n


def tiles_of(cfg: AttentionConfig, hw: Hardware) -> list[list[tuple[int, int]]]:
    """Each CTA's tiles in the order it walks them, as (K/V blocks, masked blocks)."""
    n_m, heads, tiles = tile_count(cfg)
    P = ctas(cfg, hw)
    out = []
    for p in range(P):
        mine = []
        for i in range(math.ceil(tiles / P)):
            t = cta_tile(i, p, P, cfg.causal)
            if t < tiles:
                mine.append(num_blocks(tile_coords(t, n_m, heads, cfg.causal)[1], cfg))
        out.append(mine)
    return out


def pairs_tiles_of(cfg: AttentionConfig, hw: Hardware) -> list[list[tuple[int, int]]]:
    """`tiles_of` in the kernel's ``PAIRS`` order (``persistent="pairs"``, causal): CTA p's
    rounds 2r and 2r + 1 are one head's Q tiles n_m-1-k and k, pair q = r·P + p of the pairs
    handed out in head order; a pair whose two tiles are one has no second round."""
    n_m, heads, _ = tile_count(cfg)
    half, P = math.ceil(n_m / 2), ctas(cfg, hw)
    out = []
    for p in range(P):
        mine = []
        for r in range(math.ceil(heads * half / P)):
            q = r * P + p
            k = q % half
            if q < heads * half:
                mine.append(num_blocks(n_m - 1 - k, cfg))
                if k < n_m - 1 - k:
                    mine.append(num_blocks(k, cfg))
        out.append(mine)
    return out


# --- the CTA ---------------------------------------------------------------------------------
class PersistentCTA(AttentionCTA):
    """A CTA that walks `tiles` ((K/V blocks, masked blocks) each): its ring positions run on
    across tiles (tile i's block j is position it + j), so block j's tags, slots and phases are
    those of position it + j; `q_empty` (one arrive per consumer) frees Q for the next tile."""

    def __init__(self, env, hw: Hardware, cfg: AttentionConfig, trace: Trace,
                 tiles: list[tuple[int, int]], name: str = "", units: dict | None = None):
        super().__init__(env, hw, cfg, trace, sum(n for n, _ in tiles), 0, name, units)
        self.tiles = list(tiles)
        self._masked, it = set(), 0
        for n, m in self.tiles:
            self._masked.update(range(it + n - m, it + n))
            it += n
        self.q_empty = MBarrier(env, f"{name}q_empty", cfg.consumers, hw.mbarrier_clk,
                                hw.mbarrier_probe_clk)
        self.o_buffers = o_buffers(cfg, hw)
        self.epi_turns = Turns(env, cfg.consumers, hw.mbarrier_clk, hw.mbarrier_probe_clk)

    def masked(self, j: int) -> bool:
        return j in self._masked


# --- the roles (kernels/attention/persistent.py `producer`, `consumer`) ------------------------
def producer(cta: PersistentCTA):
    me = cta.producer_name
    it = 0
    for i in range(len(cta.tiles)):
        n, ti = cta.tiles[i][0], i
        yield from cta.wait(me, cta.q_empty, (ti & 1) ^ 1)     # every consumer's last Q·Kᵀ
        cta.load_q(me)
        for j in range(n):
            yield from cta.produce(me, cta.k, it + j)
            yield from cta.produce(me, cta.v, it + j)
        it += n


def consumer(cta: PersistentCTA, w: int):
    """fa3's consumer (`overlap.consumer` with turns) once per tile, as the kernel's; with the
    `no_turns` switch, without turns (each issues once its K and V are in); with
    `one_release`, K_j's slot goes back with V_{j-1}'s, and a tile's last V with the next
    tile's first K (one arrive in the kernel; the bar.sync it saves is no cost here)."""
    me = cta.wg(w)
    turns = "no_turns" not in cta.cfg.switches
    one_release = "one_release" in cta.cfg.switches
    it = 0      # ring position of this tile's block 0
    for i in range(len(cta.tiles)):
        n, ti = cta.tiles[i][0], i                              # (the kernel's ti: no tile past
        tk = it + ti                                            # the last here) turns so far
        yield from cta.wait_q(me, ti & 1)

        # block 0: the scores alone
        yield from cta.acquire(me, cta.k, it)
        if turns:
            yield from cta.wait_turn(w, tk)
        scores = cta.qk(w, it)
        yield cta.issued(w)
        if turns:
            cta.pass_turn(w)
        yield from cta.wait_qk(scores, w)
        if n == 1:                                              # Q read for the last time
            cta.q_empty.arrive()
        cta.release(cta.k, it)
        if one_release and it:                                  # in the same arrive: the last
            cta.v.empty[cta.v.slot(it - 1)[0]].arrive()         # tile's last V
        yield from cta.softmax(w, it)
        yield from cta.pack(w, it)

        for j in range(1, n):
            yield from cta.acquire(me, cta.k, it + j)
            yield from cta.acquire(me, cta.v, it + j - 1)
            if turns:
                yield from cta.wait_turn(w, tk + j)
            scores = cta.qk(w, it + j)                          # S_j = Q K_jᵀ (async)
            out = cta.pv(w, it + j - 1)                         # O += P_{j-1} V_{j-1} (async)
            yield cta.issued(w)
            if turns:
                cta.pass_turn(w)
            yield from cta.wait_qk(scores, w)                      # wgmma_wait<1>: the scores only
            if j == n - 1:
                cta.q_empty.arrive()
            if not one_release:
                cta.release(cta.k, it + j)
            yield from cta.softmax(w, it + j)                   # under P_{j-1} V_{j-1}
            yield from overlap.wait_pv(cta, w, out, it + j - 1, False, one_release)  # <0>
            yield from cta.rescale(w, it + j)
            yield from cta.pack(w, it + j)

        # the last P·V
        yield from cta.acquire(me, cta.v, it + n - 1)
        if turns:
            yield from cta.wait_turn(w, tk + n)
        out = cta.pv(w, it + n - 1)
        yield cta.issued(w)
        if turns:
            cta.pass_turn(w)
        yield from overlap.wait_pv(cta, w, out, it + n - 1, False, give_back=not one_release)
        if cta.o_buffers < cta.cfg.consumers:                   # one O buffer: in turns
            yield from cta.wait_turn(w, ti, cta.epi_turns)
        yield from cta.epilogue(w)
        if cta.o_buffers < cta.cfg.consumers:
            cta.pass_turn(w, cta.epi_turns)
        it += n


def roles(cta: PersistentCTA):
    return [producer(cta)] + [consumer(cta, w) for w in range(cta.cfg.consumers)]


@on_disk
def simulate(cfg: AttentionConfig, hw: Hardware, tiles: list[tuple[int, int]],
             trace: Trace | None = None) -> tuple[float, Trace]:
    """One SM's persistent CTA over `tiles` ((K/V blocks, masked blocks) each); (clk, trace).
    `cfg` must come from `sim.attention.prepare`."""
    if not tiles or min(n for n, _ in tiles) < 1:
        raise ValueError(f"a persistent CTA needs tiles of at least one K/V block, got {tiles}")
    env, trace = simpy.Environment(), trace or Trace()
    cta = PersistentCTA(env, hw, cfg, trace, tiles)
    procs = [env.process(role) for role in roles(cta)]
    env.run(until=simpy.AllOf(env, procs))
    return env.now, trace
