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

**A block in two pieces.** Gluon's tensors, shared buffers and TMA boxes must be powers of two,
so a K/V block of 80 rows (FA3's d 256 tile, 128 x 80) is held as a 64-row and a 16-row piece
(``pieces``): a pair of descriptors, a pair of rings, landing on one ``full`` mbarrier, and
everything a step makes of a block (its scores, its P) is a pair too. The functions here take
either form (``in_pieces``).
"""

from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, tma


@gluon.constexpr_function
def per_head(desc):
    """Whether ``desc`` is the rank-4 (batch, heads, seq, d) descriptor."""
    return len(desc.block_type.shape) == 4


@gluon.constexpr_function
def pieces(rows):
    """The boxes a block of ``rows`` is held in: itself where a power of two, else the largest
    power of two below it and the rest (80 = 64 + 16); ``host.Config.check`` requires the rest
    to be a power of two too."""
    if rows & (rows - 1) == 0:
        return (rows,)
    head = 1 << (rows.bit_length() - 1)
    return (head, rows - head)


@gluon.constexpr_function
def in_pieces(x):
    """Whether ``x`` (descriptors, a ring's slots, a slot, a block's scores or P) is a block's
    two pieces."""
    return isinstance(x, gl.tuple)


@gluon.constexpr_function
def box_rows(desc):
    """Rows of one box (of Q: a consumer's share or the tile; of K and V: a block, in all its
    pieces)."""
    if isinstance(desc, gl.tuple):
        return sum(d.block_type.shape[-2] for d in desc)
    return desc.block_type.shape[-2]


@gluon.constexpr_function
def box_bytes(desc):
    """Bytes one box (a block: all its pieces) brings in: what its ``full`` mbarrier expects."""
    if isinstance(desc, gl.tuple):
        return sum(d.block_type.nbytes for d in desc)
    return desc.block_type.nbytes


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
    """Shared memory for ``COUNT`` boxes of ``desc`` (a Q tile's parts, a ring's slots; a
    block in pieces: a ring for each)."""
    if in_pieces(desc):
        return allocate(desc[0], COUNT), allocate(desc[1], COUNT)
    else:
        return gl.allocate_shared_memory(desc.dtype, box_shape(desc, COUNT), box_layout(desc))


@gluon.jit
def index(slots, s):
    """Slot ``s`` of a ring (a block in pieces: each piece's)."""
    if in_pieces(slots):
        return slots[0].index(s), slots[1].index(s)
    else:
        return slots.index(s)


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
    """TMA the box at ``row`` of the sequence at ``row0`` into ``smem``, tracked by ``bar`` (a
    block in pieces: each piece at its rows)."""
    if in_pieces(desc):
        load(desc[0], row0, row, bar, smem[0], pred)
        load(desc[1], row0, row + box_rows(desc[0]), bar, smem[1], pred)
    else:
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
