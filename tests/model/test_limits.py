"""Bad configurations fail with an error that names the limit; the CLI says it without a traceback."""
import json
import subprocess
import sys

import pytest

from sim import attention, gemm
from sim.config import AttentionConfig, GemmConfig
from sim.hardware import H100
from sim.predict import predict


@pytest.mark.parametrize("cfg, message", [
    (AttentionConfig(stages=3), r"ring of 3 stages × 88 KiB \+ Q 32 KiB = 296 KiB > 227 KiB"),
    (AttentionConfig(stages=0), r"stages must be >= 1"),
    (AttentionConfig(headdim=100), r"head dim 100 must be a multiple of the wgmma k-step 16"),
    (AttentionConfig(block_n=256, stages=1), r"consumer needs 288 registers/thread .* > 240"),
    (AttentionConfig(block_n=232), r"block_n 232 must be a multiple of 16"),
    (AttentionConfig(block_m=96), r"block_m 96 must split into 2 consumer warpgroups"),
    (AttentionConfig(variant="flash9"), r"unknown attention variant 'flash9'"),
    (AttentionConfig(dtype="fp4"), r"unknown dtype 'fp4'"),
    (AttentionConfig(seqlen=0), r"seqlen must be >= 1"),
])
def test_attention_limits(cfg, message):
    with pytest.raises(ValueError, match=message):
        predict(cfg, H100)


@pytest.mark.parametrize("cfg, message", [
    (GemmConfig(variant="ws", stages=5), r"ring of 5 stages × 48 KiB .* > 227 KiB"),
    (GemmConfig(m=1000, n=1001), r"n = 1001 must be a positive multiple of 8"),
    (GemmConfig(variant="ws_pingpong", block_m=256, stages=1), r"consumer needs 288 registers/thread"),
    (GemmConfig(variant="ws_pingpong", block_m=160), r"each consumer's rows \(160\) must be a multiple of 64"),
    (GemmConfig(variant="ws_pingpong", stages=5),
     r"ring of 5 stages × 40 KiB \+ C staging 32 KiB = 232 KiB > 227 KiB"),
    (GemmConfig(variant="ws", block_k=40), r"block_k 40 must be a multiple of the wgmma k-step 16"),
    (GemmConfig(variant="splitk"), r"unknown GEMM variant 'splitk'"),
    (GemmConfig(variant="ws", stages=1), r"ws keeps one wgmma group in flight.* >= 2"),
])
def test_gemm_limits(cfg, message):
    with pytest.raises(ValueError, match=message):
        predict(cfg, H100)


def test_register_pressure_shrinks_overlap3_tiles():
    cfg = attention.prepare(AttentionConfig(variant="overlap3"), H100)
    assert cfg.block_n < 176 and cfg.block_n % 16 == 0       # FA3 app. B.3: smaller tiles
    assert attention.prepare(AttentionConfig(variant="fa3"), H100).block_n == 176


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sim", *args], capture_output=True, text=True, check=False,
                          timeout=300)


def test_cli_reports_bad_config_without_traceback():
    r = _cli("predict", "--stages", "4")
    assert r.returncode == 2
    assert "shared memory per block" in r.stderr and "Traceback" not in r.stderr
    r = _cli("predict", "--hardware", "a100")
    assert r.returncode == 2 and "unknown hardware 'a100'" in r.stderr


def test_cli_predict_json():
    r = _cli("predict", "--hardware", "h100", "--workload", "attention", "--variant", "fa3",
             "--batch", "4", "--heads", "16", "--seqlen", "8448", "--headdim", "128", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert 400 < out["tflops"] < 989
    assert set(out["utilization"]) >= {"tensor", "sfu", "tma"}
    assert 0 < out["utilization"]["tensor"] <= 1
    r = _cli("predict", "--workload", "gemm", "--variant", "ws", "--m", "4096", "--n", "4096",
             "--k", "4096", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["workload"] == "gemm"


def test_cli_timeline_writes_figure_and_perfetto_trace(tmp_path):
    r = _cli("timeline", "--variant", "ws_pingpong", "--seqlen", "2048", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    png = tmp_path / "attention-ws_pingpong-h100.png"
    trace = json.loads((tmp_path / "attention-ws_pingpong-h100.trace.json").read_text())
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    names = {e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"unit:tensor", "wg:producer", "wg:consumer0", "wg:consumer1"} <= names
    assert any(e["ph"] == "X" and e["name"] == "QKᵀ" for e in trace["traceEvents"])


def test_causal_is_cheaper_per_flop_counted_half():
    full = predict(AttentionConfig(seqlen=4096, causal=False), H100)
    causal = predict(AttentionConfig(seqlen=4096, causal=True), H100)
    assert causal.seconds < 0.7 * full.seconds                 # about half the blocks
    assert causal.tflops < full.tflops                         # diagonal blocks waste work


def test_gemm_prepare_fills_variant_tiles():
    assert gemm.prepare(GemmConfig(variant="ws"), H100).block_n == 256
    # the Gluon pingpong kernel's tile: 192×128 per consumer (three m64 row blocks), 4 slots of
    # 40 KiB + one 64-row staging box per consumer = 192 KiB
    pp = gemm.prepare(GemmConfig(variant="ws_pingpong"), H100)
    assert (pp.block_m, pp.block_n, pp.block_k, pp.stages) == (192, 128, 64, 4)
    assert gemm.prepare(GemmConfig(variant="sequential"), H100).stages == 1
