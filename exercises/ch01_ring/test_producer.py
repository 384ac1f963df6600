"""Grader for chapter 01: the ring producer, run inside the course's model."""
import pytest

from exercises.grading import harness

STAGES, BLOCKS = 2, 8
# References first, before any submission code runs in this process.
REF_CLK = harness.reference_clk("ws", BLOCKS, STAGES)
REF_CLK_3 = harness.reference_clk("ws", 10, 3, block_n=128)   # 3 × 64 KiB + Q fits 227 KiB


def run(stages=STAGES, n_blocks=BLOCKS, **cfg):
    sub = harness.load_submission(__file__, "producer.py")
    return harness.run_cta(producer=sub.producer, variant="ws", n_blocks=n_blocks, stages=stages,
                           **cfg)


@pytest.mark.points(1)
def test_runs_to_the_end():
    """The CTA finishes: every K and V block copied once, in order, Q loaded, no deadlock."""
    r = run()
    assert r.finished, r.error
    assert r.copied["q"] == 1, "Q must be loaded exactly once"
    for ring in ("k", "v"):
        assert r.copied[ring] == list(range(BLOCKS)), f"{ring.upper()} blocks copied: {r.copied[ring]}"
    assert not r.violations["copy"], r.violations["copy"]


@pytest.mark.points(2)
def test_no_read_before_land():
    """Every consumer read of block j found block j landed in slot j % stages."""
    r = run()
    assert r.copied["k"], f"nothing was copied ({r.error})"
    assert not r.violations["read_before_land"], r.violations["read_before_land"][:3]


@pytest.mark.points(2)
def test_no_overwrite_before_release():
    """The producer claims a slot again only after every consumer released its last block."""
    r = run()
    assert r.copied["k"], f"nothing was copied ({r.error})"
    assert not r.violations["overwrite"], r.violations["overwrite"][:3]


@pytest.mark.points(1)
def test_predicted_time():
    """The CTA takes as long as with the course's own producer (within 0.5%)."""
    r = run()
    assert r.finished, r.error
    assert r.clk == pytest.approx(REF_CLK, rel=5e-3)


### BEGIN HIDDEN TESTS
@pytest.mark.points(2)
def test_three_stages():
    """The same rules with a 3-stage ring and a block count that is not a multiple of 3."""
    r = run(stages=3, n_blocks=10, block_n=128)
    assert r.finished, r.error
    assert not r.violations["read_before_land"] and not r.violations["overwrite"], r.violations
    assert r.copied["k"] == list(range(10))
    assert r.clk == pytest.approx(REF_CLK_3, rel=5e-3)
### END HIDDEN TESTS
