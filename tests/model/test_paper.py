"""The model against the FA3 paper (sim/paper.py says how we read each number)."""
import pytest

from sim.hardware import H100
from sim.paper import checks

ROWS = {c.name: c for c in checks(H100)}
KNOWN_MISS = {
    # The paper's two figures for ws_pingpong (582 at S 8448, 620-640 at S 8K) are 7-10% apart for
    # nearly the same problem; the model sits within 5% of tab. 2 and 11% under §3.1.
    "ws_pingpong, S 8K",
}
# What the pingpong map (fidelity/pingpong.py, chapter 03) says about it.
SEC31_REASON = (
    "known gap, explained by the pingpong map (fidelity/pingpong.py): on h100 at d 128 the "
    "model's ws consumers collide only at a CTA's start and then alternate, so pingpong gains "
    "+16 % at S 512 falling to +1.3 % at S 8K (under +3 % from S 4K on); +9-12 % needs consumers "
    "that stay collided, as the model's do at d 256 (+21 %). The paper's own tab. 2 pingpong "
    "kernel (582) is +2 % over §3.1's ws (570), the size the model gives; §3.1's 620-640 is "
    "+7-10 % over that same kernel at nearly the same shape, so it came with changes tab. 2's "
    "kernel lacks. No first-principles cost found that moves it without leaving tab. 2. "
    "Strict: a model that reaches it must be noticed")


@pytest.mark.parametrize("name", [n for n in ROWS if n not in KNOWN_MISS])
def test_model_meets_paper(name):
    c = ROWS[name]
    assert c.ok, f"{name}: model {c.model:.1f} vs paper {c.low:g}-{c.high:g} ({c.error:+.1%})"


@pytest.mark.parametrize("name", sorted(KNOWN_MISS))
@pytest.mark.xfail(strict=True, reason=SEC31_REASON)
def test_known_gaps(name):
    assert ROWS[name].ok


def test_checks_can_fail():
    """A model 10% too fast must fail the tab. 2 checks (the tolerance is real)."""
    fast = {c.name: c for c in checks(H100.with_(clock_hz=H100.clock_hz * 1.1))}
    assert not fast["fa3, tab. 2"].ok or not fast["ws_pingpong, tab. 2"].ok


def test_sim_readme_prints_what_sim_paper_prints():
    """sim/README.md's block under "The model against the paper" is `python -m sim paper`'s
    output as the model gives it now (a README number is a claim, held here)."""
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).resolve().parents[2]
    text = (root / "sim" / "README.md").read_text()
    a = text.index("```\ncheck                        model")
    block = text[a + 4:text.index("```", a + 3)].strip()
    out = subprocess.run([sys.executable, "-m", "sim", "paper"], cwd=root, capture_output=True,
                         text=True, timeout=600, check=False).stdout.strip()
    assert block == out
