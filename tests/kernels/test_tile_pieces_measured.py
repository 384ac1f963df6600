"""What `kernels/attention/fa3.py` says of FA3's d 256 tile in two pieces (``tile=(128, 80)``),
held to the H200's run of it beside the default 128×64 in the same interleaved rounds
(results/h200-attention-grid-d256-128x80.json): slower at every point of the d 256 grid but
S 16K non-causal, where the two are within 1 %."""
import json

from records import RESULTS

GRID = RESULTS / "h200-attention-grid-d256-128x80.json"


def tflops() -> dict:
    rows = json.loads(GRID.read_text())["attention"]["rows"]
    return {(r["S"], r["causal"], r["variant"]): r["tflops"] for r in rows
            if r["d"] == 256 and r.get("ok")}


def test_the_pieces_are_slower_but_at_long_full_rows():
    t = tflops()
    points = sorted({(S, c) for S, c, v in t if v == "fa3@128x80"})
    assert len(points) == 6, points
    for S, causal in points:
        ratio = t[S, causal, "fa3@128x80"] / t[S, causal, "fa3"]
        if (S, causal) == (16384, False):
            assert abs(ratio - 1) <= 0.01, ratio
        else:
            assert ratio < 1, (S, causal, ratio)
