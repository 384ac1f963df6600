"""Proton scopes for the kernels' timelines (``instruments/trace.py``), behind a constexpr flag.

``enter(name, PROFILE)`` / ``exit(name, PROFILE)`` emit Proton's ``proton.record`` ops only when
the kernel's ``PROFILE`` constexpr is true. With it false (every kernel's default) nothing is
emitted, so the kernels compile to exactly the PTX they had before the scopes were added
(``tests/instruments/test_trace_compile.py``). Even with ``PROFILE`` true, Proton itself emits
nothing unless an instrumentation session is active (``triton.profiler.flags.instrumentation_on``): a
profiled kernel launched outside ``python -m instruments.trace`` runs unchanged.

Each scope is written where the warp *is* doing that thing (waiting on an mbarrier, issuing a
wgmma and waiting for it, computing the softmax), so a warp's lane in the trace reads like the
role's generator in ``sim/``. Scope names are shared with ``fidelity/lanes.py``.
"""
from __future__ import annotations

import triton.profiler.language as pl
from triton.experimental.gluon.language._core import builtin as _builtin
from triton.language.core import _unwrap_if_constexpr


@_builtin
def enter(name, on, _semantic=None):
    if _unwrap_if_constexpr(on):
        pl.enter_scope(name, _semantic=_semantic)


@_builtin
def exit(name, on, _semantic=None):
    if _unwrap_if_constexpr(on):
        pl.exit_scope(name, _semantic=_semantic)
