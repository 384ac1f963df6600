"""The model against the FA3 paper (sim/paper.py says how we read each number)."""
import pytest

from sim.hardware import H100
from sim.paper import checks

ROWS = {c.name: c for c in checks(H100)}
KNOWN_MISS = {
    # The paper's two figures for ws_pingpong (582 at S 8448, 620-640 at S 8K) are 7-10% apart for
    # nearly the same problem; the model sits within 5% of tab. 2 and 5.6% under §3.1.
    "ws_pingpong, S 8K",
}


@pytest.mark.parametrize("name", [n for n in ROWS if n not in KNOWN_MISS])
def test_model_meets_paper(name):
    c = ROWS[name]
    assert c.ok, f"{name}: model {c.model:.1f} vs paper {c.low:g}-{c.high:g} ({c.error:+.1%})"


@pytest.mark.parametrize("name", sorted(KNOWN_MISS))
@pytest.mark.xfail(strict=True, reason="known gap, see sim/paper.py; strict: fixing it must be noticed")
def test_known_gaps(name):
    assert ROWS[name].ok


def test_checks_can_fail():
    """A model 10% too fast must fail the tab. 2 checks (the tolerance is real)."""
    fast = {c.name: c for c in checks(H100.with_(clock_hz=H100.clock_hz * 1.1))}
    assert not fast["fa3, tab. 2"].ok or not fast["ws_pingpong, tab. 2"].ok
