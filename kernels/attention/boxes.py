"""Where the TMA boxes of q, k, v and o lie: the two kinds of descriptor the host builds
(``host.make_descriptors``) and what the device steps do with each.

* **Contiguous** (batch, heads, seq, d) tensors: one rank-2 descriptor over the
  (batch·heads·seq, d) view, a box ``[rows, d]`` at row ``row0 + row`` (``row0 = bh·seq``, the
  head's first row). One descriptor serves every head, but its bounds are the whole tensor's: a
  box that runs past one head's end reads the next head's rows (masked in the softmax), and O is
  not stored through it (it would overwrite them) but with masked stores (``steps.epilogue``).
* **Any other layout a TMA descriptor can address** (``kernels/hopper.py``'s ``TMA_RULE``): FA3's
  own (batch, seq, heads, d), handed in as its (batch, heads, seq, d) transpose; Q, K or V
  sliced out of a packed QKV projection; a head dim sliced from a wider one. A rank-4 descriptor
  over (batch, heads, seq, d) with the tensor's own strides (no copy), a box ``[1, 1, rows, d]``
  at ``(b, h, row, 0)``. Its bounds stop at each sequence's end: past it a load reads zeros and a
  store writes nothing, so O goes out by a TMA store from the tile it is staged in.

Shared memory is ``[rows, d]`` either way (wgmma's operands are 2-D): allocated with the 2-D
form of the descriptor's swizzle, and reshaped to the rank-4 box for the copy (the same bytes:
the leading 1s add no rows).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma


@gluon.constexpr_function
def per_head(desc):
    """Whether ``desc`` is the rank-4 (batch, heads, seq, d) descriptor."""
    return len(desc.block_type.shape) == 4


@gluon.constexpr_function
def box_rows(desc):
    """Rows of one box (of Q: a consumer's share or the tile; of K and V: a block)."""
    return desc.block_type.shape[-2]


@gluon.constexpr_function
def box_shape(desc, count):
    """``count`` boxes of ``desc`` in shared memory, each 2-D: ``[count, rows, d]``."""
    return [count] + list(desc.block_type.shape[-2:])


@gluon.constexpr_function
def box_layout(desc):
    """The shared layout of a 2-D box: the descriptor's own, or its swizzle at rank 2."""
    lay = desc.layout
    if not per_head(desc):
        return lay
    return gl.NVMMASharedLayout(lay.swizzle_byte_width, lay.element_bitwidth, 2, lay.transposed,
                                lay.fp4_padded)


@gluon.jit
def allocate(desc, COUNT: gl.constexpr):
    """Shared memory for ``COUNT`` boxes of ``desc`` (a Q tile's parts, a ring's slots)."""
    return gl.allocate_shared_memory(desc.dtype, box_shape(desc, COUNT), box_layout(desc))


@gluon.jit
def coords(desc, row0, row):
    """The box of ``desc`` at row ``row`` of the sequence whose first row in the 2-D view is
    ``row0``: ``[row0 + row, 0]``, or (rank 4, shape (batch, heads, seq, d)) ``[b, h, row, 0]``
    with ``b·heads + h = row0 / seq``."""
    if per_head(desc):
        bh = row0 // desc.shape[2]
        heads = desc.shape[1]
        return [bh // heads, bh % heads, row, 0]
    else:
        return [row0 + row, 0]


@gluon.jit
def as_box(smem, desc):
    """A 2-D box of shared memory as the copy of ``desc`` sees it."""
    if per_head(desc):
        return smem.reshape(desc.block_type.shape)
    else:
        return smem


@gluon.jit
def load(desc, row0, row, bar, smem, pred=True):
    """TMA the box at ``row`` of the sequence at ``row0`` into ``smem``, tracked by ``bar``."""
    tma.async_copy_global_to_shared(desc, coords(desc, row0, row), bar, as_box(smem, desc),
                                    pred=pred)


@gluon.jit
def store(o_desc, o_smem, row0, row):
    """TMA-store the O rows staged in ``o_smem`` (written by every warp of the partition) to
    ``row`` of the sequence at ``row0``; rows past the sequence's end are clipped by the
    descriptor. Returns once the copy has read ``o_smem`` (the caller may then reuse it)."""
    fence_async_shared()  # the generic-proxy writes -> visible to the TMA unit (async proxy)
    gl.thread_barrier()  # every warp's rows are in before one thread issues the copy
    tma.async_copy_shared_to_global(o_desc, coords(o_desc, row0, row),
                                    as_box(o_smem, o_desc))
    tma.store_wait(0)
