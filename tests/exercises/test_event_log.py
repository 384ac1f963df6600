"""The model's event log (`sim.simulate`), which the exercises' grader judges schedules by: a known
schedule logs what it should, the roles a caller supplies see only a `RoleView`, and a hook only
observes (the model's numbers are the same with one as without)."""
from __future__ import annotations

import pickle

import pytest

import sim
from sim import H100, AttentionConfig, RoleView, event_dict, predict, simulate

STAGES, BLOCKS = 2, 8


@pytest.fixture(scope="module")
def ws_run():
    run = simulate(AttentionConfig(variant="ws", stages=STAGES), H100, n_blocks=BLOCKS)
    assert run.finished, run.error
    return run


def _index(events, kind, **match):
    """Positions (in log order) of the events of `kind` whose named fields match."""
    return [i for i, e in enumerate(events) if e[0] == kind
            and all(event_dict(e)[k] == v for k, v in match.items())]


def test_events_are_plain_data(ws_run):
    assert ws_run.events
    for e in ws_run.events:
        assert e[0] in sim.EVENTS and len(e) == 1 + len(sim.EVENTS[e[0]]), e
        event_dict(e)
    assert pickle.loads(pickle.dumps(ws_run.events)) == ws_run.events
    times = [event_dict(e).get("t", event_dict(e).get("t1")) for e in ws_run.events]
    assert times == sorted(times), "the log is in the order the model did things"


def test_ws_producer_claims_a_slot_only_after_its_release(ws_run):
    """ws, 2 stages: the producer's expect on r.full[s] for block j comes after the consumers'
    release of block j - 2 (the phase of r.empty[s] that their two arrivals complete)."""
    ev = ws_run.events
    for r in "kv":
        for s in range(STAGES):
            expects = _index(ev, "expect", barrier=f"{r}.full[{s}]")
            releases = _index(ev, "complete", barrier=f"{r}.empty[{s}]")
            assert len(expects) == BLOCKS // STAGES
            assert len(releases) == BLOCKS // STAGES          # every block released once
            for lap, i in enumerate(expects):
                j = lap * STAGES + s
                if j < STAGES:
                    continue                                  # the first lap waits for nothing
                rel = releases[lap - 1]                       # block j - 2's release
                assert rel < i and ev[rel][1] <= ev[i][1], (r, j)
                arrivals = [a for a in _index(ev, "arrive", barrier=f"{r}.empty[{s}]") if a < rel]
                assert len(arrivals) >= 2 * lap, "both consumers released block j - 2"


def test_ws_every_read_follows_its_landing(ws_run):
    """Every wgmma reading block j starts after the copy of block j landed in its slot, and the
    tensor core runs it later still."""
    ev = ws_run.events
    reads = {"QKᵀ": "k", "PV": "v"}
    landed = {}
    for i, e in enumerate(ev):
        d = event_dict(e)
        if d["kind"] == "landed" and d["tile"][0] == "kv":
            landed[d["barrier"][0], d["tile"][1]] = (i, d["t"], d["barrier"])
    wgmmas = _index(ev, "wgmma")
    assert len(wgmmas) == 2 * 2 * BLOCKS                  # 2 consumers × (QKᵀ, PV) × blocks
    for i in wgmmas:
        d = event_dict(ev[i])
        r, j = reads[d["op"]], d["tile"][1]
        li, lt, bar = landed[r, j]
        assert bar == f"{r}.full[{j % STAGES}]"
        assert li < i and lt <= d["t"], (d, lt)
        start = min(iv.start for iv in ws_run.trace.intervals
                    if iv.unit == "tensor" and iv.actor == d["actor"] and iv.op == d["op"]
                    and iv.tile == d["tile"])
        assert start >= d["t"] >= lt


@pytest.mark.parametrize("variant", ["ws", "ws_pingpong", "fa2", "overlap3"])
def test_simulate_runs_the_model_and_the_hook_only_observes(variant):
    """simulate() builds the CTAs as the model does: the same clock and trace as
    sim.attention.simulate, with a hook or without one."""
    from sim import attention
    cfg = attention.prepare(AttentionConfig(variant=variant), H100)
    clk, trace = attention.simulate(cfg, H100, 6, 2)
    seen = []
    hooked = simulate(cfg, H100, on_event=seen.append, n_blocks=6, masked_blocks=2)
    bare = simulate(cfg, H100, n_blocks=6, masked_blocks=2, record=False)
    assert hooked.finished and bare.finished
    assert hooked.clk == bare.clk == clk
    assert hooked.trace.intervals == bare.trace.intervals == trace.intervals
    assert seen == hooked.events and seen and not bare.events


class _Recorder:
    def __init__(self):
        self.n = 0

    def __call__(self, event):
        self.n += 1


def test_a_hook_leaves_predict_unchanged(monkeypatch):
    """Every barrier and CTA of predict's runs observed: the same prediction to the last bit."""
    from sim.cta import CTA
    from sim.engine import MBarrier
    cases = [AttentionConfig(variant="ws", seqlen=2048),
             AttentionConfig(variant="fa3", seqlen=4096),
             sim.GemmConfig(variant="ws", m=2048, n=2048, k=2048)]
    before = [predict(c, H100).to_json() for c in cases]
    rec = _Recorder()
    monkeypatch.setattr(MBarrier, "on_event", rec)
    monkeypatch.setattr(CTA, "on_event", rec)
    after = [predict(c, H100).to_json() for c in cases]
    assert rec.n > 0
    assert after == before


def test_a_supplied_role_gets_a_small_view():
    got = {}

    def producer(cta):
        got["view"] = cta
        cta.load_q(cta.producer_name)
        for j in range(cta.n_blocks):
            for ring, op in ((cta.k, "load K"), (cta.v, "load V")):
                s, parity = j % ring.stages, (j // ring.stages) & 1
                yield from cta.wait(cta.producer_name, ring.empty[s], parity ^ 1)
                nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
                ring.full[s].expect(nbytes)
                cta.tma_copy(cta.producer_name, op, nbytes, ring.full[s], cta.tile("kv", j))

    cfg = AttentionConfig(variant="ws", stages=STAGES)
    run = simulate(cfg, H100, roles={"producer": producer}, n_blocks=BLOCKS)
    ref = simulate(cfg, H100, n_blocks=BLOCKS)
    assert run.finished, run.error
    assert run.clk == ref.clk and run.events == ref.events
    view = got["view"]
    assert isinstance(view, RoleView)
    for hidden in ("produce", "load", "wait_turn", "pass_turn", "env", "hw", "trace", "tensor"):
        assert not hasattr(view, hidden), hidden
    with pytest.raises(AttributeError):
        view.produce                                        # noqa: B018


def test_a_deadlock_is_reported_not_raised():
    def producer(cta):                                      # waits for a release on the first lap
        yield from cta.wait(cta.producer_name, cta.k.empty[0], 0)

    run = simulate(AttentionConfig(variant="ws"), H100, roles={"producer": producer}, n_blocks=4)
    assert not run.finished and run.error.startswith("deadlock")
    assert ("wait", 0, 0, "producer", "k.empty[0]", 0) not in run.events   # never returned


def test_public_api():
    for name in sim.__all__:
        assert hasattr(sim, name), name
    assert {"simulate", "predict", "AttentionConfig", "GemmConfig", "Hardware", "H100", "H200",
            "B200", "PRESETS", "Trace", "RoleView", "EVENTS"} <= set(sim.__all__)


# --- the grader's judgement of a run (exercises/grading/harness.py) ------------------------------
def _ws_consumer(early: set):
    """`ws`'s consumer as a role; warpgroups in `early` release K_j as soon as Q·K_jᵀ is issued,
    while the wgmma still reads it."""
    def consumer(cta, w):
        me = cta.wg(w)
        yield from cta.wait(me, cta.q_full, 0)
        for j in range(cta.n_blocks):
            yield from cta.acquire(me, cta.k, j)
            scores = cta.qk(w, j)
            if w in early:
                cta.release(cta.k, j)
            yield scores
            if w not in early:
                cta.release(cta.k, j)
            yield from cta.softmax(w, j)
            yield from cta.rescale(w, j)
            yield from cta.acquire(me, cta.v, j)
            yield from cta.pack(w, j)
            yield cta.pv(w, j)
            cta.release(cta.v, j)
        yield from cta.epilogue(w)
    return consumer


def test_run_cta_tags_each_event_with_the_role_acting():
    """Each arrive on a slot's `empty` is tagged with the consumer that made it; what the model's
    own producer and its copy engine log is not tagged; the run is the model's own, to the clock."""
    from exercises.grading import harness
    r = harness.run_cta(consumer=_ws_consumer(set()), n_blocks=BLOCKS, stages=STAGES)
    ref = simulate(AttentionConfig(variant="ws", stages=STAGES), H100, n_blocks=BLOCKS)
    assert r.finished and r.clk == ref.clk and r.run.events == ref.events
    assert not any(r.violations.values()), r.violations
    who = {(e[0], a) for e, a in zip(r.run.events, r.actors, strict=True)
           if e[0] in ("expect", "tma") or (e[0] == "arrive" and ".empty[" in e[2])}
    assert who == {("arrive", "consumer0"), ("arrive", "consumer1"), ("expect", None),
                   ("tma", None)}, who


@pytest.mark.parametrize("early", [{0, 1}, {0}])
def test_a_slot_released_while_its_wgmma_reads_it_is_an_overwrite(early):
    """A consumer that releases K_j once Q·K_jᵀ is issued, before the wgmma is done reading it,
    is an overwrite however the producer's timing falls: the group's end is read from the trace,
    and each consumer's own arrive is judged (with one early consumer the phase itself completes
    late, when the other one releases)."""
    from exercises.grading import harness
    for stages, n in ((1, 2), (2, BLOCKS)):
        r = harness.run_cta(consumer=_ws_consumer(early), n_blocks=n, stages=stages)
        assert r.finished, r.error
        bad = r.violations["overwrite"]
        assert len(bad) >= len(early) * n, bad
        assert all("still reads it" in m and "QKᵀ" in m for m in bad), bad
        assert {f"consumer{w}" for w in early} == {m.split(": ")[1].split()[0] for m in bad}


def _shared_consumer(cta, w):
    """ch02_producer's consumer: K_j and V_j in slot j % stages of ring k, one release."""
    me, ring = cta.wg(w), cta.k
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        s = j % ring.stages
        yield from cta.wait(me, ring.full[s], (j // ring.stages) & 1)
        yield cta.qk(w, j)
        yield from cta.softmax(w, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)
        ring.empty[s].arrive()
    yield from cta.epilogue(w)


def _shared_producer(own_arrive: bool):
    def producer(cta):
        me, ring = cta.producer_name, cta.k
        cta.load_q(me)
        nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
        for j in range(cta.n_blocks):
            s, lap = j % ring.stages, j // ring.stages
            if own_arrive and lap:
                ring.empty[s].arrive()              # counts itself as one of the consumers
                yield from cta.wait(me, ring.empty[s], (lap - 1) & 1)
            else:
                yield from cta.wait(me, ring.empty[s], (lap & 1) ^ 1)
            ring.full[s].expect(2 * nbytes)
            cta.tma_copy(me, "load K", nbytes, ring.full[s], cta.tile("kv", j))
            cta.tma_copy(me, "load V", nbytes, ring.full[s], cta.tile("kv", j))
    return producer


def test_only_the_consumers_release_a_slot():
    """A producer that arrives on `empty` itself frees the slot at the first consumer's release:
    its arrival is an overwrite (whatever the phases say), the consumers' are not."""
    from exercises.grading import harness
    for own, want in ((False, 0), (True, 1)):
        r = harness.run_cta(producer=_shared_producer(own), consumer=_shared_consumer,
                            n_blocks=6, stages=2, shared_ring=True, block_n=128, headdim=64)
        mine = [m for m in r.violations["overwrite"] if "producer arrived on k.empty" in m]
        assert bool(mine) == bool(want), r.violations["overwrite"][:3]
        if not own:
            assert r.finished and not any(r.violations.values()), r.violations
