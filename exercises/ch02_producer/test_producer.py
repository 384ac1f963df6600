"""Grader for chapter 02: a producer for a K/V ring with one `full` barrier per slot, run in the
course's model with the consumers below, judged from the run's event log
(`harness.check_shared_ring`)."""
import pytest

from exercises.grading import harness

STAGES, BLOCKS = 2, 8


def consumer(cta, w):
    """A `ws` consumer warpgroup for the shared ring: K_j and V_j in slot j % stages of `cta.k`,
    one wait on its `full` for both, one release on its `empty` after P·V_j."""
    me, ring = cta.wg(w), cta.k
    yield from cta.wait(me, cta.q_full, 0)
    for j in range(cta.n_blocks):
        s = j % ring.stages
        yield from cta.wait(me, ring.full[s], (j // ring.stages) & 1)    # K_j and V_j landed
        yield cta.qk(w, j)
        yield from cta.softmax(w, j)
        yield from cta.rescale(w, j)
        yield from cta.pack(w, j)
        yield cta.pv(w, j)
        ring.empty[s].arrive()                                          # the slot is free
    yield from cta.epilogue(w)


def run(stages=STAGES, n_blocks=BLOCKS, producer=None, **cfg):
    if producer is None:
        producer = harness.submission(__file__, "producer.py").producer
    return harness.run_cta(producer=producer, consumer=consumer, variant="ws", n_blocks=n_blocks,
                           stages=stages, shared_ring=True, **cfg)


@pytest.mark.points(1)
def test_runs_to_the_end():
    """The CTA finishes: K_j and V_j of every block copied once, in order, each tagged
    cta.tile("kv", j), Q once, no deadlock."""
    r = run()
    assert r.finished, r.error
    assert r.copied["q"] == 1, "Q must be loaded exactly once"
    for t in ("k", "v"):
        assert r.copied[t] == list(range(BLOCKS)), f"{t.upper()} blocks copied: {r.copied[t]}"
    assert not r.violations["copy"], r.violations["copy"][:3]


@pytest.mark.points(2)
def test_no_read_before_land():
    """Every consumer read of K_j or V_j found it landed in block j's slot."""
    r = run()
    assert r.copied["k"], f"nothing was copied ({r.error})"
    assert not r.violations["copy"], r.violations["copy"][:3]
    assert not r.violations["read_before_land"], r.violations["read_before_land"][:3]


@pytest.mark.points(2)
def test_bytes_expected_equal_bytes_copied():
    """One expect per fill of a slot, made before the fill's copies, announcing exactly the bytes
    of K_j and V_j that land on the slot's `full` barrier."""
    r = run()
    assert r.copied["k"], f"nothing was copied ({r.error})"
    assert not r.violations["bytes"], r.violations["bytes"][:3]


@pytest.mark.points(2)
def test_no_refill_before_release():
    """The producer claims a slot again only after both consumers released its last block (their
    own arrivals on its `empty`: the producer never arrives there itself)."""
    r = run()
    assert r.copied["k"], f"nothing was copied ({r.error})"
    assert not r.violations["overwrite"], r.violations["overwrite"][:3]


@pytest.mark.points(1)
def test_consumers_not_starved():
    """Each fill is claimed as soon as its slot is free and its copies are issued at once."""
    r = run()
    assert r.finished, r.error
    assert not r.violations["starved"], r.violations["starved"][:3]
