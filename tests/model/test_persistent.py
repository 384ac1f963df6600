"""The model's persistent fa3 (`sim/attention/persistent.py`, `AttentionConfig(persistent=True)`):
the kernel's tile order, nothing paid that the plain fa3 does not pay, and the launch's
per-tile decomposition against whole simulated CTAs."""
from dataclasses import replace

import pytest

from sim import AttentionConfig, attention, predict
from sim.attention import persistent
from sim.config import kernel_tile, o_buffers
from sim.hardware import get
from sim.predict import TileCosts

H200 = get("h200")
TILES = {d: kernel_tile("fa3", d) for d in (64, 128, 256)}     # the kernel's (sim/tiles.json)


def cfg_at(d, S, causal=False, **kw):
    bm, bn, c = TILES[d]
    return AttentionConfig(variant="fa3", batch=16384 // S, heads=2048 // d, seqlen=S, headdim=d,
                           causal=causal, block_m=bm, block_n=bn, consumers=c, **kw)


def prepared(d, S, causal=False):
    return attention.prepare(cfg_at(d, S, causal, persistent=True), H200)


@pytest.mark.parametrize("S, d, heads", [(1000, 128, 64), (16384, 256, 8), (1, 64, 3),
                                         (8448, 128, 64), (4096, 256, 32)])
@pytest.mark.parametrize("causal", [False, True])
def test_tile_order_is_the_kernels(S, d, heads, causal):
    """Every (head, Q tile) once; causal: longest first, zigzag, CTAs within 3 % of the mean
    blocks (kernels' test_persistent_tile_order, the same rule)."""
    bm, bn, c = TILES[d]
    cfg = attention.prepare(AttentionConfig(variant="fa3", batch=1, heads=heads, seqlen=S,
                                            headdim=d, causal=causal, block_m=bm, block_n=bn,
                                            consumers=c, persistent=True), H200)
    n_m, bh, tiles = persistent.tile_count(cfg)
    P = persistent.ctas(cfg, H200)
    assert P == min(tiles, 132)
    seen = [persistent.tile_coords(persistent.cta_tile(i, p, P, causal), n_m, bh, causal)
            for p in range(P) for i in range(-(-tiles // P))
            if persistent.cta_tile(i, p, P, causal) < tiles]
    assert sorted(seen) == [(b, m) for b in range(bh) for m in range(n_m)]
    lists = persistent.tiles_of(cfg, H200)
    assert sum(map(len, lists)) == tiles
    if causal:
        assert lists[0][0][0] == -(-min(S, n_m * bm) // bn)        # the longest tile first
        blocks = [sum(n for n, _ in tl) for tl in lists]
        if tiles >= 4 * P:
            assert max(blocks) / (sum(blocks) / P) < 1.03


def test_one_tile_costs_what_the_plain_cta_costs():
    """No cost of its own: a persistent CTA over one tile is the plain fa3 CTA (within 1 %: the
    q_empty wait's probe); at d 256 plus the two epilogues in turns through the one O buffer
    that fits (the kernel's epi_turn)."""
    for d, rel in ((64, 0.01), (128, 0.01), (256, 0.03)):
        cfg = prepared(d, 1024)
        plain = attention.prepare(cfg_at(d, 1024), H200)
        n = 1024 // cfg.block_n
        one = persistent.simulate(cfg, H200, [(n, 0)])[0]
        alone = attention.simulate(plain, H200, n)[0]
        assert one == pytest.approx(alone, rel=rel) and one >= alone * 0.999


def test_the_next_tile_loads_under_the_last():
    """A second tile costs less than a lone one: its Q and first K/V land under the first's last
    P·V and epilogue (q_empty arrives after the last Q·Kᵀ)."""
    for d in TILES:
        cfg = prepared(d, 1024)
        n = 1024 // cfg.block_n
        one = persistent.simulate(cfg, H200, [(n, 0)])[0]
        two = persistent.simulate(cfg, H200, [(n, 0)] * 2)[0]
        assert two - one < 0.92 * one


@pytest.mark.parametrize("d, S, causal", [(128, 1024, True), (64, 1024, True),
                                          (256, 2048, True), (128, 1024, False)])
def test_tile_costs_add_up_to_the_simulated_cta(d, S, causal):
    """The launch's decomposition (a tile's cost in the stream + once the cold start and drain)
    within 0.5 % of simulating the CTA's whole tile list."""
    cfg = prepared(d, S, causal)
    lists = persistent.tiles_of(cfg, H200)
    costs = TileCosts(cfg, H200)
    for p in (0, len(lists) - 1):
        tiles = lists[p][:8]
        exact = persistent.simulate(cfg, H200, tiles)[0]
        assert costs.cta(tiles) == pytest.approx(exact, rel=0.005)


def test_persistent_gains_where_the_fixed_costs_are():
    """S 1K (8 blocks a tile): ahead of the plain grid by most of the per-CTA share; S 16K
    (128 blocks): level within 2 %."""
    for S, lo, hi in ((1024, 1.04, 1.20), (16384, 0.98, 1.02)):
        cfg = cfg_at(128, S)
        gain = predict(replace(cfg, persistent=True), H200).tflops / predict(cfg, H200).tflops
        assert lo < gain < hi, (S, gain)


def test_persistent_is_fa3s_and_needs_its_o_buffer():
    with pytest.raises(ValueError, match="only fa3"):
        attention.prepare(replace(cfg_at(128, 1024, persistent=True), variant="ws"), H200)
    # FA3's own d 256 tile (128 x 80): Q 64 + the rings 160 KiB leave no room for an O buffer
    with pytest.raises(ValueError, match="shared memory"):
        attention.prepare(AttentionConfig(variant="fa3", headdim=256, persistent=True), H200)
    # its d 128 tile (128 x 176): room for one, which the consumers take in turns
    assert o_buffers(attention.prepare(AttentionConfig(variant="fa3", headdim=128,
                                                       persistent=True), H200), H200) == 1
    assert persistent.PersistentCTA.__mro__[1] is attention.AttentionCTA
    cfg = prepared(256, 1024)
    assert o_buffers(cfg, H200) == 1 and o_buffers(prepared(128, 1024), H200) == 2


@pytest.mark.parametrize("S, d, heads", [(1024, 128, 256), (1024, 256, 128), (4096, 128, 64),
                                         (300, 128, 320), (1, 64, 3)])
def test_pairs_order_is_the_kernels(S, d, heads):
    """`pairs_tiles_of` (the kernel's PAIRS order): the same tiles as the zigzag's, in pairs of
    one head, long first; at an even count of Q tiles a head, every busy CTA within one pair of
    the same blocks (kernels' test_pairs_order, the same rule)."""
    cfg = attention.prepare(AttentionConfig(variant="fa3", batch=1, heads=heads, seqlen=S,
                                            headdim=d, causal=True, block_m=128,
                                            block_n=TILES[d][1], consumers=2, persistent=True),
                            H200)
    pairs, zigzag = persistent.pairs_tiles_of(cfg, H200), persistent.tiles_of(cfg, H200)
    assert sorted(t for c in pairs for t in c) == sorted(t for c in zigzag for t in c)
    n_m = persistent.tile_count(cfg)[0]
    pair = persistent.num_blocks(n_m - 1, cfg)[0] + persistent.num_blocks(0, cfg)[0]
    for mine in pairs:
        assert all(a[0] >= b[0] for a, b in zip(mine[::2], mine[1::2]))   # long, then short
    busy = [sum(n for n, _ in mine) for mine in pairs if mine]
    if n_m % 2 == 0:
        assert max(busy) - min(busy) <= pair


def test_no_turns_drops_the_persistent_turns():
    """``no_turns`` (as the kernel's persistent consumer, ``if TURNS:``): no warpgroup waits on a
    turn, and the CTA over the same tiles is no longer than with turns by more than the turns'
    order could save (the GEMMs still take the tensor core one at a time)."""
    tiles = [(8, 1), (1, 1), (7, 1), (2, 1)]  # d 64 S 1K causal: a pair of pairs
    cfg = attention.prepare(AttentionConfig(variant="fa3", batch=16, heads=32, seqlen=1024,
                                            headdim=64, causal=True, block_m=128, block_n=128,
                                            consumers=2, persistent=True), H200)
    free = attention.prepare(replace(cfg, switches=("no_turns",)), H200)
    clk, trace = persistent.simulate(cfg, H200, tiles)
    clk_free, trace_free = persistent.simulate(free, H200, tiles)
    turn_waits = [w for w in trace.waits if "turn" in str(w).lower()]
    assert turn_waits and not [w for w in trace_free.waits if "turn" in str(w).lower()]
    assert 0.8 * clk < clk_free < 1.2 * clk
