"""The chapters' claims about their figures (`sim.claims`): true on the schedules the chapters
draw, and false on a schedule built to break each one — so a claim check can fail."""
import functools

import pytest
import simpy

from sim import claims
from sim.attention import overlap, prepare, ws, ws_pingpong
from sim.attention.cta import AttentionCTA
from sim.config import AttentionConfig
from sim.cta import make_units
from sim.hardware import H100
from sim.predict import predict
from sim.trace import Trace

SHAPE = {"batch": 4, "heads": 16, "seqlen": 8448, "headdim": 128}   # the chapters' setting
BLOCKS = 12


@functools.cache
def drawn(variant: str, depth: int | None = 7):
    """The trace a chapter draws: `predict` at the chapters' shape, on h100 (`depth`: the wgmma
    queue's, chapter 04's what-if)."""
    hw = H100.with_(wgmma_queue_depth=depth)
    return predict(AttentionConfig(variant=variant, **SHAPE), hw, keep_trace=True).trace


def one_cta(variant: str, consumer, producer=True, hw=H100) -> Trace:
    """One CTA of `variant`'s tiles over BLOCKS K/V blocks with this `consumer(cta, w)`."""
    cfg = prepare(AttentionConfig(variant=variant, **SHAPE), hw)
    env, trace = simpy.Environment(), Trace()
    cta = AttentionCTA(env, hw, cfg, trace, BLOCKS, units=make_units(env, hw, trace))
    roles = ([ws.producer(cta)] if producer else []) + [consumer(cta, w)
                                                        for w in range(cfg.consumers)]
    env.run(until=simpy.AllOf(env, [env.process(r) for r in roles]))
    return trace


# --- the schedules built to break a claim --------------------------------------------------------
def turn_passed_before_issue(cta, w):
    """ws_pingpong's consumer handing its turn on *before* issuing Q·Kᵀ: the turns order nothing."""
    me = cta.wg(w)
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        yield from cta.acquire(me, cta.k, j)
        yield from cta.wait_turn(w, j)
        cta.pass_turn(w)
        yield cta.qk(w, j)
        cta.release(cta.k, j)
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)
        cta.release(cta.v, j)
    yield from cta.epilogue(w)


def ws_with_cta_barrier(cta, w):
    """ws's consumer meeting the other consumers at a bar.sync every block, as `pipelined`'s
    must: the two are tied together again."""
    me = cta.wg(w)
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        yield from cta.sync_consumers(w)
        yield from cta.acquire(me, cta.k, j)
        yield cta.qk(w, j)
        cta.release(cta.k, j)
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.acquire(me, cta.v, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)
        cta.release(cta.v, j)
    yield from cta.epilogue(w)


# --- chapter 02 -----------------------------------------------------------------------------------
def test_ws_consumers_drift_apart_pipelined_ones_collide():
    assert claims.drift_apart(drawn("ws"))
    assert not claims.drift_apart(drawn("pipelined"))
    co = claims.exp_coincidence(drawn("pipelined"))
    assert min(co.values()) > 0.9, co


def test_drift_claim_fails_on_ws_tied_by_a_cta_barrier():
    assert claims.drift_apart(one_cta("ws", ws.consumer))
    assert not claims.drift_apart(one_cta("ws", ws_with_cta_barrier))


# --- chapter 03 -----------------------------------------------------------------------------------
def test_pingpong_keeps_score_gemms_apart():
    assert claims.qk_apart(drawn("ws_pingpong"))
    assert claims.qk_collisions(drawn("pipelined"))


def test_qk_claim_fails_when_the_turn_passes_before_the_issue():
    assert claims.qk_apart(one_cta("ws_pingpong", ws_pingpong.consumer))
    broken = one_cta("ws_pingpong", turn_passed_before_issue)
    assert not claims.qk_apart(broken)
    assert claims.qk_collisions(broken, claims.steady(broken))


# --- chapter 04 -----------------------------------------------------------------------------------
@pytest.mark.parametrize("variant", ["overlap", "fa3"])
def test_pv_runs_under_its_own_row_max_not_under_the_exps(variant):
    """At the measured queue depth (7) P_{j-1}·V_{j-1} overlaps the row max of softmax j in every
    steady block and is done before its exps; with a queue that holds a whole Q·Kᵀ + P·V group
    (8 + 11 wgmmas) the exps run under it too."""
    assert claims.pv_overlaps_softmax(drawn(variant))
    assert max(claims.pv_under_softmax(drawn(variant), "exp").values()) == 0
    assert claims.pv_overlaps_softmax(drawn(variant, depth=19), "exp")


def test_pv_claim_fails_without_the_fence():
    """overlap's consumer as ptxas compiles it without the fence: P·V's wait before the softmax."""
    def hoisted(cta, w):
        yield from overlap.consumer(cta, w, fence=False)

    assert claims.pv_overlaps_softmax(one_cta("overlap", overlap.consumer, producer=False))
    assert not claims.pv_overlaps_softmax(one_cta("overlap", hoisted, producer=False))


def test_ws_has_no_pv_under_its_own_softmax():
    assert not claims.pv_overlaps_softmax(drawn("ws"))


def test_a_trace_too_short_for_a_steady_state_is_refused():
    short = predict(AttentionConfig(variant="ws", batch=1, heads=2, seqlen=512, headdim=128),
                    H100, keep_trace=True).trace
    with pytest.raises(ValueError, match="steady state needs more than"):
        claims.qk_apart(short)



# --- the figures that carry the claims ------------------------------------------------------------
def test_split_lanes_draw_each_warpgroups_own_work():
    import matplotlib
    matplotlib.use("Agg")
    from sim.plot import gantt

    trace = drawn("overlap")
    ax = gantt(trace, window=(0, 4000), split=("tensor", "sfu"))
    labels = [t.get_text() for t in ax.get_yticklabels()]
    for lane in ("unit: tensor", "tensor ← consumer0", "tensor ← consumer1",
                 "sfu ← consumer0", "sfu ← consumer1"):
        assert lane in labels, labels
    assert "fma ← consumer0" not in labels
    # a split lane holds only its warpgroup's bars: as many as that actor's tensor intervals
    y = {t.get_text(): pos for t, pos in zip(ax.get_yticklabels(), ax.get_yticks())}
    mine = [i for i in trace.intervals if i.unit == "tensor" and i.actor == "consumer0"
            and i.end >= 0 and i.start <= 4000]
    on_lane = [c for c in ax.collections if abs(c.get_paths()[0].vertices[:, 1].mean()
                                                - y["tensor ← consumer0"]) < 0.45]
    assert sum(len(c.get_paths()) for c in on_lane) == len(mine) > 0


def test_utilization_bars_take_the_timelines_unit_colours():
    import matplotlib
    from matplotlib.colors import to_hex
    matplotlib.use("Agg")
    from sim.plot import PALETTE, UNIT_KIND, utilization_bars

    ax = utilization_bars({"a": {"tma": 0.2, "tensor": 0.6, "sfu": 0.3},
                           "b": {"tma": 0.1, "tensor": 0.7, "sfu": 0.2}})
    handles, labels = ax.get_legend_handles_labels()
    for h, u in zip(handles, labels):
        assert to_hex(h.patches[0].get_facecolor()) == PALETTE[UNIT_KIND[u]][0].lower(), u
    assert PALETTE[UNIT_KIND["tensor"]][0] == PALETTE["qk"][0]
    assert PALETTE[UNIT_KIND["tma"]][0] == PALETTE["load_k"][0]


def test_softmax_under_the_other_consumers_gemms():
    """ws: every steady softmax has some of the other consumer's GEMMs under it; pipelined's,
    run side by side, far less."""
    ws_ = claims.softmax_under_others(drawn("ws"))
    pl = claims.softmax_under_others(drawn("pipelined"))
    assert min(ws_.values()) > 0
    assert sum(pl.values()) < 0.5 * sum(ws_.values())
