"""Grader side of chapter 02: the producer/consumer protocol of a warp-specialized GEMM, read from
the compiler's TTGIR (the text `_compile.compile_kernel` returns), not from PTX spelling.

`analyze(ttgir, stages, k_steps)` parses the MLIR ops (strings and locations removed first, so an
op name inside an inline-asm string or a comment is never an op), finds `ttg.warp_specialize` and
its partitions (default = the consumers, the workers that copy = the loaders), and interprets the
scalar `arith`/`scf` ops of the whole kernel: the prologue before `warp_specialize` (the barriers'
inits), each partition before, in and after its k-loop (k-steps it = 0..k_steps-1). Every barrier
op gets the slot it touches, its parity, byte or arrival count, every TMA copy its box coordinates,
every wgmma wait its pending count, and each op whether it runs: "yes", "no" (a branch or
predicate that is false) or "cond" (it depends on a run-time value: M, N, the tile's position,
anything but K where K is bound; such an op is not a wait that runs, and is an op that may run).
The program ids stay symbolic (`Lin`), so coordinates are checked for every tile while a branch
on them stays a run-time one. `check(protocol)` turns that into violations by rule; `judge` (what
the grader calls) checks two readings, K bound to the grader's value and K free. The IR
is untrusted data: it is only matched with regexes, never evaluated as code; size, depth, loop
counts, shift amounts and integer widths are bounded. Stdlib only: the grader does not import
triton.
"""
import re
from dataclasses import dataclass, field

MAX_CHARS, MAX_STEPS, MAX_DEPTH, MAX_OPS = 4_000_000, 256, 64, 2_000_000
RULES = ("structure", "barriers", "producer.wait", "producer.expect", "producer.copies",
         "producer.extra", "consumer.wait", "consumer.wgmma", "consumer.arrive", "consumer.store",
         "consumer.extra", "setmaxnreg")
# the barriers' setup (inits, anything before or after warp_specialize) is part of both protocols
RULES_BY_TEST = {"test_producer_protocol": ("structure", "barriers") + tuple(
                     r for r in RULES if r.startswith("producer.")),
                 "test_consumer_protocol": ("structure", "barriers") + tuple(
                     r for r in RULES if r.startswith("consumer.")),
                 "test_setmaxnreg": ("setmaxnreg",)}
# the tt.func's scalar arguments the grader varies, bound to their values: K, as A's shape[1] and
# row stride and B's shape[0] (each descriptor is expanded to desc, two shapes, two strides). The
# CPU compile's M = BM and N = BN are one case of many: left unknown, a branch on them is "cond"
K_ARGS = (2, 3, 6)
_STR = re.compile(r'"[^"\n]*"')                    # MLIR prints a quote inside a string as \22
_LOC = re.compile(r"\bloc\(")
_VAL = re.compile(r"%[\w$.-]+(?:#\d+)?")
_ARG = re.compile(r"(%[\w$.-]+)\s*:")
_OP = re.compile(r"^(?:(%[\w$.-]+(?::\d{1,4})?(?:\s*,\s*%[\w$.-]+)*)\s*=\s*)?([\w.]+)(.*)$")
_MEM = re.compile(r"memdesc<((?:\d+x)*)([A-Za-z]\w*)")
_FOR = re.compile(r"scf\.for\s+(%\S+)\s*=\s*(%\S+)\s+to\s+(%\S+)\s+step\s+(%[\w$.#-]+)")
_PAIR = re.compile(r"(%[\w$.-]+)\s*=\s*(%[\w$.-]+(?:#\d+)?)")
_BYTES = {"f16": 2, "bf16": 2, "i16": 2, "f32": 4, "i32": 4, "f64": 8, "i64": 8}
_BARRIER_OPS = {"ttng.arrive_barrier": "arrive", "ttng.barrier_expect": "expect",
                "ttng.init_barrier": "init"}
# the ops that order shared memory between the threads' writes and the TMA engine's reads
_FENCE, _BARRIER = "ttng.fence_async_shared", "gpu.barrier"
_STORE_WAIT = "ttng.async_tma_store_wait"
_SYNC_OPS = (_FENCE, _BARRIER, _STORE_WAIT)
_ZEROS = re.compile(r"\s*dense<(?:0|0\.0*(?:e[+-]?0+)?|false)>\s*:")
_CMP = {"eq": int.__eq__, "ne": int.__ne__, "lt": int.__lt__, "le": int.__le__,
        "gt": int.__gt__, "ge": int.__ge__}
_BIN = {"addi": int.__add__, "subi": int.__sub__, "muli": int.__mul__, "andi": int.__and__,
        "ori": int.__or__, "xori": int.__xor__, "maxsi": max, "minsi": min, "maxui": max,
        "minui": min, "divui": int.__floordiv__, "remui": int.__mod__, "floordivsi":
        int.__floordiv__, "ceildivsi": lambda a, b: -(-a // b), "ceildivui": lambda a, b: -(-a // b),
        "divsi": lambda a, b: abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1),  # C: to zero
        "remsi": lambda a, b: a - b * (abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)),
        "shli": int.__lshift__, "shrsi": int.__rshift__, "shrui": int.__rshift__}


@dataclass
class Op:
    results: list
    name: str
    body: str                                    # rest of the line, strings and locs removed
    regions: list = field(default_factory=list)  # [(header line, [Op, ...]), ...]


@dataclass(frozen=True)
class Lin:
    """c + k[0]·pid_x + k[1]·pid_y + k[2]·pid_z: a value known up to the CTA's program ids. A TMA
    box's coordinates are checked in this form (right for every tile, not for one), while a branch
    on it cannot be decided: the analysis has no integer for it."""
    c: int = 0
    k: tuple = (0, 0, 0)

    def __str__(self):
        terms = [f"{m}·pid_{a}" if m != 1 else f"pid_{a}" for m, a in zip(self.k, "xyz") if m]
        return " + ".join(terms + [str(self.c)] * (self.c != 0 or not terms))


@dataclass
class Event:
    kind: str            # wait | expect | arrive | copy | dot | dotwait | store | init | inval
    #                      | asm | call | other (another op on a barrier, a ring or a buffer, or
    #                      one that orders shared memory: a fence, a thread barrier, a TMA store
    #                      wait; `op` says which)
    it: int | None       # k-step; None outside the k-loop
    status: str          # yes | no | cond
    order: int           # position in the partition's trace
    alloc: str | None    # the barrier's ttg.local_alloc (its SSA name)
    slot: int | None
    value: int | None = None   # parity, expected bytes, arrive/init count, or pending wgmmas
    dest: tuple = ()           # copy: (ring alloc, slot, bytes); dot: two of those (A, B)
    where: str = "loop"        # before | loop | after (the partition's k-loop), or prologue |
    #                            epilogue (outside warp_specialize: before it, after it)
    coords: tuple = ()         # copy, store: the box's coordinates (int, Lin or None)
    box: tuple = ()            # copy, store: the box's shape
    op: str = ""               # the op's name
    acc: tuple = ()            # dot: (useC, the accumulator it reads, the one it produces)


@dataclass
class Partition:
    name: str                  # consumer (default) | producer (partition0) | partitionN
    num_warps: int | None
    trips: int | None = None   # iterations of its k-loop, when the bounds are known
    events: list = field(default_factory=list)


@dataclass
class Protocol:
    stages: int
    k_steps: int
    found: bool = False                             # a ttg.warp_specialize was found
    partitions: dict = field(default_factory=dict)
    roles: dict = field(default_factory=dict)       # barrier alloc -> "full" | "empty"
    requested_regs: list = field(default_factory=list)
    actual_regs: list = field(default_factory=list)  # after allocate-warp-groups: default first
    maxnreg: int | None = None
    loaders: list = field(default_factory=list)     # worker partitions that issue TMA copies
    ring_bytes: dict = field(default_factory=dict)  # ring alloc -> bytes of one slot
    operands: dict = field(default_factory=dict)    # ring alloc -> "A" | "B" (the wgmma's operands)
    full_names: dict = field(default_factory=dict)  # full barrier alloc -> "full_a" | "full_b"
    outside: list = field(default_factory=list)     # events outside warp_specialize (no role)
    notes: list = field(default_factory=list)


def _clean(line: str) -> str:
    line, out, i = _STR.sub('""', line), [], 0
    for m in _LOC.finditer(line):                  # drop loc(...), nested parentheses included
        if m.start() < i:
            continue
        depth, k = 0, m.end() - 1
        for k in range(m.end() - 1, len(line)):
            depth += {"(": 1, ")": -1}.get(line[k], 0)
            if depth == 0:
                break
        out.append(line[i:m.start()])
        i = k + 1
    return ("".join(out) + line[i:]).strip()


def parse(text: str) -> list:
    """The op tree. Triton prints one op per line; a line ending in '{' opens a region of its op,
    or (`default {`, `partitionN(...) {`, `} else {`) another region of the op before."""
    top, stack, owners = [], [], []
    stack.append(top)
    for raw in text.splitlines():
        line = _clean(raw)
        if not line or line.startswith(("#", "^", "//")):
            continue
        if line.startswith("}"):
            if len(stack) > 1:
                stack.pop()
                if not line.endswith("{"):
                    owners.pop()
                    continue
                owners[-1].regions.append((line, []))
                stack.append(owners[-1].regions[-1][1])
            continue
        if re.match(r"(default|partition\d+)\b", line) and line.endswith("{") and stack[-1]:
            owner = stack[-1][-1]
        elif m := _OP.match(line):
            res = m.group(1) or ""
            base, _, n = res.partition(":")             # %r:2 = ... defines %r#0 and %r#1
            results = ([f"{base}#{i}" for i in range(min(int(n), 64))] if n else
                       [r.strip() for r in res.split(",") if r.strip()])
            owner = Op(results, m.group(2), m.group(3))
            stack[-1].append(owner)
            if not line.endswith("{"):
                continue
        else:
            continue
        owner.regions.append((line, []))
        stack.append(owner.regions[-1][1])
        owners.append(owner)
        if len(stack) > MAX_DEPTH:
            raise ValueError(f"the IR nests regions more than {MAX_DEPTH} deep")
    return top


def _arith(name: str, body: str, args: list) -> int | None:
    """The scalar integer ops, exactly as the hardware computes them on N-bit two's complement
    values (a value is kept as its signed reading, an i1 as 0 or 1); None when anything is unknown
    or the op is not modeled (a rule that depends on it then fails)."""
    if name == "arith.constant" and body.split()[:1] in (["true"], ["false"]):
        return int(body.split()[0] == "true")      # printed without a type: i1
    (n, w), op = _types(body), name.split(".", 1)[-1]
    if not (0 < n <= 64 and 0 < w <= 64):
        return None
    if op == "constant":
        c = re.match(r"\s*(-?\d{1,20})\s*:", body)
        return _keep(int(c.group(1)), w) if c else None
    if op == "select":
        return args[1 if args[0] else 2] if len(args) == 3 and args[0] is not None else None
    if not args or None in args:
        return None
    if op in _CASTS:
        return _cast(op, args[0], n, w) if len(args) == 1 else None
    if op == "cmpi" and len(args) == 2:
        return _cmpi(body.split(",")[0].strip(), *args, w)
    if op in _BIN and len(args) == 2:
        return _binary(op, *args, w)
    return None


def _types(body: str) -> tuple:
    """The bit widths of an arith op's operand and result (casts: `: iN to iM`; other ops have
    one type), 0 for a type that is no integer."""
    t = re.search(r":\s*(?:(\S+)\s+to\s+)?(\S+)\s*$", body)
    if not t:
        return 0, 0
    w = _int_width(t.group(2))
    return (_int_width(t.group(1)) if t.group(1) else w), w


def _int_width(t: str) -> int:
    return 64 if t == "index" else int(t[1:]) if re.fullmatch(r"i\d{1,2}", t) else 0


def _bits(x: int, w: int) -> int:
    """The w-bit pattern of x: its unsigned reading."""
    return x & ((1 << w) - 1)


def _signed(x: int, w: int) -> int:
    """The signed (two's complement) reading of x's low w bits; an i1 true is -1."""
    x = _bits(x, w)
    return x - (1 << w) if x >> (w - 1) else x


def _keep(x: int, w: int) -> int:
    """How the interpreter keeps a w-bit result: its signed reading, an i1 as 0 or 1."""
    return _bits(x, 1) if w == 1 else _signed(x, w)


# the casts, by the source bits they read: signed, unsigned (zero-extension), or the bits as
# they are (truncation and a same-width bitcast); index_cast is extsi or trunci by the widths
_CASTS = {"extsi": "s", "extui": "u", "trunci": "t", "index_cast": "s", "index_castui": "u",
          "bitcast": "="}


def _valid_cast(op: str, n: int, w: int) -> bool:
    """Whether `op` casts an n-bit integer to a w-bit one: an ext widens, a trunc narrows, a
    bitcast keeps the width."""
    kind = _CASTS[op]
    return 0 < n <= 64 and not ((kind == "=" and n != w) or (op.startswith("ext") and w <= n)
                                or (kind == "t" and w >= n))


def _cast(op: str, x: int, n: int, w: int) -> int | None:
    if not _valid_cast(op, n, w):
        return None
    kind = _CASTS[op]
    if kind == "s" and w > n:
        return _keep(_signed(x, n), w)
    if kind == "u" and w > n:
        return _keep(_bits(x, n), w)
    return _keep(x, w)                             # truncation: the low w bits


def _cmpi(pred: str, a: int, b: int, w: int) -> int | None:
    """cmpi: eq/ne on the bits, s.. on the signed readings, u.. on the unsigned ones."""
    rel = pred[1:] if pred[:1] in ("s", "u") and pred not in ("eq", "ne") else pred
    if rel not in _CMP or (rel not in ("eq", "ne") and pred[:1] not in ("s", "u")):
        return None
    read = _bits if pred[0] == "u" or rel in ("eq", "ne") else _signed
    return int(_CMP[rel](read(a, w), read(b, w)))


def _binary(op: str, a: int, b: int, w: int) -> int | None:
    """A two-operand op on w-bit values: an unsigned op (..ui) reads the operands' bits, a
    signed one their signed readings; division by zero, a signed division that overflows and a
    shift by the width or more are poison (None)."""
    if op[:2] == "sh":
        b = _bits(b, w)
        if b >= w:
            return None
        return _keep((_bits(a, w) if op == "shrui" else _signed(a, w)) >> b if op != "shli"
                     else a << b, w)
    read = _bits if op.endswith("ui") else _signed
    a, b = read(a, w), read(b, w)
    if ("div" in op or "rem" in op) and (b == 0 or (read is _signed and b == -1
                                                      and a == -(1 << (w - 1)))):
        return None
    return _keep(_BIN[op](a, b), w)


# the program ids' largest values (a grid has fewer than 2**31 CTAs along x, 2**16 along y and z)
_PID_MAX = ((1 << 31) - 1, (1 << 16) - 1, (1 << 16) - 1)


def _lin(name: str, body: str, args: list):
    """The ops that keep a value linear in the program ids (+, -, × by a constant, casts), with
    the type's wrap-around on every coefficient; None for anything else (a comparison, a division:
    unknown, so that a branch on the tile's position stays a run-time one)."""
    (n, w), op = _types(body), name.split(".", 1)[-1]
    v = [Lin(a) if isinstance(a, int) and not isinstance(a, bool) else a for a in args]
    if w < 32 or not v or not all(isinstance(a, Lin) for a in v):
        return None                                # an i1 of a program id is a condition
    if op in _CASTS and len(v) == 1:
        r = _lin_cast(op, v[0], n, w)
    elif op in ("addi", "subi") and len(v) == 2:
        sign = 1 if op == "addi" else -1
        r = Lin(v[0].c + sign * v[1].c, tuple(a + sign * b for a, b in zip(v[0].k, v[1].k)))
    elif op == "muli" and len(v) == 2 and not (any(v[0].k) and any(v[1].k)):
        x, m = (v[0], v[1].c) if any(v[0].k) else (v[1], v[0].c)
        r = Lin(x.c * m, tuple(a * m for a in x.k))
    else:
        return None
    return Lin(_signed(r.c, w), tuple(_signed(a, w) for a in r.k)) if r is not None else None


def _lin_cast(op: str, x: Lin, n: int, w: int):
    """A cast of a linear value. Truncation (and a same-width cast) keeps it: the low bits of a
    sum and product are those of the low bits. A widening cast is the form itself only where the
    form stays, for every program id, within the source type's signed range (extsi, index_cast)
    or its non-negative half (extui, index_castui); elsewhere its high bits are not known: None."""
    if not _valid_cast(op, n, w):
        return None
    if w <= n:
        return x
    lo, hi = _lin_range(x)
    return x if -(1 << (n - 1)) * (_CASTS[op] == "s") <= lo and hi < 1 << (n - 1) else None


def _lin_range(x: Lin) -> tuple:
    """The smallest and largest value of the form over every program id."""
    terms = [(0, k * m) for k, m in zip(x.k, _PID_MAX)]
    return (x.c + sum(min(t) for t in terms), x.c + sum(max(t) for t in terms))


def _zero_offsets(head: str) -> bool:
    """Whether a memdesc_subslice's offsets (`%x[0, 64]`) are all zero."""
    m = re.search(r"\[([^\]]{0,200})\]", head)
    return bool(m) and all(x.strip() == "0" for x in m.group(1).split(","))


def _nbytes(body: str) -> int:
    ms = _MEM.findall(body)                        # the last memdesc type is the result's
    n = _BYTES.get(ms[-1][1], 1) if ms else 0
    for d in ms[-1][0].split("x")[:-1] if ms else []:
        n *= int(d[:9])
    return n


class _Run:
    """Executes the op tree once, iterating each partition's first scf.for (its k-loop)."""

    def __init__(self, p: Protocol, scalar_args, num_warps, bound):
        self.p, self.args, self.num_warps = p, list(scalar_args or [])[:4096], num_warps
        self.bound = set(range(len(self.args)) if bound is None else bound)
        self.part, self.pending = None, False      # pending: the k-loop is still to come
        self.where = "prologue"
        self.budget = MAX_OPS
        self.serial = 0                            # the wgmmas' results, numbered

    def event(self, kind, it, status, mem, value=None, dest=(), **more):
        alloc, slot = (mem[1], mem[2]) if isinstance(mem, tuple) else (None, None)
        trace = self.p.outside if self.part is None else self.part.events
        trace.append(Event(kind, it, status, len(trace), alloc, slot if isinstance(slot, int)
                           else None, value, dest, self.where, **more))

    def region(self, ops, env, status, it):
        self.budget -= len(ops)
        if self.budget < 0:
            raise ValueError(f"the IR takes more than {MAX_OPS} op evaluations")
        for op in ops:
            if op.name in ("scf.yield", "ttg.warp_yield"):
                return [env.get(v) for v in _VAL.findall(op.body)]
            self.op(op, env, status, it)
        return []

    def op(self, op, env, status, it):
        n, body = op.name, op.body
        head = body.split(" : ")[0]
        args = [env.get(v) for v in _VAL.findall(head.split(" deps ")[0])]
        res = None

        def runs(pred):            # under a predicate: false never runs, unknown is "cond"
            pred = pred if isinstance(pred, int) else None
            return "no" if "no" == status or pred == 0 else "cond" if pred is None or \
                status == "cond" else "yes"
        if n == "arith.constant" and _ZEROS.match(body):
            res = "zeros"                          # a tensor of zeros: a fresh accumulator
        elif n.startswith("arith."):
            res = _arith(n, body, [a if isinstance(a, int) else None for a in args])
            if res is None and n == "arith.select" and len(args) == 3 and \
                    isinstance(args[0], int):
                res = args[1 if args[0] else 2]    # a value of another kind: a Lin, a memdesc
            elif res is None and any(isinstance(a, Lin) for a in args):
                res = _lin(n, body, args)
        elif n == "tt.get_program_id":
            axis = "xyz".find(body.split()[0] if body.split() else "?")
            res = Lin(0, tuple(int(i == axis) for i in range(3))) if axis >= 0 else None
        elif n in ("module", "builtin.module", "tt.func"):
            for i, a in enumerate(_ARG.findall(body) if n == "tt.func" else []):
                if i in self.bound and i < len(self.args) and isinstance(self.args[i], int):
                    env[a] = self.args[i]          # K, in the kernel's shapes and strides
            for _, ops in op.regions:
                self.region(ops, env, status, it)
        elif n == "ttg.local_alloc":
            res = ("mem", op.results[0] if op.results else "?", None, _nbytes(body))
            if args:                               # allocated with a value: a write to it
                self.event("other", it, runs(1), res, op=n)
        elif n == "ttg.memdesc_subslice" and not _zero_offsets(head):
            # a part of a slot at an offset: which bytes it covers is not read
            note = ("a ttg.memdesc_subslice at a non-zero offset (part of a buffer) is not read "
                    "by the analysis; expected whole slots")
            self.p.notes += [note] * (note not in self.p.notes)
        elif n.startswith("ttg.memdesc_") and args and isinstance(args[0], tuple):
            slot = args[1] if n == "ttg.memdesc_index" and len(args) > 1 else args[0][2]
            res = ("mem", args[0][1], slot, _nbytes(body))
        elif n == "ttng.wait_barrier" and len(args) >= 2:          # bar, phase[, pred]
            self.event("wait", it, runs(args[2] if len(args) > 2 else 1), args[0], args[1])
        elif n in _BARRIER_OPS and args:
            lit = re.findall(r",\s*(\d{1,12})\b", head)          # bar, N[, pred]
            self.event(_BARRIER_OPS[n], it, runs(args[1] if len(args) > 1 else 1), args[0],
                       int(lit[0]) if lit else None)
        elif n == "ttng.inval_barrier" and args:
            self.event("inval", it, runs(1), args[0])
        elif n in ("ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_local_to_global"):
            self.tma(n, head, body, env, it, runs)
        elif n == "ttng.warp_group_dot":            # value: 1 if async (it runs on after issue)
            # a, b, c, useC: the accumulator it reads (c, added to unless useC is false) and the
            # one it produces (a fresh token, followed through the wgmma waits and the k-loop)
            self.serial += 1
            res = ("acc", self.serial)
            use = args[3] if len(args) > 3 and isinstance(args[3], int) else None
            self.event("dot", it, runs(1), None, int(bool(re.search(r"isAsync\s*=\s*true", body))),
                       dest=tuple(a[1:] if isinstance(a, tuple) else (None, None, 0)
                                  for a in args[:2]),
                       acc=(use, args[2] if len(args) > 2 else None, res))
        elif n == "ttng.warp_group_dot_wait":
            m = re.search(r"pendings\s*=\s*(\d{1,6})", body)
            self.event("dotwait", it, runs(1), None, int(m.group(1)) if m else None)
            res = args[0] if args else None        # its results are its operands, once done
            env.update(zip(op.results[1:], args[1:]))
        elif n in _SYNC_OPS:                       # judged only in C's epilogue (_staged)
            m = re.search(r"pendings\s*=\s*(\d{1,6})", body)
            self.event("other", it, runs(1), None, int(m.group(1)) if m else None, op=n)
        elif n.endswith("inline_asm") or n == "tt.call":
            # what inline PTX or another function does to a barrier is not read: it may be anything
            self.event("asm" if n.endswith("inline_asm") else "call", it, runs(1), None, op=n)
        elif n == "ttg.warp_specialize":
            self.warp_specialize(op, args, env)
        elif n == "scf.if" and op.regions:
            c = args[0] if args and isinstance(args[0], int) else None
            then = self.region(op.regions[0][1], env, runs(c), it)
            other = self.region(op.regions[1][1], env, runs(None if c is None else 1 - c), it) \
                if len(op.regions) > 1 else []
            env.update(zip(op.results, then if c == 1 else other if c == 0 else []))
            return
        elif n == "scf.for" and op.regions and self.pending and it is None:
            return self.k_loop(op, env, status)
        else:            # another loop or region op: its ops may run, how often is not known
            for mem in {a[1]: a for a in args if isinstance(a, tuple)}.values():
                self.event("other", it, runs(1), mem, op=n)   # judged if on a barrier or ring
            for _, ops in op.regions:
                self.region(ops, dict(env), "no" if status == "no" else "cond", it)
        env.update(zip(op.results, [res]))

    def tma(self, n, head, body, env, it, runs):
        """A TMA copy, global to shared (`desc[coords] dest, bar[, pred]`) or a store, shared to
        global (`desc[coords] src`): its box coordinates and shape with it."""
        inner = head.split("[", 1)[1].rsplit("]", 1) if "[" in head and "]" in head else ["", ""]
        coords = tuple(env.get(v) for v in _VAL.findall(inner[0]))
        box = re.search(r"tensordesc<tensor<((?:\d{1,6}x)+)", body)
        box = tuple(int(d) for d in box.group(1).split("x")[:-1]) if box else ()
        a = [env.get(v) for v in _VAL.findall(inner[1])]
        if n.endswith("global_to_local") and len(a) >= 2 and isinstance(a[0], tuple):
            self.event("copy", it, runs(a[2] if len(a) > 2 else 1), a[1], dest=a[0][1:],
                       coords=coords, box=box)
        elif n.endswith("local_to_global"):
            self.event("store", it, runs(1), a[0] if a else None, coords=coords, box=box)

    def k_loop(self, op, env, status):
        header = op.regions[0][0]
        m = _FOR.search(header)
        if not m:
            return
        self.pending, self.where = False, "loop"
        iv, lb, ub, step = m.group(1), *(env.get(m.group(i)) for i in (2, 3, 4))
        pairs = _PAIR.findall(header.split("iter_args", 1)[1]) if "iter_args" in header else []
        carried = [env.get(b) for _, b in pairs]
        known = all(isinstance(x, int) for x in (lb, ub, step)) and step > 0
        self.part.trips = max(0, -(-(ub - lb) // step)) if known else None
        for j in range(min(self.p.k_steps, self.part.trips if known else MAX_STEPS)):
            env[iv] = lb + j * step if isinstance(lb, int) and isinstance(step, int) else None
            env.update((a, v) for (a, _), v in zip(pairs, carried))
            carried = (self.region(op.regions[0][1], env, status, j) + [None] * len(pairs))[
                :len(pairs)]
        env.update((r, None) for r in op.results)
        self.where = "after"

    def warp_specialize(self, op, captures, env):
        p = self.p
        p.found = True
        for key, regs in (("requestedRegisters", p.requested_regs),
                          ("actualRegisters", p.actual_regs)):
            m = re.search(key + r"\s*=\s*array<i32:([\d,\s]{0,400})>", op.body)
            regs[:] = [int(x) for x in m.group(1).split(",") if x.strip()] if m else []
        for header, ops in op.regions:
            name = header.split("(")[0].split()[0]
            w = re.search(r"num_warps\((\d{1,4})\)", header)
            self.part = Partition("consumer" if name == "default" else name,
                                  int(w.group(1)) if w else self.num_warps)
            # partitions other than the default see only their block arguments = the captures
            penv = dict(env) if name == "default" else dict(zip(_ARG.findall(header), captures))
            self.pending, self.where = True, "before"
            self.region(ops, penv, "yes", None)
            if self.pending:
                self.part.trips, self.pending = 0, False    # no loop: no k-step runs anything
            p.partitions[self.part.name] = self.part
        self.part, self.where = None, "epilogue"


def analyze(ttgir: str, stages: int, k_steps: int, scalar_args=None, bound=K_ARGS) -> Protocol:
    """The protocol the TTGIR describes, for k-steps 0..k_steps-1 of a ring of `stages` slots.
    scalar_args: the integer passed for each tt.func argument (None for the others), as
    compile_kernel returns them; only the positions in `bound` (None: all) are bound, the others
    are run-time values; without them a loop bound that depends on K is unknown and the k-loop is
    taken to run k_steps times. Prefer compile_kernel's "ttgir_ws" (it also has the registers
    setmaxnreg will set); the plain "ttgir" works too."""
    p = Protocol(max(1, min(int(stages), 64)), max(1, min(int(k_steps), MAX_STEPS)))
    if not isinstance(ttgir, str) or len(ttgir) > MAX_CHARS:
        p.notes.append("the IR is not text, or is larger than the analysis reads")
        return p
    head = re.search(r"^\s*module attributes \{(.*)$", ttgir, re.MULTILINE)
    attr = [re.search(k + r"\W*=\s*(\d{1,6})", head.group(1)) if head else None
            for k in ("ttg.maxnreg", "ttg.num-warps")]
    p.maxnreg, warps = (int(m.group(1)) if m else None for m in attr)
    try:
        _Run(p, scalar_args, warps, bound).region(parse(ttgir), {}, "yes", None)
    except ValueError as e:
        p.notes.append(str(e))
        return p
    # roles by use, not by name: a loader is a worker partition that issues TMA copies; its copies
    # complete on (and its expect is on) a `full` barrier; the loaders wait on, and the consumers
    # arrive on, `empty`
    live = {k: [e for e in q.events if e.status != "no"] for k, q in p.partitions.items()}
    p.loaders = [k for k, ev in live.items() if k != "consumer" and any(e.kind == "copy"
                                                                        for e in ev)]
    prod = [e for k in p.loaders for e in live[k]]
    cons = live.get("consumer", [])
    full = {e.alloc for e in prod if e.kind in ("copy", "expect") and e.alloc}
    empty = {e.alloc for e in prod if e.kind == "wait" and e.alloc} | {
        e.alloc for e in cons if e.kind == "arrive" and e.alloc}
    p.roles = {a: "full" if a in full else "empty" for a in full | empty}
    p.notes += [f"barrier {a} is used both as full (the TMA copies complete on it) and as empty "
                f"(the producer waits on it, or the consumers arrive on it)" for a in
                sorted(full & empty)]
    rings = {d[0]: d[2] for e in prod + cons for d in ([e.dest] if e.kind == "copy" else e.dest
                                               if e.kind == "dot" else []) if d[0]}
    p.ring_bytes = rings
    dots = [e for e in cons if e.kind == "dot"]
    p.operands = {d[0]: x for x, d in zip("AB", dots[0].dest)} if dots else {}
    return p


def _label(p: Protocol, kind, alloc, slot, value, role=None) -> str:
    name = role or p.full_names.get(alloc) or p.roles.get(alloc, alloc or "?")
    where = f"{name}[{'?' if slot is None else slot}]"
    count = f" (count {value})" if value not in (1, None) else ""
    return {"wait": f"wait on {where} with parity {value}", "arrive": f"arrive on {where}{count}",
            "expect": f"expect of {value} bytes on {where}", "init": f"init of {where}{count}",
            "inval": f"invalidate of {where}"}[kind]


def _show(e: Event, p: Protocol) -> str:
    """What an event is, in words."""
    if e.kind in ("wait", "arrive", "expect", "init", "inval"):
        return _label(p, e.kind, e.alloc, e.slot, e.value)
    ring = f"{e.dest[0]}[{e.dest[1]}]" if e.dest and not isinstance(e.dest[0], tuple) else ""
    return {"copy": f"a TMA copy into {ring}", "dot": "a wgmma", "store": "a TMA store",
            "dotwait": f"a wgmma wait({e.value})", "asm": "inline assembly (what it does to a "
            "barrier is not read)", "call": "a call of another function (not followed)"}.get(
        e.kind, f"{e.op} on {p.full_names.get(e.alloc) or p.roles.get(e.alloc) or e.alloc}")


def _coords(values) -> str:
    return "[" + ", ".join("?" if v is None else str(v) for v in values) + "]"


def _box_at(operand, box, it=0):
    """Where k-step it's box of an operand lies: A's BM × BK box at [pid_x·BM, it·BK], B's BK × BN
    box at [it·BK, pid_y·BN], C's BM × BN box at [pid_x·BM, pid_y·BN]; None if not known."""
    if len(box) != 2 or operand not in ("A", "B", "C"):
        return None
    r, c = box
    row = Lin(0, (r, 0, 0)) if operand != "B" else Lin(it * r)
    col = Lin(0, (0, c, 0)) if operand != "A" else Lin(it * c)
    return row, col


def _as_lin(v):
    return Lin(v) if isinstance(v, int) and not isinstance(v, bool) else v


def _at(part, it, kind, status="yes"):
    return [e for e in part.events if e.it == it and e.kind == kind and e.status == status]


def _one(out, p, part, it, kind, role, slot, value=None, optional=False):
    """The one `kind` op that runs in k-step `it`, if it is on role[slot] (with `value`, unless
    None); else a message saying what runs instead, and None."""
    exp = _label(p, kind, None, slot, value, role).replace(" with parity None", "")
    evs, msg = _at(part, it, kind), None
    if not evs and not optional:
        why = (" (one depends on a run-time value)" if _at(part, it, kind, "cond") else
               " (one is behind a branch or predicate that is false here)"
               if _at(part, it, kind, "no") else "")
        msg = f"no {kind} runs{why}"
    elif len(evs) > 1:
        msg = f"{len(evs)} {kind}s run (" + "; ".join(
            _label(p, kind, e.alloc, e.slot, e.value) for e in evs) + "), one was"
    elif evs and ((p.roles.get(evs[0].alloc), evs[0].slot) != (role, slot)
                  or value not in (None, evs[0].value)):
        msg = _label(p, kind, evs[0].alloc, evs[0].slot, evs[0].value)
    if msg:
        out.append(f"{part.name}, k-step {it}: {msg}; expected {exp}")
    return evs[0] if evs and not msg else None


def _name(p: Protocol, part) -> str:
    """A loader's name by the operand it copies ("loader of A"), else the partition's."""
    rings = {e.dest[0] for e in part.events if e.kind == "copy"}
    ops = sorted(p.operands.get(r, "?") for r in rings)
    return f"loader of {'+'.join(ops)}" if ops else part.name


def _misplaced(p: Protocol, c: Event, who: str, it: int) -> list:
    """A copy whose box is not k-step it's of its operand, for this CTA's tile."""
    operand = p.operands.get(c.dest[0], "?")
    exp = _box_at(operand, c.box, it)
    if operand == "?" or exp == tuple(map(_as_lin, c.coords)):
        return []                       # an operand no wgmma reads is the structure's to report
    where = "[pid_x·BM, it·BK]" if operand == "A" else "[it·BK, pid_y·BN]"
    return [f"{who}, k-step {it}: its TMA box is at {_coords(c.coords)}; expected "
            + (_coords(exp) if exp else "the box of the k-step") + f" ({operand}'s box lies at "
            f"{where}, in elements)"]


# where each role's barrier, TMA and wgmma ops may run: its k-loop's ops, and outside the loop only
# what the protocol has there (the consumers' last wgmma wait and their store of C); before
# warp_specialize the inits, after it an invalidate. A wgmma wait is harmless anywhere (and so are
# a fence, a thread barrier and a TMA store wait: events of kind "other" on no barrier or ring).
_ALLOWED = {"loader": {"loop": {"wait", "expect", "copy", "dotwait"}, "before": {"dotwait"},
                       "after": {"dotwait"}},
            "consumer": {"loop": {"wait", "dot", "dotwait", "arrive"}, "before": {"dotwait"},
                         "after": {"dotwait", "store"}},
            "outside": {"prologue": {"init", "dotwait"}, "epilogue": {"inval", "dotwait"}}}
_PLACE = {"before": "before its k-loop", "after": "after its k-loop",
          "prologue": "before warp_specialize", "epilogue": "after warp_specialize"}
_COUNT_WHY = {"full": "one arrival a phase: its loader's expect",
              "empty": "one arrival a phase: the consumers' release"}


def _relevant(p: Protocol, e: Event) -> bool:
    """Another op counts only on a barrier or a ring slot (the epilogue's store to C's buffer is
    the consumers' own)."""
    return e.kind != "other" or e.alloc in p.roles or e.alloc in p.ring_bytes


def _extras(p: Protocol, who: str, events: list, allowed: dict, out: list):
    """Ops the protocol does not have where they run, and the protocol's own ops on a run-time
    condition: each of them runs in a k-step or not, whatever M, N, K and the tile's position,
    and a wait that may not run is no wait while an arrive that may run can free a slot."""
    for e in events:
        if e.status == "no" or not _relevant(p, e):
            continue
        place = (f"{who}, " if who else "") + (f"k-step {e.it}" if e.where == "loop"
                                               else _PLACE[e.where])
        if e.kind not in allowed[e.where]:
            out.append(f"{place}: {_show(e, p)} {'runs' if e.status == 'yes' else 'may run'}; "
                       "the protocol has no such op there")
        elif e.status == "cond" and e.kind != "dotwait":
            out.append(f"{place}: {_show(e, p)} runs only on a run-time condition (on M, N, K "
                       "or the tile's position); expected it to run, or not, in every case")


def _setup(p: Protocol, out: list):
    """Every slot of every barrier initialised once before warp_specialize, with the arrivals a
    phase of it gets (a count the arrivals never reach deadlocks; one they pass frees a slot
    early), and no other barrier, TMA or wgmma op outside the partitions."""
    inits = [e for e in p.outside if e.kind == "init" and e.where == "prologue"
             and e.status == "yes"]
    for alloc, role in sorted(p.roles.items()):
        name = p.full_names.get(alloc) or role
        for s in range(p.stages):
            got = [e.value for e in inits if e.alloc == alloc and e.slot == s]
            if got != [1]:
                out.append(f"{name}[{s}] is " + ("not initialised" if not got else
                           "initialised with count " + " and ".join(map(str, got)))
                           + f" before warp_specialize; expected one init with count 1 "
                           f"({_COUNT_WHY[role]})")
    _extras(p, "", p.outside, _ALLOWED["outside"], out)


def _releases(p: Protocol, cons: Partition, arrive_out: list, store_out: list):
    """No slot goes back to the loaders while a wgmma that reads it may still run, and C is not
    stored while any may: a wgmma wait with pending count n finishes all but the n wgmmas issued
    last (warpgroup_mma_wait(1) after k-step it's wgmma finishes k-step it-1's)."""
    running = []
    for e in cons.events:
        if e.status != "yes":
            continue
        if e.kind == "dot" and e.value:              # a synchronous wgmma is done once issued
            running.append(e)
        elif e.kind == "dotwait" and isinstance(e.value, int):
            running = running[len(running) - e.value:] if e.value < len(running) else running
        elif e.kind == "arrive" and p.roles.get(e.alloc) == "empty":
            busy = [d for d in running if any(sl in (e.slot, None) for _, sl, _ in d.dest)]
            arrive_out += [f"consumer, k-step {e.it}: the release of empty[{e.slot}] comes while "
                           f"k-step {busy[0].it}'s wgmma, which reads that slot, may still run; "
                           "expected it only after a wgmma wait that has finished every wgmma "
                           "reading the slot"] if busy else []
        elif e.kind == "store" and running:
            store_out.append(f"consumer: C is stored while {len(running)} wgmma(s) may still "
                             "run; expected a wgmma wait with a pending count of 0 before")


def _store(p: Protocol, cons: Partition, out: list):
    """The epilogue: one TMA store of C, after the k-loop, at this CTA's tile."""
    stores = [e for e in cons.events if e.kind == "store" and e.status == "yes"]
    if [e.where for e in stores] != ["after"]:
        out.append(f"consumer: {len(stores)} TMA store(s) of C run"
                   + (f" ({', '.join(_PLACE.get(e.where, 'in a k-step') for e in stores)})"
                      if stores else "") + "; expected one, after the k-loop")
    for e in stores:
        exp = _box_at("C", e.box)
        if exp != tuple(map(_as_lin, e.coords)):
            out.append(f"consumer: C's TMA box is at {_coords(e.coords)}; expected "
                       + (_coords(exp) if exp else "[pid_x·BM, pid_y·BN]") + " (this CTA's tile)")


def _writes(e: Event, alloc) -> bool:
    """Whether `e` may write the buffer `alloc` with the threads' own stores (a local_store, or
    a local_alloc with a value)."""
    return (e.kind == "other" and e.op in ("ttg.local_store", "ttg.local_alloc")
            and e.alloc == alloc and e.status != "no")


def _staged(p: Protocol, cons: Partition, out: list):
    """C's staging buffer, written by every consumer thread, is read by the TMA engine (the async
    proxy) when one thread issues the store: the threads' writes must be fenced
    (fence_async_shared) and every thread past them (a thread barrier, after the fence) before the
    store is issued; and the store must be complete (a TMA store wait with a pending count of 0)
    before the kernel ends, with no write to the buffer while it runs."""
    ev = cons.events
    for s in [e for e in ev if e.kind == "store" and e.status == "yes"]:
        writes = [e for e in ev if e.order < s.order and _writes(e, s.alloc)]
        if not writes:
            out.append("consumer: the TMA store of C reads a buffer no thread wrote; expected C "
                       "stored to shared memory first")
            continue
        last = writes[-1].order
        fence = next((e for e in ev if e.op == _FENCE and e.status == "yes"
                      and last < e.order < s.order), None)
        barrier = fence and next((e for e in ev if e.op == _BARRIER and e.status == "yes"
                                  and fence.order < e.order < s.order), None)
        if not fence or not barrier:
            out.append("consumer: the TMA store of C is issued without "
                       + ("a fence_async_shared" if not fence else "a thread barrier after the "
                          "fence") + " between the last write of C to shared memory and the "
                       "store; expected fence_async_shared() then gl.thread_barrier() (the TMA "
                       "engine may read the buffer before every thread's write is visible to it)")
        done = next((e for e in ev if e.op == _STORE_WAIT and e.status == "yes" and e.value == 0
                     and e.order > s.order), None)
        until = done.order if done else len(ev)
        done = done or next((e for e in p.outside if e.op == _STORE_WAIT and e.status == "yes"
                             and e.value == 0 and e.where == "epilogue"), None)
        if not done:
            out.append("consumer: no TMA store wait with a pending count of 0 runs after the "
                       "store of C; expected tma.store_wait(0) before the kernel ends (the CTA "
                       "may exit, and its shared memory go, while the store still reads it)")
        rewrite = [e for e in ev if s.order < e.order < until and _writes(e, s.alloc)]
        if rewrite:
            out.append("consumer: C's staging buffer is written while its TMA store may still "
                       "read it; expected no write before tma.store_wait(0)")


def _accumulates(cons: Partition, out: list):
    """Every wgmma adds to the accumulator the one before it produced (useC true; through the
    wgmma waits and the k-loop); the first starts from zeros or with useC false."""
    prev = None
    for d in [e for e in cons.events if e.kind == "dot" and e.status == "yes"]:
        use, c_in, c_out = d.acc or (None, None, None)
        where = f"consumer, k-step {d.it}" if d.it is not None else "consumer"
        if prev is None:
            if use != 0 and c_in != "zeros":
                out.append(f"{where}: the first wgmma adds to an accumulator that is not known "
                           "to be zero; expected it to start from zeros (or use_acc=False)")
        elif use != 1:
            out.append(f"{where}: the wgmma's use_acc is "
                       + ("false" if use == 0 else "not known to be true")
                       + " (it drops the sum so far); expected it true in every k-step after "
                       "the first")
        elif c_in != prev:
            out.append(f"{where}: the wgmma adds to another accumulator than the previous "
                       "wgmma's result; expected one running sum over the k-steps")
        prev = c_out


def judge(ttgir: str, stages: int, k_steps: int, scalar_args=None) -> dict:
    """check() of three readings of the IR, violations by rule: K bound to the grader's value (the
    k-loops' trip counts), K a run-time value like M and N, and K bound to a ragged value, RAGGED
    short of the grader's (the last k-step partial: TMA fills the rest of its boxes with zeros, so
    every partition still runs cdiv(K, BK) k-steps). A branch on K is decided in the first for
    the grader's few K only; the GPU's other K may take it the other way, so the second judges it
    as it judges one on M: a wait behind it is no wait, an arrive behind it may run."""
    bound = _violations(analyze(ttgir, stages, k_steps, scalar_args))
    free = _violations(analyze(ttgir, stages, k_steps, scalar_args, bound=()))
    out = {r: bound[r] + [m for m in free[r] if m not in bound[r]] for r in RULES}
    ragged = _ragged(scalar_args, k_steps)
    if ragged:
        v = _violations(analyze(ttgir, stages, k_steps, ragged))
        for r in RULES:
            out[r] += [f"with K = {ragged[K_ARGS[0]]} (a partial last k-step): {m}"
                       for m in v[r] if m not in out[r]]
    return _cap(out)


RAGGED = 13


def _ragged(scalar_args, k_steps: int):
    """The arguments with K (A's shape[1] and row stride, B's shape[0]) set RAGGED short of the
    grader's k_steps·BK, still k_steps k-steps of BK; None where the arguments do not say BK."""
    args = list(scalar_args or [])
    k = args[K_ARGS[0]] if len(args) > max(K_ARGS) else None
    if not isinstance(k, int) or isinstance(k, bool) or k_steps < 1 or k % k_steps or \
            any(args[i] != k for i in K_ARGS) or k // k_steps <= 1:
        return None
    bk = k // k_steps
    for i in K_ARGS:
        args[i] = k_steps * bk - min(RAGGED, bk - 1)
    return args


def check(p: Protocol) -> dict:
    """Violations by rule (every name in RULES); an empty list is a rule kept. The kernel has two
    loader partitions, one for A and one for B, each with its own `full` barrier per slot and
    both waiting on one `empty`; the consumers wait on both `full` barriers of a slot."""
    return _cap(_violations(p))


def _cap(v: dict) -> dict:
    return {r: m[:6] + [f"... and {len(m) - 6} more"] * (len(m) > 6) for r, m in v.items()}


def _violations(p: Protocol) -> dict:
    cons = p.partitions.get("consumer")
    loaders = [p.partitions[k] for k in p.loaders]
    if not p.found or cons is None or not loaders:
        return {r: [("no ttg.warp_specialize with a default partition (the consumers) and worker "
                     "partitions that copy A and B (the loaders) in the TTGIR")] + p.notes
                for r in RULES}
    v = {r: [] for r in RULES}
    S, n = p.stages, p.k_steps
    copied = {q.name: {e.dest[0] for e in q.events if e.kind == "copy"} for q in loaders}
    fulls = {q.name: {e.alloc for e in q.events if e.kind == "copy" and e.status != "no"}
             for q in loaders}
    v["structure"] += p.notes + [
        f"the {_name(p, q)}'s k-loop runs {q.trips} times; expected {n} (one per k-step)"
        for q in [*loaders, cons] if q.trips is not None and q.trips != n] + [
        f"{q.name} does barrier/TMA/wgmma work but copies nothing; expected only the two loaders"
        for k, q in p.partitions.items() if k != "consumer" and k not in p.loaders and any(
            e.status != "no" and _relevant(p, e) for e in q.events)]
    if len(loaders) != 2 or sorted(p.operands.get(r, "?") for c in copied.values()
                                   for r in c) != ["A", "B"]:
        v["structure"].append(
            f"{len(loaders)} loader partition(s) copying "
            + "; ".join(f"{q.name}: {sorted(p.operands.get(r, r) for r in copied[q.name])}"
                        for q in loaders) + "; expected two, one copying A and one copying B")
    elif fulls[loaders[0].name] & fulls[loaders[1].name]:
        v["producer.copies"].append("both loaders' copies complete on the same full barrier; "
                                    "expected one full barrier per operand (each counts one "
                                    "arrival a phase: the loader's expect)")
    own = {q.name: next(iter(fulls[q.name])) if len(fulls[q.name]) == 1 else None
           for q in loaders}
    p.full_names = {own[q.name]: "full_" + _name(p, q)[len("loader of "):].lower()
                    for q in loaders if own[q.name] and len(copied[q.name]) == 1}
    for q in loaders:
        if len(fulls[q.name]) > 1:
            v["producer.copies"].append(f"the {_name(p, q)}'s copies complete on "
                                        f"{len(fulls[q.name])} different barriers; expected one")
    for it in range(n):
        s, ph = it % S, (it // S) & 1
        for q in loaders:
            who, ring = _name(p, q), next(iter(copied[q.name])) if copied[q.name] else None
            # the first lap may skip the wait: a fresh barrier passes parity 1 at once
            w = _one(v["producer.wait"], p, q, it, "wait", "empty", s, ph ^ 1, optional=it < S)
            x = _one(v["producer.expect"], p, q, it, "expect", "full", s,
                     p.ring_bytes.get(ring))
            if x and own[q.name] and x.alloc != own[q.name]:
                v["producer.expect"].append(f"{who}, k-step {it}: its expect is on another "
                                            f"barrier than the one its copy completes on")
            copies, out = _at(q, it, "copy"), v["producer.copies"]
            if len(copies) != 1:
                out.append(f"{who}, k-step {it}: {len(copies)} TMA copies run, into "
                           + (", ".join(f"{c.dest[0]}[{c.dest[1]}]" for c in copies) or "nothing")
                           + f"; expected one, into slot {s} of its ring")
            for c in copies:
                if c.dest[1] != s or (p.roles.get(c.alloc), c.slot) != ("full", s):
                    out.append(f"{who}, k-step {it}: a TMA copy into {c.dest[0]}[{c.dest[1]}] "
                               f"completes on {p.roles.get(c.alloc, c.alloc)}[{c.slot}]; "
                               f"expected slot {s}, completing on its full[{s}]")
                out += [f"{who}, k-step {it}: a TMA copy is issued before {what}"
                        for before, what in ((w, "the wait on empty"), (x, "the expect"))
                        if before and c.order < before.order]
                out += _misplaced(p, c, who, it)
            if w and x and x.order < w.order:
                v["producer.wait"].append(f"{who}, k-step {it}: the expect comes before the wait")
        waits, out = _at(cons, it, "wait"), v["consumer.wait"]
        dots = _at(cons, it, "dot")
        for q in loaders:
            ours = [e for e in cons.events if e.it == it and e.kind == "wait" and own[q.name]
                    and e.alloc == own[q.name]]
            mine = [e for e in ours if e.status == "yes"]
            exp = (f"a wait on {p.full_names.get(own[q.name], 'its full')}[{s}] (the "
                   f"{_name(p, q)}'s) with parity {ph}")
            if len(mine) != 1 or (mine[0].slot, mine[0].value) != (s, ph):
                why = (" (one depends on a run-time value)" if any(e.status == "cond" for e in ours)
                       else " (one is behind a branch or predicate that is false here)"
                       if ours else "")
                out.append(f"consumer, k-step {it}: "
                           + ("; ".join(_label(p, "wait", e.alloc, e.slot, e.value)
                                        for e in mine) or f"no such wait runs{why}")
                           + f"; expected {exp}")
            elif dots and dots[0].order < mine[0].order:
                out.append(f"consumer, k-step {it}: the wgmma is issued before {exp}")
        out += [f"consumer, k-step {it}: {_label(p, 'wait', e.alloc, e.slot, e.value)} runs; "
                "expected only the waits on the two full barriers" for e in waits
                if e.alloc not in own.values()]
        if len(dots) != 1:
            v["consumer.wgmma"].append(f"consumer, k-step {it}: {len(dots) or 'no'} wgmma"
                                       f"{'s' * (len(dots) > 1)} run" + (
                " (one depends on a run-time value)" if _at(cons, it, "dot", "cond") else "")
                + "; expected one")
        v["consumer.wgmma"] += [f"consumer, k-step {it}: the wgmma reads {a}[{sl}]; expected "
                                f"slot {s}" for d in dots for a, sl, _ in d.dest if a and sl != s]
        if it > 0:     # k-step it-1's wgmma is done (wgmma_wait(1)): release its slot
            _one(v["consumer.arrive"], p, cons, it, "arrive", "empty", (it - 1) % S, 1)
        v["consumer.arrive"] += [f"consumer, k-step 0: {_label(p, 'arrive', e.alloc, e.slot, 0)}"
                                 " runs; no earlier k-step has a slot to release"
                                 for e in _at(cons, 0, "arrive")] if it == 0 else []
    _setup(p, v["barriers"])
    for q in loaders:
        _extras(p, _name(p, q), q.events, _ALLOWED["loader"], v["producer.extra"])
    _extras(p, "consumer", cons.events, _ALLOWED["consumer"], v["consumer.extra"])
    _releases(p, cons, v["consumer.arrive"], v["consumer.store"])
    _store(p, cons, v["consumer.store"])
    _staged(p, cons, v["consumer.store"])
    _accumulates(cons, v["consumer.wgmma"])
    regs, cap, out = p.actual_regs or p.requested_regs, p.maxnreg, v["setmaxnreg"]
    index = {q.name: int(q.name[len("partition"):]) for q in loaders
             if q.name.startswith("partition") and q.name[len("partition"):].isdigit()}
    if not p.requested_regs or any(i >= len(p.requested_regs) for i in index.values()):
        out.append("warp_specialize has no requestedRegisters for every loader: a worker's "
                   "register count was not given, so no setmaxnreg is emitted")
    elif p.actual_regs and cap:
        out += [f"the {_name(p, q)} gets {regs[index[q.name] + 1]} registers; expected fewer than "
                f"the {cap} at entry (setmaxnreg.dec)" for q in loaders
                if q.name in index and regs[index[q.name] + 1] >= cap] + [
                (f"the consumers get {regs[0]} registers; expected more than the {cap} at entry "
                 "(setmaxnreg.inc)")] * (regs[0] <= cap)
    elif cap:
        out += [f"the {_name(p, q)} requests {p.requested_regs[index[q.name]]} registers; "
                f"expected fewer than the {cap} at entry" for q in loaders
                if q.name in index and p.requested_regs[index[q.name]] >= cap]
    return v
