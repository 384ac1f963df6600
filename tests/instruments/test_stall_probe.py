"""The committed Nsight Compute logs give the committed `h200-stall.json` (so the numbers the
model's cycles are held to can be rebuilt from the raw pages), and its ledger adds up."""
import gzip
import json
from pathlib import Path

from instruments.tools.stall_probe import ledger, parse

from instruments import RESULTS
LOGS = RESULTS / "logs"
COMMITTED = json.loads((RESULTS / "h200-stall.json").read_text())


def _unzip(tmp_path, name):
    out = tmp_path / name
    out.write_bytes(gzip.decompress((LOGS / f"h200-2026-12-03-S1-{name}.log.gz").read_bytes()))
    return out


def test_the_logs_give_the_committed_rows(tmp_path):
    rows = parse(_unzip(tmp_path, "stall_raw"), _unzip(tmp_path, "stall_source"))
    assert rows == COMMITTED["rows"]


def test_the_ledger_adds_up():
    """A consumer warp's classes sum to its loop's share of a block, under the block's cycles;
    fa3's softmax runs under its P·V, so it barely waits on its wgmmas, where ws_pingpong does."""
    by = {r["variant"]: r for r in COMMITTED["rows"]}
    for r in COMMITTED["rows"]:
        led = r["ledger"]
        total = sum(led["clk_per_block"].values())
        assert 0.8 * r["clk_per_block"] < total <= r["clk_per_block"], r["variant"]
        assert abs(total / r["clk_per_block"] - led["loop_share_of_a_warp"]) < 0.02
    assert by["fa3"]["ledger"]["clk_per_block"]["wgmma wait"] < 50
    assert by["ws_pingpong"]["ledger"]["clk_per_block"]["wgmma wait"] > 500


def test_ledger_classes_follow_the_samples():
    lines = [{"op": "MUFU.EX2", "exec": 10, "samples": 30, "stalls": {"wait": 30}},
             {"op": "HGMMA.64x128x16.F32", "exec": 10, "samples": 10, "stalls": {"mio": 10}},
             {"op": "NOP", "exec": 1, "samples": 40, "stalls": {"barrier": 40}}]
    led = ledger(lines, warps=2, clk_per_block=100.0, consumer_warps=1)  # and one idle warp
    assert led["clk_per_block"] == {"exp (MUFU)": 75.0, "wgmma issue": 25.0}
    assert led["stall_reasons"] == {"wait": 0.75, "mio": 0.25}


def test_the_sweep_log_gives_the_committed_rows(tmp_path):
    """fa3's cycles at the sweep's shapes (`h200-stall-sweep.json`), rebuilt from ncu's raw page."""
    from instruments.tools.stall_probe import SWEEP, parse_sweep

    raw = tmp_path / "sweep_raw.csv"
    raw.write_bytes(gzip.decompress((LOGS / "h200-2026-12-04-G3-sweep_raw.csv.gz").read_bytes()))
    rows = parse_sweep(raw)
    assert rows == json.loads((RESULTS / "h200-stall-sweep.json").read_text())["rows"]
    assert [(r["B"], r["H"], r["S"], r["d"]) for r in rows] == SWEEP
    # a CTA's fixed costs: the same kernel takes more cycles a block on shorter sequences
    for d in (64, 128, 256):
        by_s = [r["clk_per_block"] for r in rows if r["d"] == d]
        assert by_s == sorted(by_s, reverse=True), d


def test_the_dims_logs_give_the_committed_rows(tmp_path):
    """h200-stall-dims.json: fa3 at d 64 and d 256 under the full set, rebuilt from ncu's raw
    and source pages."""
    from instruments.tools.stall_probe import parse_dims

    pages = {}
    for page in ("raw", "source"):
        pages[page] = tmp_path / f"{page}.csv"
        pages[page].write_bytes(gzip.decompress(
            (LOGS / f"h200-2026-12-04-G5-dims_{page}.log.gz").read_bytes()))
    rows = parse_dims(pages["raw"], pages["source"])
    assert rows == json.loads((RESULTS / "h200-stall-dims.json").read_text())["rows"]
    assert [r["d"] for r in rows] == [64, 256]
