"""Real Hopper kernels for the course, in Gluon (Triton 3.6), one module per schedule:

    gemm/        C = A @ B: sequential, pipelined, ws, ws_pingpong (``kernels.gemm(a, b, ...)``)
    attention/   the FA3 ladder: ... ws, ws_pingpong, overlap, fa3 (``kernels.attention.attention``)
    ring.py      ring slots and turns on mbarriers, shared by both (``Ring``, ``Turns``)
    roles.py     a warp-specialized region's consumer warpgroups and producer warp
    scopes.py    Proton scopes behind a constexpr; hopper.py: host-side checks and dtypes
    plans.py     a call's host work kept per key of shapes, strides, dtype and options: a second
                 ``gemm``/``attention`` call checks its addresses and launches the compiled kernel
    cuda/        CUDA C++ twins of the same kernels

``instruments.bench`` times every GEMM variant next to the vendor library in one run and writes
``results/<gpu>.json``.
"""
from .gemm import VARIANTS as GEMM_VARIANTS
from .gemm import gemm

__all__ = ["GEMM_VARIANTS", "gemm"]
