"""A warp-specialized region's roles, written once: consumer warpgroups that run one function with
one argument list, each told which it is, and a producer warp (FA3 alg. 1; CUTLASS's producer
and consumer warp groups).

``warp_specialize(consumer, args, producer, producer_args, CONSUMERS, CONSUMER_REGS,
PRODUCER_REGS)`` is ``gl.warp_specialize`` with the partitions ``consumer(*args, 0)`` (the
default partition: the kernel's own warps), ``consumer(*args, 1)`` ... ``consumer(*args,
CONSUMERS - 1)`` (4-warp workers with ``CONSUMER_REGS`` registers each) and ``producer(
*producer_args)`` (a 1-warp worker with ``PRODUCER_REGS``); ``worker_num_regs`` becomes
``setmaxnreg``. The list is built here, in Python, where a tuple keeps its constexprs (a tuple
built with ``+`` in a kernel loses them) and the count of consumers is a plain int.
"""

from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language._core import builtin as _builtin
from triton.language.core import _unwrap_if_constexpr

CONSUMER_WARPS = gl.constexpr(4)  # a consumer is one warpgroup
PRODUCER_WARPS = gl.constexpr(1)


def _values(args):
    """The elements of a tuple as a kernel hands it over (a ``tl.tuple``) or as Python has it."""
    return list(getattr(args, "values", args))


@_builtin
def warp_specialize(consumer, args, producer, producer_args, CONSUMERS, CONSUMER_REGS,
                    PRODUCER_REGS, _semantic=None, _generator=None):
    consumers = _unwrap_if_constexpr(CONSUMERS)
    if not isinstance(consumers, int) or consumers < 1:
        raise ValueError(f"CONSUMERS must be a positive int constexpr; got {CONSUMERS!r}")
    consumer, producer = _unwrap_if_constexpr(consumer), _unwrap_if_constexpr(producer)
    roles = [(consumer, tuple(_values(args)) + (gl.constexpr(w),)) for w in range(consumers)]
    roles.append((producer, tuple(_values(producer_args))))
    regs = [_unwrap_if_constexpr(CONSUMER_REGS)] * (consumers - 1)
    return gl.warp_specialize(roles, [CONSUMER_WARPS] * (consumers - 1) + [PRODUCER_WARPS],
                              regs + [_unwrap_if_constexpr(PRODUCER_REGS)], _semantic=_semantic,
                              _generator=_generator)
