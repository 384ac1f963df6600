"""Runs on the submission's side: launch the submission's `attention_fwd` kernel itself (never its
host code) on the grader's cases, in buffers poisoned around the data, and hand back the buffers.

Each of Q, K, V is laid out (batch, rows, d) with a common row count S_pad (the longer sequence,
rounded up to whole blocks, plus one more block) and one extra batch at the end; every row that is
not data is NaN. A load past ``seqlen_k`` (or past the last batch) that is not masked reads NaN
and poisons the output. O starts as NaN too: a row the kernel should write and does not stays NaN,
and the rows past ``seqlen_q`` must still be NaN after the run (a store that is not masked shows).
The grader, in its own process, reads all of it.

Under the interpreter every load and store is also checked where it happens (`_Bounds`): each
address a mask leaves on must lie in the data (rows below ``seqlen_q`` / ``seqlen_k`` of a batch
that exists: Q, K and V for loads, O and LSE for stores). The poison shows only a read whose
value reaches O; a kernel that loads past the end unmasked and throws the values away after
(``tl.where``) reads out of bounds all the same, and on a GPU past the end of the tensor. Such
lanes are not carried out (no read or write lands outside the data), and the case fails with the
first of them named. A load from O or LSE fails the case with its own message: a correct kernel
never reads its output, and a program that reads what another one wrote races on a GPU, where
the programs run at once.

The interpreter runs a grid's programs one after another, in a fixed order, so a kernel whose
programs depend on each other (one merges into, or overwrites, rows another wrote) can come out
right there and race on a GPU. Each case therefore runs again with the same programs in the
reverse order (`_orders`), in fresh NaN buffers: O and LSE must come out the same, bit for bit.
"""
import math

import numpy as np


def _launchable(fn):
    """The kernel must be Triton's (a @triton.jit function), not a stand-in."""
    mod = type(fn).__module__ or ""
    if not mod.startswith("triton."):
        raise TypeError(f"attention_fwd is a {mod}.{type(fn).__qualname__}, not a @triton.jit kernel")


def warm():
    """Run once by the sandbox's warm process (exercise.json's "preload") before any submission:
    import torch and Triton and, under the interpreter, run a small kernel (its first launch sets
    the interpreter up), so each submission's run, forked from here, does only its own work.
    For a GPU run nothing is launched: CUDA must start in the forked run, never before a fork."""
    import os

    import torch
    import triton
    import triton.language as tl

    if os.environ.get("TRITON_INTERPRET") != "1":
        return

    @triton.jit
    def add_one(X, N, B: tl.constexpr):
        offs = tl.arange(0, B)
        tl.store(X + offs, tl.load(X + offs, mask=offs < N) + 1, mask=offs < N)

    x = torch.zeros(16)
    add_one[(1,)](x, 16, B=16)
    if x.sum().item() != 16:
        raise RuntimeError("the interpreter's warm-up kernel computed the wrong values")


# the kernel's arguments as Triton types it for a launch: five float32 buffers, the two lengths,
# the scale, the two strides; the three constexprs follow
SIGNATURE = ["*fp32"] * 5 + ["i32", "i32", "fp32", "i32", "i32"]


def compiles(shapes):
    """{key: None or the compiler's message} for each key's (HEAD_DIM, BLOCK_M, BLOCK_N): the
    kernel through Triton's front end for sm_90a (Python AST to TTIR, where the language's rules
    are checked: no ``break`` or ``continue``, no Python object where a tensor goes, ``tl.dot``
    shapes, constexpr arguments), no GPU needed. The interpreter runs the body as Python and
    accepts all of those, so a kernel can come out right on CPU and never build for a GPU. Run in
    a process without TRITON_INTERPRET: with it, Triton's own jit helpers are interpreter
    objects and nothing compiles."""
    import traceback

    from triton._C.libtriton import ir
    from triton.backends.compiler import GPUTarget
    from triton.compiler.compiler import ASTSource, make_backend

    import attention_tl as mod

    kernel = mod.attention_fwd
    _launchable(kernel)
    target = GPUTarget("cuda", 90, 32)
    backend = make_backend(target)
    options = backend.parse_options({"num_warps": 4})
    names = list(kernel.arg_names)
    launched = len(SIGNATURE) + 3
    # parameters past the launch's take their defaults, as a launch binds them
    extra = {p.name: p.default for p in kernel.params[launched:] if p.has_default}
    out, done = {}, {}
    for key, (d, bm, bn) in shapes.items():
        shape = (int(d), int(bm), int(bn))
        if shape not in done:
            try:
                if len(names) < launched or len(names) - launched != len(extra):
                    raise TypeError(f"attention_fwd takes {len(names)} arguments (without a "
                                    f"default), the launch passes {launched}")
                signature = dict(zip(names, SIGNATURE + ["constexpr"] * 3))
                signature.update({n: "constexpr" for n in extra})
                src = ASTSource(kernel, signature,
                                {**dict(zip(names[launched - 3:launched], shape)), **extra})
                ctx = ir.context()
                ir.load_dialects(ctx)
                backend.load_dialects(ctx)
                src.make_ir(target, options, backend.get_codegen_implementation(options),
                            backend.get_module_map(), ctx)
                done[shape] = None
            except Exception:  # noqa: BLE001 - the compiler's message is the answer
                done[shape] = traceback.format_exc(limit=0)[-3000:]
        out[key] = done[shape]
    return out


def run_cases(cases, device="cpu"):
    """{name: {"o": O buffer, "lse": LSE buffer} or {"error": traceback}} for every case
    ({name: {"q", "k", "v", "scale", "blocks"}})."""
    import traceback

    import attention_tl as mod
    import torch

    _launchable(mod.attention_fwd)
    out = {}
    for name, c in cases.items():
        try:
            out[name] = _run(mod.attention_fwd, c, device, torch)
        except Exception:  # noqa: BLE001 - the failure is the answer for this case
            out[name] = {"error": traceback.format_exc(limit=6)[-3000:]}
    return out


def _run(kernel, c, device, torch):
    q, k, v = c["q"], c["k"], c["v"]
    bm, bn = int(c["blocks"][0]), int(c["blocks"][1])
    B, Sq, D = q.shape
    Sk = k.shape[1]
    S_pad = math.ceil(max(Sq, Sk) / max(bm, bn)) * max(bm, bn) + max(bm, bn)

    def poisoned(x):
        buf = torch.full((B + 1, S_pad, D), float("nan"), dtype=torch.float32)
        buf[:B, :x.shape[1]] = torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32))
        return buf.to(device)

    qb, kb, vb = poisoned(q), poisoned(k), poisoned(v)
    ob = torch.full((B + 1, S_pad, D), float("nan"), dtype=torch.float32, device=device)
    lse = torch.full(((B + 1) * Sq,), float("nan"), dtype=torch.float32, device=device)
    grid = (math.ceil(Sq / bm), B)

    def launch():
        kernel[grid](qb, kb, vb, ob, lse, Sq, Sk, float(c["scale"]), qb.stride(0), qb.stride(1),
                     HEAD_DIM=D, BLOCK_M=bm, BLOCK_N=bn)
    if device != "cpu":
        launch()
        torch.cuda.synchronize()
        return {"o": ob.cpu().numpy(), "lse": lse.cpu().numpy()}
    row = S_pad * D * 4                                   # bytes of one batch of a buffer
    data = [_Region("Q", qb.data_ptr(), row, Sq * D * 4, B, D, "seqlen_q", Sq),
            _Region("K", kb.data_ptr(), row, Sk * D * 4, B, D, "seqlen_k", Sk),
            _Region("V", vb.data_ptr(), row, Sk * D * 4, B, D, "seqlen_k", Sk)]
    out = [_Region("O", ob.data_ptr(), row, Sq * D * 4, B, D, "seqlen_q", Sq),
           _Region("LSE", lse.data_ptr(), Sq * 4, Sq * 4, B, 1, "seqlen_q", Sq)]
    bounds = _Bounds(reads=data, writes=out)
    first = None
    for what, order in _orders(grid[0] * grid[1]):
        ob.fill_(float("nan"))
        lse.fill_(float("nan"))
        with bounds.watching(order):
            launch()
        if bounds.bad:
            return {"error": bounds.message()}
        got = ob.numpy().copy(), lse.numpy().copy()
        if first is None:
            first = got
        elif _differ(first, got):
            return {"error": _order_message(what, _differ(first, got))}
    return {"o": first[0], "lse": first[1]}


def _orders(n):
    """(what, order) for each run of a case's n programs: the interpreter's own order (None),
    then the reverse, in which every two programs run the other way round: a program that
    needs another to have run before it, or after it, sees that change."""
    if n < 2:
        return [("the interpreter's order", None)]
    return [("the interpreter's order", None), ("the reverse order", list(range(n))[::-1])]


def _differ(first, got):
    """The names of the buffers (O, LSE) whose bits differ between two runs."""
    return [name for name, a, b in zip(("O", "LSE"), first, got)
            if not np.array_equal(a.view(np.int32), b.view(np.int32))]


def _order_message(what, names):
    return (f"the kernel's {' and '.join(names)} came out different when its programs ran in "
            f"{what}: the result depends on the order the programs run in. On a GPU they run at "
            "the same time, so programs that store rows another program also stores, or merge "
            "into O or LSE (a read-modify-write, atomics included), race. Each program must "
            "compute its own BLOCK_M rows over every key and store them once.")


class _Region:
    """A buffer laid out (batch, row, d) of float32: `batches` batches `stride` bytes apart, the
    first `data` bytes of each the data; `bound`/`rows` name the limit on its rows."""

    def __init__(self, name, base, stride, data, batches, d, bound, rows):
        self.name, self.base, self.stride, self.data = name, base, stride, data
        self.batches, self.d, self.bound, self.rows = batches, d, bound, rows

    def holds(self, addr):
        off = addr.astype(np.int64) - self.base
        return (off >= 0) & (off < self.batches * self.stride) & (off % self.stride < self.data)

    def where(self, addr):
        """`addr` as this buffer's [batch, row] (None when it lies outside the whole buffer,
        padding and the extra batch included)."""
        off = int(addr) - self.base
        if not 0 <= off < (self.batches + 1) * self.stride:
            return None
        b, rest = divmod(off, self.stride)
        return f"{self.name}[batch {b}, row {rest // (4 * self.d)}]"


class _Bounds:
    """The interpreter's loads and stores (and atomics), each active lane checked against the
    regions it may touch while `watching`; lanes outside them are recorded and turned off."""

    def __init__(self, reads, writes):
        self.reads, self.writes = reads, writes
        self.bad = []                                   # (op, first address, lanes)

    def allowed(self, op, ptrs, mask, regions):
        addr = np.asarray(ptrs)
        on = np.broadcast_to(np.asarray(mask, dtype=bool), addr.shape)
        inside = np.zeros(addr.shape, dtype=bool)
        for r in regions:
            inside |= r.holds(addr)
        out = on & ~inside
        if out.any():
            self.bad.append((op, addr[out].flat[0], int(out.sum())))
        return on & inside

    def message(self):
        op, addr, _ = self.bad[0]
        lanes = sum(n for _, _, n in self.bad)
        output = next((r.name for r in self.writes if op == "load" and r.holds(np.asarray(addr))),
                      None)
        if output:
            return (f"the kernel loads from {output}, its output (first at "
                    f"{next(r.where(addr) for r in self.writes if r.name == output)}; "
                    f"{lanes} lane(s) in all). A correct kernel never reads O or LSE: each "
                    "program keeps its rows' running max, sum and accumulator in registers and "
                    "stores them once. A program that reads what another program stored races on "
                    "a GPU, where the programs run at the same time.")
        regions = self.reads if op == "load" else self.writes
        place = next((w for w in (r.where(addr) for r in regions + self.reads) if w), None)
        limits = ", ".join(sorted({f"{r.bound} = {r.rows}" for r in self.reads if r.name != "LSE"}))
        return (f"the kernel's {op} reached past the data: {place or 'an address in no buffer'} "
                f"({limits}; {lanes} lane(s) in all). A load or store must be masked wherever "
                "its row is past the sequence, even when the values loaded are thrown away after "
                "(tl.where): on a GPU that read is out of bounds.")

    def watching(self, order=None):
        """Hooks the interpreter's loads, stores and atomics; with `order` (a permutation of the
        grid's programs, numbered x-major as the interpreter walks them), the k-th program the
        interpreter starts is program order[k]."""
        import contextlib

        from triton.runtime import interpreter
        b, bounds = interpreter.interpreter_builder, self
        programs = []

        def set_grid_dim(nx, ny, nz):
            every = [(x, y, z) for x in range(nx) for y in range(ny) for z in range(nz)]
            programs[:] = every if order is None else [every[i] for i in order][::-1]
            return real_dim(nx, ny, nz)

        def set_grid_idx(*_):
            return real_idx(*programs.pop())

        def load(ptrs, mask, other, *rest, **kw):
            keep = bounds.allowed("load", ptrs.data, mask.data, bounds.reads)
            return real_load(ptrs, interpreter.TensorHandle(keep, mask.dtype), other, *rest, **kw)

        def store(ptrs, value, mask, *rest, **kw):
            keep = bounds.allowed("store", ptrs.data, mask.data, bounds.writes)
            return real_store(ptrs, value, interpreter.TensorHandle(keep, mask.dtype), *rest, **kw)

        def rmw(op, ptr, val, mask, *rest, **kw):
            keep = bounds.allowed("atomic", ptr.data, mask.data, bounds.writes)
            return real_rmw(op, ptr, val, interpreter.TensorHandle(keep, mask.dtype), *rest, **kw)

        def cas(ptr, cmp, val, *rest, **kw):
            if not bounds.allowed("atomic", ptr.data, True, bounds.writes).all():
                raise RuntimeError("an atomic compare-and-swap past the data")
            return real_cas(ptr, cmp, val, *rest, **kw)

        real_load, real_store = b.create_masked_load, b.create_masked_store
        real_rmw, real_cas = b.create_atomic_rmw, b.create_atomic_cas
        real_dim, real_idx = b.set_grid_dim, b.set_grid_idx

        @contextlib.contextmanager
        def hooked():
            b.create_masked_load, b.create_masked_store = load, store
            b.create_atomic_rmw, b.create_atomic_cas = rmw, cas
            if order is not None:
                b.set_grid_dim, b.set_grid_idx = set_grid_dim, set_grid_idx
            try:
                yield
            finally:                                    # back to the class's methods
                for name in ("create_masked_load", "create_masked_store", "create_atomic_rmw",
                             "create_atomic_cas", "set_grid_dim", "set_grid_idx"):
                    b.__dict__.pop(name, None)
        return hooked()
