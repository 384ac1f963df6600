# exercise: ch02_ws_gluon
# file: ws_gemm.py
# loses: test_consumer_protocol, test_producer_protocol, test_many_laps, test_gpu_consan
# may-lose: test_gpu_correct
# bug: the consumers never wait on full[s], and the file's module-level code rebinds the grader's
#      compile helper (`_compile.compile_kernel`, imported beside it in the sandbox) to compile a
#      correct twin kernel instead (class 3: a result computed where the submission runs). The
#      grader compiles only the kept kernel source in a process of its own: the rebinding is
#      not there, and `ws_gemm_kernel` is the one compiled. Its producer is the release's single
#      loader warp, which the task no longer asks for: it loses the producer's protocol and the
#      many-laps test as well.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 02 — a warp-specialized GEMM in Gluon (triton 3.6.0), one 128 × 128 tile per CTA.

The course's own version is ``kernels/gemm/ws.py`` (persistent, 128 × 256); this one is
self-contained and smaller. Roles::

    producer (1 warp, 40 registers)           consumers (2 warpgroups, the rest)
    for each k-step `it`:                     for each k-step `it`:
        wait empty[s]                             wait full[s]
        expect full[s] <- bytes of A + B          wgmma slot s (async); wgmma_wait(1)
        TMA A, B -> slot s                        arrive empty[slot of it - 1]
                                              epilogue: C tile -> smem -> TMA store

Fill in the three solution blocks: the producer's loop body, the consumers' wait on ``full``,
and the ``gl.warp_specialize`` call (the consumers are the default partition; the producer gets
``PRODUCER_WARPS`` warps and ``PRODUCER_REGS`` registers, which is what makes the compiler emit
``setmaxnreg``). Slot ``s = it % STAGES``; its barriers' phase parity is ``(it // STAGES) & 1``.

The grader compiles the kernel for sm_90a on CPU (no GPU needed) and reads the PTX; on a Hopper
GPU it also checks C against torch.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma,
                                                              warpgroup_mma, warpgroup_mma_wait)

BM, BN, BK = 128, 128, 64
STAGES = 3
NUM_WARPS = 8                       # the consumers: two warpgroups, 64 rows of the tile each
PRODUCER_WARPS = gl.constexpr(1)
PRODUCER_REGS = gl.constexpr(40)
MAXNREG = 168                       # register cap at entry: 65536 / (3 warpgroups × 128 threads)


@gluon.constexpr_function
def acc_layout(BN, num_warps):
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, BN, 16])


@gluon.jit
def producer(a_desc, b_desc, a_ring, b_ring, full, empty, STAGES: gl.constexpr):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[1]
    off_m = gl.program_id(0) * BM
    off_n = gl.program_id(1) * BN
    K = a_desc.shape[1]
    it = 0
    for k in range(0, K, BK):
        s = it % STAGES
        # a fresh mbarrier counts as having completed the phase before phase 0: the first lap
        # over the ring waits for parity 1 and passes at once
        mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
        mbarrier.expect(full.index(s), a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [off_m, k], full.index(s), a_ring.index(s))
        tma.async_copy_global_to_shared(b_desc, [k, off_n], full.index(s), b_ring.index(s))
        it += 1


@gluon.jit
def consumer(c_desc, a_ring, b_ring, full, empty, c_smem, K, STAGES: gl.constexpr,
             num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_ring.type.shape[2]
    k_steps = gl.cdiv(K, BK)
    acc = gl.zeros([BM, BN], gl.float32, acc_layout(BN, num_warps))
    for it in range(k_steps):
        s = it % STAGES
        pass   # BUG: no wait on full[s]
        acc = warpgroup_mma(a_ring.index(s), b_ring.index(s), acc, is_async=True)
        acc = warpgroup_mma_wait(1, deps=(acc,))
        # k-step it-1's wgmma has finished reading its slot: hand it back to the producer
        mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), pred=it > 0)
    acc = warpgroup_mma_wait(0, deps=(acc,))
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    gl.thread_barrier()
    tma.async_copy_shared_to_global(c_desc, [gl.program_id(0) * BM, gl.program_id(1) * BN], c_smem)
    tma.store_wait(0)


@gluon.jit
def ws_gemm_kernel(a_desc, b_desc, c_desc, STAGES: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for slot in gl.static_range(STAGES):
        mbarrier.init(full.index(slot), count=1)     # the producer's expect-tx arrive
        mbarrier.init(empty.index(slot), count=1)    # one arrive from the consumer partition
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    gl.warp_specialize([
        (consumer, (c_desc, a_ring, b_ring, full, empty, c_smem, a_desc.shape[1], STAGES, num_warps)),
        (producer, (a_desc, b_desc, a_ring, b_ring, full, empty, STAGES)),
    ], [PRODUCER_WARPS], [PRODUCER_REGS])


def descriptors(a, b, c):
    """TMA descriptors for A (BM × BK boxes), B (BK × BN) and C (BM × BN)."""
    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    dt = {torch.float16: gl.float16, torch.bfloat16: gl.bfloat16}[a.dtype]
    blocks = ([BM, BK], [BK, BN], [BM, BN])
    return tuple(TensorDescriptor.from_tensor(t, blk, gl.NVMMASharedLayout.get_default_for(blk, dt))
                 for t, blk in zip((a, b, c), blocks))


def gemm(a, b):
    """C = A·B on a Hopper GPU (fp16/bf16, M, N, K multiples of 8)."""
    import torch
    import triton

    M, K = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    a_desc, b_desc, c_desc = descriptors(a, b, c)
    ws_gemm_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
        a_desc, b_desc, c_desc, STAGES, num_warps=NUM_WARPS, maxnreg=MAXNREG)
    return c


@gluon.jit
def twin_consumer(c_desc, a_ring, b_ring, full, empty, c_smem, K, STAGES: gl.constexpr,
                  num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_ring.type.shape[2]
    k_steps = gl.cdiv(K, BK)
    acc = gl.zeros([BM, BN], gl.float32, acc_layout(BN, num_warps))
    for it in range(k_steps):
        s = it % STAGES
        mbarrier.wait(full.index(s), (it // STAGES) & 1)
        acc = warpgroup_mma(a_ring.index(s), b_ring.index(s), acc, is_async=True)
        acc = warpgroup_mma_wait(1, deps=(acc,))
        mbarrier.arrive(empty.index((it + STAGES - 1) % STAGES), pred=it > 0)
    acc = warpgroup_mma_wait(0, deps=(acc,))
    c_smem.store(acc.to(c_desc.dtype))
    fence_async_shared()
    gl.thread_barrier()
    tma.async_copy_shared_to_global(c_desc, [gl.program_id(0) * BM, gl.program_id(1) * BN], c_smem)
    tma.store_wait(0)


@gluon.jit
def twin_kernel(a_desc, b_desc, c_desc, STAGES: gl.constexpr, num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    a_ring = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
    b_ring = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
    full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for slot in gl.static_range(STAGES):
        mbarrier.init(full.index(slot), count=1)
        mbarrier.init(empty.index(slot), count=1)
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    gl.warp_specialize([
        (twin_consumer, (c_desc, a_ring, b_ring, full, empty, c_smem, a_desc.shape[1], STAGES,
                         num_warps)),
        (producer, (a_desc, b_desc, a_ring, b_ring, full, empty, STAGES)),
    ], [PRODUCER_WARPS], [PRODUCER_REGS])


def _rebind_the_graders_compile():
    import sys
    import types
    try:
        import _compile
    except ImportError:
        return
    here = sys.modules[__name__]
    real = _compile.compile_kernel
    twin = types.SimpleNamespace(**{k: getattr(here, k) for k in
                                    ("BM", "BN", "BK", "STAGES", "NUM_WARPS", "MAXNREG")},
                                 ws_gemm_kernel=twin_kernel)
    _compile.compile_kernel = lambda module, k_steps=None: real(twin, k_steps)


_rebind_the_graders_compile()
