"""Grader for chapter 01: a ring's slot and phase parities, checked against the course's model.

Every expected answer comes from the model, in this process, before the submission is imported:
the waits its warp-specialized GEMM logs (`sim.simulate`'s event log), a ring it runs, and
mbarriers it builds for the purpose. Nothing is typed in by hand.
"""
import pytest

from exercises.grading import harness
from sim import H100, AttentionConfig, GemmConfig, simulate

STAGES, BLOCKS = 2, 8
GEMM_STAGES = (2, 3, 4)


def model_passes(completed: int, parity: int) -> bool:
    """Ask the model: a role completes `completed` phases of a barrier with one expected arrival
    (the CTA's `q_full`), then waits for `parity`. The run finishes iff the wait passes."""
    def producer(cta):
        for _ in range(completed):
            cta.q_full.arrive()
        yield from cta.wait(cta.producer_name, cta.q_full, parity)

    def idle(cta, w):
        return
        yield

    run = simulate(AttentionConfig(variant="ws"), H100, roles={"producer": producer,
                   "consumer": idle}, n_blocks=1)
    assert sum(e[0] == "complete" for e in run.events) == completed
    return run.finished


def gemm_waits(stages: int) -> dict[str, list[tuple[int, int]]]:
    """(slot, parity) of every wait on the A/B ring of the course's `ws` GEMM, block by block: the
    producer's on `empty` before it refills a slot, consumer 0's on `full` before it reads."""
    run = simulate(GemmConfig(variant="ws", stages=stages, block_k=32), H100, n_tiles=2,
                   k_blocks=7)                 # 14 blocks: the ring runs on across tiles
    assert run.finished, run.error
    out = {"empty": [], "full": []}
    for kind, _t0, _t1, actor, bar, parity in (e for e in run.events if e[0] == "wait"):
        for which, who in (("empty", "producer"), ("full", "consumer0")):
            if bar.startswith(f"ab.{which}[") and actor == who:
                out[which].append((int(bar[len(which) + 4:-1]), parity))
    assert len(out["empty"]) == len(out["full"]) > 2 * stages
    return out


# References first, before any submission code runs in this process.
PASSES = {(n, p): model_passes(n, p) for n in range(6) for p in (0, 1)}
WAITS = {s: gemm_waits(s) for s in GEMM_STAGES}
REF_CLK = harness.reference_clk("ws", BLOCKS, STAGES)


def sub():
    return harness.submission(__file__, "ring.py")


def ring_roles(m):
    """The `ws` attention producer and consumers, with every slot and parity from module `m`."""
    def producer(cta):
        me = cta.producer_name
        cta.load_q(me)
        nbytes = cta.cfg.block_n * cta.cfg.headdim * cta.el
        for j in range(cta.n_blocks):
            for ring, op in ((cta.k, "load K"), (cta.v, "load V")):
                s = m.slot(j, ring.stages)
                yield from cta.wait(me, ring.empty[s], m.empty_parity(j, ring.stages))
                ring.full[s].expect(nbytes)
                cta.tma_copy(me, op, nbytes, ring.full[s], cta.tile("kv", j))

    def consumer(cta, w):
        me = cta.wg(w)

        def acquire(ring, j):
            yield from cta.wait(me, ring.full[m.slot(j, ring.stages)], m.full_parity(j, ring.stages))

        def release(ring, j):
            ring.empty[m.slot(j, ring.stages)].arrive()

        yield from cta.wait(me, cta.q_full, 0)
        for j in range(cta.n_blocks):
            yield from acquire(cta.k, j)
            yield cta.qk(w, j)
            release(cta.k, j)
            yield from cta.softmax(w, j)
            yield from cta.rescale(w, j)
            yield from acquire(cta.v, j)
            yield from cta.pack(w, j)
            yield cta.pv(w, j)
            release(cta.v, j)
        yield from cta.epilogue(w)

    return producer, consumer


def run_ring(m, stages=STAGES, n_blocks=BLOCKS, **cfg):
    producer, consumer = ring_roles(m)
    return harness.run_cta(producer=producer, consumer=consumer, variant="ws", n_blocks=n_blocks,
                           stages=stages, **cfg)


@pytest.mark.points(1)
def test_passes_like_an_mbarrier():
    """`passes(completed, parity)` says what the model's mbarrier does, for 0..5 completed phases
    (a fresh barrier included) and both parities."""
    m = sub()
    wrong = [f"passes({n}, {p}) = {m.passes(n, p)!r}, the barrier {'lets it through' if want else 'blocks'}"
             for (n, p), want in PASSES.items() if bool(m.passes(n, p)) != want]
    assert not wrong, wrong


@pytest.mark.points(1)
def test_slots_match_the_model():
    """Block j's slot is the one the course's `ws` GEMM waits on for block j (2, 3, 4 stages)."""
    m = sub()
    for s, waits in WAITS.items():
        for which in ("empty", "full"):
            got = [m.slot(j, s) for j in range(len(waits[which]))]
            want = [slot for slot, _ in waits[which]]
            assert got == want, f"{s} stages, {which} waits: slots {got}, the model's {want}"


@pytest.mark.points(2)
def test_parities_match_the_model():
    """The producer's parity on `empty` and the consumers' on `full`, block by block, are the ones
    the course's `ws` GEMM waits for (2, 3, 4 stages)."""
    m = sub()
    for s, waits in WAITS.items():
        for which, fn in (("empty", m.empty_parity), ("full", m.full_parity)):
            got = [fn(j, s) for j in range(len(waits[which]))]
            want = [parity for _, parity in waits[which]]
            assert got == want, f"{s} stages, {which}_parity: {got}, the model's {want}"


@pytest.mark.points(2)
def test_a_ring_runs_on_your_functions():
    """The `ws` attention CTA with every slot and parity taken from your functions: it runs to the
    end, no consumer reads a slot before its block landed, the producer never refills a slot the
    consumers still read, and it takes as long as the course's own (±0.5%)."""
    r = run_ring(sub())
    assert r.finished, r.error
    assert r.copied["k"] == list(range(BLOCKS)) and r.copied["v"] == list(range(BLOCKS))
    assert not r.violations["copy"], r.violations["copy"][:3]
    assert not r.violations["read_before_land"], r.violations["read_before_land"][:3]
    assert not r.violations["overwrite"], r.violations["overwrite"][:3]
    assert r.clk == pytest.approx(REF_CLK, rel=5e-3)
