"""Instruments: what measures the kernels on a Hopper GPU — benchmarks beside the vendor peers,
unit microbenchmarks, Proton timelines, Nsight Compute probes and the device scripts that run them.
Everything here imports `kernels` and the `records` leaf (never `sim`); what it measures goes to
`results/` (`RESULTS`)."""
from records import RESULTS

__all__ = ["RESULTS"]
