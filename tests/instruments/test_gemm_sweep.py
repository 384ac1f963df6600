"""The GEMM sweep's and the alignment probe's committed logs give the committed JSON (the numbers
`python -m fidelity --all` holds the model to can be rebuilt from Nsight Compute's raw page), and what they say
holds: the small sizes are host-bound under do_bench, and 128-byte row strides pay."""
import gzip
import json
from pathlib import Path

import pytest

from instruments.tools.gemm_sweep import SHAPES, VARIANTS, parse

from instruments import RESULTS
SWEEP = json.loads((RESULTS / "h200-gemm-sweep.json").read_text())["rows"]
TIMED = ("stages", "persistent", "tile", "bench_ms", "device_ms", "host_ms", "device_tflops",
         "bench_tflops")


def test_the_log_gives_the_committed_rows(tmp_path):
    raw = tmp_path / "raw.csv"
    raw.write_bytes(gzip.decompress(
        (RESULTS / "logs" / "h200-2026-12-04-G1-gemm_sweep_raw.csv.gz").read_bytes()))
    device = [{k: r[k] for k in ("M", "N", "K", "variant", *TIMED) if k in r} for r in SWEEP]
    assert parse(raw, device) == SWEEP
    assert len(SWEEP) == len(SHAPES) * len(VARIANTS)


def test_small_sizes_are_host_bound():
    """Under do_bench a 1024³ launch takes 3-9× its device time; an 8192³ one within 5 %."""
    by = {(r["M"], r["N"], r["K"], r["variant"]): r for r in SWEEP}
    for v in VARIANTS:
        small, big = by[(1024, 1024, 1024, v)], by[(8192, 8192, 8192, v)]
        assert small["bench_ms"] > 1.5 * small["device_ms"], v
        assert big["bench_ms"] == pytest.approx(big["device_ms"], rel=0.05), v


def test_row_strides_off_128_bytes_cost():
    """The alignment probe (`instruments/tools/align_probe.py`, h200-align.json): every kernel
    runs slower on rows that do not start on 128-byte lines, by 10-50 % (the pairs `fidelity.calibrate --align` fits to)."""
    from fidelity.calibrate import alignment_pairs

    rows = json.loads((RESULTS / "h200-align.json").read_text())["rows"]
    assert all(r["ok"] for r in rows)
    pairs = alignment_pairs()
    assert len(pairs) == len(rows) // 2
    for (M, N, K), v, ratio in pairs:
        assert 1.1 < ratio < 1.5, (M, v)
