# exercise: ch02_ws_gluon
# file: ws_gemm.py
# loses: test_compiles_for_sm90a, test_gpu_correct, test_gpu_consan
# bug: a ring of 8 stages: 8 x (16 KiB of A + 16 KiB of B) + 32 KiB of C is about 288 KiB of
#      shared memory, past the 227 KiB an H100/H200 block may use. It compiles for sm_90a
#      without a device, but does not launch.
# ruff: noqa  (known-wrong on purpose)
"""Chapter 02 — a warp-specialized GEMM in Gluon (triton 3.6.0), one 128 × 128 tile per CTA, with
ONE LOADER PER OPERAND.

The course's own version is ``kernels/gemm/ws.py`` (persistent, 128 × 256): one producer warp
copies A and B into a slot and announces both on one `full` barrier. Here each operand has its
own loader warp and its own `full` barrier per slot; both loaders wait on the slot's one `empty`
barrier, which the consumers arrive on once they are done with the slot. Roles::

    loader of A (1 warp, 40 registers)   loader of B (the same)     consumers (2 warpgroups)
    for each k-step `it`:                for each k-step `it`:      for each k-step `it`:
        wait empty[s]                        wait empty[s]              wait full_a[s], full_b[s]
        expect full_a[s] <- bytes of A       expect full_b[s] <- B      wgmma slot s; wgmma_wait(1)
        TMA A -> slot s of a_ring            TMA B -> slot s of b_ring  arrive empty[slot of it-1]
                                                                    epilogue: C -> smem -> TMA

Fill in the three solution blocks: a loader's loop body (the same function loads A or B, as
``IS_B`` says), the consumers' waits, and the ``gl.warp_specialize`` call (the consumers are the
default partition; each loader is a worker of ``LOADER_WARPS`` warps and ``LOADER_REGS``
registers, which is what makes the compiler emit ``setmaxnreg``). Slot ``s = it % STAGES``; its
barriers' phase parity is ``(it // STAGES) & 1``. Every `full` barrier counts one arrival a phase
(its loader's expect); every `empty` one (the consumers' arrive).

The grader compiles the kernel for sm_90a on CPU (no GPU needed) and reads the protocol from the
compiler's IR; on a Hopper GPU it also checks C against a float64 product.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (
    fence_async_shared,
    mbarrier,
    tma,
    warpgroup_mma,
    warpgroup_mma_wait,
)

BM, BN, BK = 128, 128, 64
STAGES = 8
NUM_WARPS = 8                       # the consumers: two warpgroups, 64 rows of the tile each
LOADER_WARPS = gl.constexpr(1)
LOADER_REGS = gl.constexpr(40)
MAXNREG = 168                       # register cap at entry: 65536 / (3 warpgroups × 128 threads)


@gluon.constexpr_function
def acc_layout(BN, num_warps):
    return gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1],
                                     instr_shape=[16, BN, 16])


@gluon.jit
def loader(desc, ring, full, empty, STAGES: gl.constexpr, IS_B: gl.constexpr):
    """One operand's loader: A's boxes are BM × BK at (off_m, k), B's BK × BN at (k, off_n)."""
    if IS_B:
        BK: gl.constexpr = desc.block_type.shape[0]
        off = gl.program_id(1) * desc.block_type.shape[1]
        K = desc.shape[0]
    else:
        BK: gl.constexpr = desc.block_type.shape[1]
        off = gl.program_id(0) * desc.block_type.shape[0]
        K = desc.shape[1]
    for it in range(gl.cdiv(K, BK)):
        k = it * BK
        ### BEGIN SOLUTION
        s = it % STAGES
        mbarrier.wait(empty.index(s), ((it // STAGES) & 1) ^ 1)
        mbarrier.expect(full.index(s), desc.block_type.nbytes)
        if IS_B:
            tma.async_copy_global_to_shared(desc, [k, off], full.index(s), ring.index(s))
        else:
            tma.async_copy_global_to_shared(desc, [off, k], full.index(s), ring.index(s))
        ### END SOLUTION


@gluon.jit
def consumer(c_desc, a_ring, b_ring, full_a, full_b, empty, c_smem, K, STAGES: gl.constexpr,
             num_warps: gl.constexpr):
    BM: gl.constexpr = c_desc.block_type.shape[0]
    BN: gl.constexpr = c_desc.block_type.shape[1]
    BK: gl.constexpr = a_ring.type.shape[2]
    k_steps = gl.cdiv(K, BK)
    acc = gl.zeros([BM, BN], gl.float32, acc_layout(BN, num_warps))
    for it in range(k_steps):
        s = it % STAGES
        ### BEGIN SOLUTION
        mbarrier.wait(full_a.index(s), (it // STAGES) & 1)
        mbarrier.wait(full_b.index(s), (it // STAGES) & 1)
        ### END SOLUTION
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
    full_a = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    full_b = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
    for slot in gl.static_range(STAGES):
        mbarrier.init(full_a.index(slot), count=1)   # A's loader's expect-tx arrive
        mbarrier.init(full_b.index(slot), count=1)   # B's loader's expect-tx arrive
        mbarrier.init(empty.index(slot), count=1)    # one arrive from the consumer partition
    c_smem = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    ### BEGIN SOLUTION
    gl.warp_specialize([
        (consumer, (c_desc, a_ring, b_ring, full_a, full_b, empty, c_smem, a_desc.shape[1], STAGES,
                    num_warps)),
        (loader, (a_desc, a_ring, full_a, empty, STAGES, False)),
        (loader, (b_desc, b_ring, full_b, empty, STAGES, True)),
    ], [LOADER_WARPS, LOADER_WARPS], [LOADER_REGS, LOADER_REGS])
    ### END SOLUTION


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

    M, _ = a.shape
    N = b.shape[1]
    c = torch.empty(M, N, dtype=a.dtype, device=a.device)
    a_desc, b_desc, c_desc = descriptors(a, b, c)
    ws_gemm_kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](
        a_desc, b_desc, c_desc, STAGES, num_warps=NUM_WARPS, maxnreg=MAXNREG)
    return c
