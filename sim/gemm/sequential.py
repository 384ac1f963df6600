"""`sequential` GEMM — load a block, wait, multiply, repeat: `pipelined` with a ring of one slot,
so every block's TMA latency is paid with the tensor core idle."""
from . import pipelined

COOPERATIVE = True
PERSISTENT = pipelined.PERSISTENT
WARP_SPECIALIZED = False
DEFAULTS = dict(pipelined.DEFAULTS, stages=1)
STAGES = 1

roles = pipelined.roles
