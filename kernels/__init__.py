"""Real Hopper kernels for the course: Gluon (Triton 3.6) GEMMs now, attention later.

``kernels.gemm(a, b, variant=..., stages=...)`` is the GEMM entry point; ``instruments.bench`` times
every variant next to the vendor library in one run and writes ``results/<gpu>.json``.
"""
from .gemm import VARIANTS as GEMM_VARIANTS
from .gemm import gemm

__all__ = ["GEMM_VARIANTS", "gemm"]
