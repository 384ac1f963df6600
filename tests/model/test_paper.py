"""The model against the FA3 paper (sim/paper.py says how we read each number)."""
from dataclasses import fields, replace

import pytest

from sim.hardware import H100
from sim.paper import checks

ROWS = {c.name: c for c in checks(H100)}
KNOWN_MISS = {
    # The paper's two figures for ws_pingpong (582 at S 8448, 620-640 at S 8K) are 7-10% apart for
    # nearly the same problem; the model sits within 5% of tab. 2 and under §3.1.
    "ws_pingpong, S 8K",
    # tab. 2's pingpong kernel is +2 % over §3.1's ws; the model has the two level at d 128.
    "ws < ws_pingpong",
}
# What the pingpong map (`python -m fidelity pingpong`, chapter 03) says about both.
SEC31_REASON = (
    "known gap, explained by the pingpong map (fidelity/pingpong.py): at d 128 the model's ws "
    "consumers collide only at a CTA's start and then alternate, each one's softmax under the "
    "other's GEMMs, so turns save almost nothing and their waits can cost a little (the map: "
    "within ±2 % at every S on h100, as our H200 measured its own pair); pingpong pays +8-10 % "
    "where a softmax is long beside its GEMMs (d 64) or the consumers stay collided (d 256). "
    "§3.1's 620-640 is +7-10 % over tab. 2's own pingpong kernel (582) at nearly the same "
    "shape, so it came with changes tab. 2's kernel lacks. No first-principles cost found that "
    "moves d 128 without leaving tab. 2. Strict: a model that reaches it must be noticed")


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
    cap = H100.power_cap
    faster = replace(cap, **{f.name: getattr(cap, f.name) / 1.1 for f in fields(cap)})
    fast = {c.name: c for c in checks(H100.with_(clock_hz=H100.clock_hz * 1.1, power_cap=faster))}
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
