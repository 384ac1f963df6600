"""Launch plans: a public call's host work done once per key (``attention``, ``gemm``).

A short launch's host path was as long as a short kernel: the whole way, an ``attention()`` call
spends 157-190 us on the host and a ``gemm()`` call 154-156 us (an H100 machine's CPU), beside S 1K
kernels of 160-350 us and the peers' whole calls, SDPA to cuDNN 38-39 us and torch.matmul 12-14 us;
by its plan an ``attention()`` call spends 60-61 us and a ``gemm()`` call 39-42 us
(results/h100-host-path.json). Whenever the host path is longer than the work queued ahead of the
launch (do_bench's L2 flush, a model's eager loop) the GPU waits for it. On another machine of that
kind with a slower host, 177-399 us the whole way and 104-123 us by plan
(results/h100-host-path-slow-host.json), the grid's S 1K points ran up to 2.2x faster by plan in
the same rounds: d 128 causal 0.45x cuDNN the whole way, 1.00x by plan
(results/h100-attention-grid-plans-slow-host.json). Most of the whole way is the call's own checks,
configuration and descriptors; the rest is Triton's binding of ~20 arguments before its launch.

What a call derives from its inputs' shapes, strides, dtypes and devices and from its options —
the checks passed, the configuration, the grid, the compiled kernel and the order of its
arguments — is the same for every call with those. So the first call with a key goes the whole
way and keeps a ``Plan``; a later call with that key checks only what the key cannot hold (each
tensor's start address, ``hopper.check_start``), allocates its outputs, makes its TMA descriptors
(they hold the addresses) and hands the compiled kernel its argument values through
``CompiledKernel[grid]``, the runner Triton's own launch ends in (launch hooks included, so
Proton still sees every launch).
"""
from __future__ import annotations

import contextlib
from collections import OrderedDict
from typing import Any, NamedTuple

PLANS_KEPT = 256  # keys a cache keeps, the least recently used dropped first
_UNPLANNED = [0]  # how many ``unplanned()`` blocks are open


class Plan(NamedTuple):
    """One key's launch: ``run(*per_call)`` puts ``per_call`` into ``values`` at ``slots`` and
    launches ``compiled`` on ``grid``."""

    compiled: Any  # triton.compiler.CompiledKernel
    grid: tuple[int, int, int]
    values: tuple  # the kernel's argument values in its parameter order; None at the slots
    slots: tuple[int, ...]  # where a call's own values go, in ``run``'s order
    config: Any  # what the family's descriptors are made from (its Config)

    def run(self, *per_call) -> None:
        values = list(self.values)
        for i, x in zip(self.slots, per_call, strict=True):
            values[i] = x
        self.compiled[self.grid](*values)


def tensor_key(t) -> tuple:
    return (t.shape, t.stride(), t.dtype, t.device)


def knobs_key() -> tuple:
    """Triton's settings that change what a launch compiles (ConSan's instrumentation, debug)."""
    from triton import knobs

    return (knobs.compilation.instrumentation_mode, knobs.runtime.debug)


def key(tensors: tuple, options: tuple) -> tuple | None:
    """The key of a call on ``tensors`` (None for an output not given) with ``options``, or None
    where it has none (something that is not a tensor, an option that is not hashable or a
    number that is not a plain one): such a call always goes the whole way."""
    try:
        k = (tuple(None if t is None else tensor_key(t) for t in tensors), options, knobs_key())
        hash(k)
    except (AttributeError, TypeError):
        return None
    if any(not isinstance(x, (type(None), bool, int, float, str, tuple)) for x in options):
        return None
    return k


def bound_values(kernel, args: tuple, kwargs: dict) -> list:
    """The values ``CompiledKernel[grid]`` takes for ``kernel[grid](*args, **kwargs)``, in the
    kernel's parameter order: as Triton's JIT binds them, ``args`` and the keywords that name a
    parameter, every other parameter at its default (the rest, e.g. ``maxnreg``, are compile
    options)."""
    params = {n: x for n, x in kwargs.items() if n in kernel.arg_names}
    bound = kernel.signature.bind(*args, **params)
    bound.apply_defaults()
    return list(bound.arguments.values())


def make_plan(kernel, compiled, grid: tuple, args: tuple, kwargs: dict, per_call: tuple,
              config) -> Plan | None:
    """The plan of a launch ``compiled = kernel[grid](*args, **kwargs)``: ``per_call`` names the
    parameters a call brings its own values for (they are not kept: the plan holds no tensor of
    the first call). None where Triton handed back no compiled kernel (a compile in flight)."""
    from triton.compiler import CompiledKernel

    if not isinstance(compiled, CompiledKernel):
        return None
    values = bound_values(kernel, args, kwargs)
    slots = tuple(kernel.arg_names.index(n) for n in per_call)
    for i in slots:
        values[i] = None
    return Plan(compiled, tuple(grid) + (1,) * (3 - len(grid)), tuple(values), slots, config)


class Plans:
    """Plans by key, at most ``kept``, the least recently used dropped first."""

    def __init__(self, kept: int = PLANS_KEPT):
        self.kept, self.plans = kept, OrderedDict()

    def get(self, k) -> Plan | None:
        if k is None or _UNPLANNED[0]:
            return None
        try:  # one step each, so another thread's eviction between them is a miss
            self.plans.move_to_end(k)
            return self.plans[k]
        except KeyError:
            return None

    def put(self, k, plan: Plan | None) -> None:
        if k is None or plan is None or _UNPLANNED[0]:
            return
        self.plans[k] = plan
        self.plans.move_to_end(k)
        while len(self.plans) > self.kept:
            self.plans.popitem(last=False)

    def clear(self) -> None:
        self.plans.clear()


@contextlib.contextmanager
def unplanned():
    """Inside, every call goes the whole way and keeps no plan: the host path without plans,
    e.g. to time it beside the planned one (the attention bench's ``+unplanned``)."""
    _UNPLANNED[0] += 1
    try:
        yield
    finally:
        _UNPLANNED[0] -= 1
