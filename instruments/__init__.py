"""Instruments: what measures the kernels on a Hopper GPU — benchmarks beside the vendor peers,
unit microbenchmarks, Proton timelines, Nsight Compute probes and the device scripts that run them.
Everything here imports `kernels` (never `sim`); what it measures goes to `results/`."""
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
