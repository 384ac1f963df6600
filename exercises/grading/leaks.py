"""Does the release answer its own exercises? A scan of the *whole* released tree (``sim/``,
``kernels/``, notebooks, docs, not only ``exercises/``) for each solution, which tells a leak
from an idiom the course's own code shares with a solution.

The unit of a leak is a solution block (``### BEGIN/END SOLUTION``: what the student must write)
against one released unit (a top-level function or method of a released ``.py`` file, the rest of
that file's code, or a whole non-Python file). Evidence that the unit reproduces part of the
block, each piece covering some of the block's syntax nodes:

* ``line``: a solution line (``source.solution_lines``: at least 12 characters, not a comment) in
  the unit verbatim: the nodes that start on that line (a whole statement; a fragment of a
  multi-line call such as ``num_warps)),`` covers a name);
* ``code``: an expression of the block with at least `MIN_NODES` nodes, found in the unit with
  the same shape (local names become ``_``; attribute names, constants and operators stay):
  ``((it // STAGES) & 1) ^ 1`` finds ``((i // stages) & 1) ^ 1``; its nodes;
* ``same``: an integer expression of the block (arithmetic, bitwise, comparisons, ``x if c else
  y`` over names and integer constants; `_int_expr` says which) evaluated on every assignment of
  0..9 to its names, and the unit has one with the same answers, its names matched in some
  order: ``(k & 1) ^ (WG == 0)`` answers for ``(k & 1) ^ 1 if w == 0 else k & 1``; its nodes;
* ``call``: a call the block makes, with the same callee, number and kinds of arguments
  (``gl.warp_specialize(<list>, <list>, <list>)``): the call's name only, not its arguments;
* ``steps``: the block's order of effects (the names it calls, three or more, with its
  suspension points: ``yield``, ``yield from``, ``await``, each after what it waits for) found
  in that order in the unit: ``wait_turn, yield, qk, pass_turn, yield`` is a turn passed before
  the scores are waited for, which ``wait_turn, yield, qk, yield, pass_turn`` is not; the nodes
  of the calls and waits.

Evidence that the public sources (the stubs, the public tests and helpers) hold anyway counts for
nothing. The unit's *share* of the block is the part of the block's nodes its evidence covers.
A **leak** is a share over `LEAK_SHARE`: one place in the release holds more than half of
what the student has to write (a copied function, the same parity under other names, the same
schedule). Less is an **idiom**: an API call, a parity or a cost formula that the course's own
code uses for its own purpose and that is a fragment of the exercise, not its answer. `release`
fails on a leak and lists the idioms.

`scan(dest)` returns the findings (leaks and idioms); `report(findings)` prints them.
"""
from __future__ import annotations

import ast
import copy
import functools
import itertools
from dataclasses import dataclass, field
from pathlib import Path

from .source import blocks, solution_lines, strip

MIN_NODES = 9                  # an expression at least this large is a computation
LEAK_SHARE = 0.5               # a unit that reproduces more of a block answers it
SKIP_PARTS = ("wrong", "hidden", "__pycache__", ".git", ".pytest_cache")
_NOT_COUNTED = (ast.expr_context, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)


@dataclass(frozen=True)
class Finding:
    exercise: str              # the exercise whose solution block is reproduced
    block: str                 # that block: exercise file:line
    where: str                 # the released unit: file:line of its first piece of evidence
    kinds: tuple[str, ...]     # the evidence: "line", "code", "same", "call", "steps"
    share: float               # of the block's nodes the evidence covers
    what: str                  # one piece: the released line ~ the solution line

    @property
    def leak(self) -> bool:
        return self.share > LEAK_SHARE

    @property
    def kind(self) -> str:
        return "leak" if self.leak else "idiom"


class _Shape(ast.NodeTransformer):
    def visit_Name(self, node):
        return ast.copy_location(ast.Name("_", node.ctx), node)

    def visit_arg(self, node):
        return ast.copy_location(ast.arg("_", None), node)

    def visit_keyword(self, node):
        self.generic_visit(node)
        return node


def _size(node: ast.AST) -> int:
    return sum(1 for n in ast.walk(node) if not isinstance(n, (ast.expr_context, ast.operator,
                                                                 ast.unaryop, ast.cmpop,
                                                                 ast.boolop)))


_INT_NODES = (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp, ast.Name, ast.Load,
              ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
GRID = range(10)


def _int_expr(node: ast.AST) -> tuple[str, ...] | None:
    """The names of an integer expression with at least two operators (in order of first use),
    or None when `node` is not one."""
    ops, names = 0, []
    for n in ast.walk(node):
        if isinstance(n, ast.Constant):
            if not isinstance(n.value, int) or abs(n.value) > 1 << 16:
                return None
        elif not isinstance(n, _INT_NODES):
            return None
        if isinstance(n, (ast.BinOp, ast.UnaryOp, ast.Compare, ast.BoolOp, ast.IfExp)):
            ops += 1
        if isinstance(n, ast.Name) and n.id not in names:
            names.append(n.id)
    enough = ops >= 2 if len(names) >= 2 else ops >= 3    # one name, one parity: an idiom
    rule = any(isinstance(n, (ast.Constant, ast.Compare, ast.IfExp, ast.BitAnd, ast.BitOr,
                              ast.BitXor, ast.Mod, ast.FloorDiv, ast.LShift, ast.RShift))
               for n in ast.walk(node))
    if not rule:                      # sums and products of names alone: any formula is one
        return None
    return tuple(names) if enough and 1 <= len(names) <= 3 else None


def _evaluator(node: ast.AST, names: tuple[str, ...]):
    """A function of `names` computing `node` (only integer operators: safe to evaluate)."""
    args = ast.arguments(posonlyargs=[], args=[ast.arg(n) for n in names], kwonlyargs=[],
                         kw_defaults=[], defaults=[])
    lam = ast.fix_missing_locations(ast.Expression(ast.Lambda(args, node)))
    fn = eval(compile(lam, "<leak-scan>", "eval"), {"__builtins__": {}})  # noqa: S307 - integer ops only

    def value(*xs):
        try:
            v = fn(*xs)
        except (ArithmeticError, ValueError, TypeError):
            return None
        return int(v) if isinstance(v, bool) else v
    return value


def _answers(fn, k: int) -> tuple:
    import itertools
    return tuple(fn(*xs) for xs in itertools.product(GRID, repeat=k))


class _Flatten(ast.NodeTransformer):
    """`self.completed` -> a plain name (`self__completed`): an attribute read is a value."""

    def visit_Attribute(self, node):
        d = _dotted(node)
        if d is None:
            return self.generic_visit(node)
        return ast.copy_location(ast.Name("__".join(d), ast.Load()), node)


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else None


def _callee(node: ast.Call) -> str | None:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _parse(text: str) -> ast.AST | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _released_files(dest: Path):
    for p in sorted(dest.rglob("*")):
        rel = p.relative_to(dest)
        if p.is_file() and not any(x in SKIP_PARTS for x in rel.parts) and \
                p.stat().st_size <= 4 << 20:
            try:
                yield rel, p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue


def _counted(node: ast.AST) -> set[int]:
    """The ids of the nodes of `node`'s subtree that count (`_size`'s)."""
    return {id(n) for n in ast.walk(node) if not isinstance(n, _NOT_COUNTED)}


def _shape(node: ast.expr) -> str | None:
    try:
        return ast.dump(_Shape().visit(copy.deepcopy(node)))
    except RecursionError:
        return None


def _statement_names(tree: ast.AST) -> dict[int, tuple[str, ...]]:
    """{id of each expression node: the local names of the statement it is in} (a compound
    statement's own names, not its body's): what a piece's shape leaves out, so that one
    statement repeated on one barrier is not taken for two statements on two barriers."""
    out: dict[int, tuple[str, ...]] = {}
    for st in ast.walk(tree):
        if not isinstance(st, ast.stmt):
            continue
        parts = [c for c in ast.iter_child_nodes(st) if not isinstance(c, ast.stmt)]
        inner = [n for c in parts for n in ast.walk(c)]
        names = tuple(n.id for n in inner if isinstance(n, ast.Name))
        for n in inner:
            out[id(n)] = names
    return out


def _call_sig(node: ast.Call) -> str | None:
    """``callee.attr(kinds of the arguments)`` of an attribute call, else None."""
    if not isinstance(node.func, ast.Attribute):
        return None
    return (f"{node.func.attr}(" + ", ".join(type(a).__name__ for a in node.args)
            + "".join(f", {k.arg}=" for k in node.keywords) + ")")


def _int_exprs(tree: ast.AST) -> list[tuple[ast.AST, ast.AST, tuple[str, ...]]]:
    """(node, its flattened copy, its names) of the maximal integer expressions of `tree` (not
    the parts of a larger one); attribute reads count as names (`_Flatten`)."""
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.expr) or isinstance(node, (ast.Name, ast.Attribute,
                                                                ast.Constant)):
            continue
        try:
            flat = ast.copy_location(_Flatten().visit(ast.parse(ast.unparse(node),
                                                                 mode="eval").body), node)
        except (SyntaxError, ValueError, RecursionError):
            continue
        names = _int_expr(flat)
        if names is not None:
            out.append((node, flat, names))
    texts = [(f.lineno, ast.unparse(f)) for _, f, _ in out]
    return [x for i, x in enumerate(out)
            if not any(j != i and texts[j][0] == texts[i][0] and texts[i][1] in texts[j][1]
                       and texts[i][1] != texts[j][1] for j in range(len(out)))]


def _effects(roots) -> list[tuple[str, ast.AST]]:
    """What `roots` do, in the order it happens: each call (its callee's name) after its
    arguments, each ``yield``/``yield from``/``await`` after what it waits for."""
    out: list[tuple[str, ast.AST]] = []

    def visit(n: ast.AST) -> None:
        for c in ast.iter_child_nodes(n):
            visit(c)
        if isinstance(n, ast.Call) and _callee(n):
            out.append((_callee(n), n))
        elif isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)):
            out.append(("yield", n))
    for r in roots:
        visit(r)
    return out


def _contains(seq: tuple, part: tuple) -> bool:
    return any(seq[i:i + len(part)] == part for i in range(len(seq) - len(part) + 1))


@dataclass
class _Public:
    """What the public sources (stubs, public tests, helpers) hold: evidence of it is no leak."""
    text: str = ""
    shapes: set = field(default_factory=set)
    answers: set = field(default_factory=set)
    calls: set = field(default_factory=set)
    effects: list = field(default_factory=list)


@dataclass
class _Block:
    """One solution block: its nodes, and each piece of it the release could reproduce, with
    the nodes that piece covers and the solution's line it is on."""
    exercise: str
    where: str
    nodes: int
    pieces: dict = field(default_factory=dict)     # (kind, key) -> [(ids, line, names)]


@dataclass
class _Unit:
    """One released unit: what it holds, each with the line it is on."""
    where: str
    lines: list                                     # (line number, text)
    held: dict = field(default_factory=dict)        # (kind, key) -> [(line, names)]
    effects: tuple = ()
    first_line: int = 0


def _answer_keys(flat: ast.AST, names: tuple[str, ...], orders: bool) -> list[tuple]:
    """(count of names, answers) of an integer expression, in every order of its names (a
    solution's) or in its own (a released one's); an expression with one answer has none."""
    fn = _evaluator(flat, names)
    out = []
    perms = itertools.permutations(range(len(names))) if orders else [tuple(range(len(names)))]
    for order in perms:
        ans = _answers(lambda *xs, o=order: fn(*[xs[o.index(i)] for i in range(len(o))]),
                       len(names))
        if len(set(ans)) > 1:
            out.append((len(names), ans))
    return out


def _public(package: Path) -> _Public:
    return _public_of(tuple(strip(q.read_text(encoding="utf-8")) for q in package.rglob("*.py")
                            if not any(x in SKIP_PARTS for x in q.relative_to(package).parts)))


@functools.cache
def _public_of(texts: tuple[str, ...]) -> _Public:
    """What the public (stripped) sources hold; kept for the process, by their text, as
    `_units` is: a scan's cost is these walks, and a grader test scans one release again and
    again (with a leak planted, then without)."""
    pub = _Public()
    for stub in texts:
        tree = _parse(stub)
        if tree is None:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.expr) and _size(node) >= MIN_NODES:
                pub.shapes.add(_shape(node))
            if isinstance(node, ast.Call) and _call_sig(node):
                pub.calls.add(_call_sig(node))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                pub.effects.append(tuple(n for n, _ in _effects([node])))
        for _node, flat, names in _int_exprs(tree):
            pub.answers.update(_answer_keys(flat, names, orders=False))
    pub.text = "\n".join(texts)
    return pub


def _solution_blocks(ex: str, src: Path, rel: str, pub: _Public) -> list[_Block]:
    """The solution blocks of one exercise file, each with its pieces that the public sources
    do not hold."""
    text = src.read_text(encoding="utf-8")
    tree = _parse(text)
    if tree is None:
        return []
    lines = text.splitlines()
    distinctive = {ln for ln in solution_lines(text) if ln not in pub.text}
    out = []
    for a, b, _ in blocks(text, "SOLUTION"):
        stmts = [n for n in ast.walk(tree) if isinstance(n, ast.stmt) and a + 1 < n.lineno <= b + 1]
        if not stmts:
            continue
        nodes = set().union(*(_counted(s) for s in stmts))
        blk = _Block(ex, f"{rel}:{a + 1}", len(nodes))
        body = ast.Module(body=[s for s in stmts if not any(
            s is not t and s in ast.walk(t) for t in stmts)], type_ignores=[])

        def add(kind, key, ids, at, names=()):
            ids = set(ids) & nodes
            if ids or kind == "call":
                blk.pieces.setdefault((kind, key), []).append((ids, lines[at - 1].strip(),
                                                                names))
        names_of = _statement_names(body)
        for node in ast.walk(body):
            if isinstance(node, ast.expr) and _size(node) >= MIN_NODES:
                shape = _shape(node)
                if shape not in pub.shapes:
                    add("code", shape, _counted(node), node.lineno, names_of.get(id(node), ()))
            if isinstance(node, ast.Call) and _call_sig(node) and \
                    _call_sig(node) not in pub.calls:
                add("call", _call_sig(node), set(), node.lineno)   # evidence, no coverage
        for node, flat, names in _int_exprs(body):
            for key in _answer_keys(flat, names, orders=True):
                if key not in pub.answers:
                    add("same", key, _counted(node), node.lineno, names_of.get(id(node), ()))
        for i in range(a + 1, b):
            if lines[i].strip() in distinctive:
                add("line", lines[i].strip(), {id(n) for n in ast.walk(body)
                                               if getattr(n, "lineno", None) == i + 1
                                               and not isinstance(n, _NOT_COUNTED)}, i + 1)
        eff = _effects(body.body)
        names = tuple(n for n, _ in eff)
        if len(set(names) - {"yield"}) >= 3 and \
                not any(_contains(p, names) for p in pub.effects):
            add("steps", names, set().union(*(_counted(n) if n_ != "yield" else {id(n)}
                                              for n_, n in eff)), eff[0][1].lineno)
        if blk.pieces:
            out.append(blk)
    return out


@functools.cache
def _units(rel: Path, text: str) -> tuple[_Unit, ...]:
    """The released units of one file: each top-level function and method, the rest of the
    file's code; a file that is not Python is one unit. Kept for the process by (path, text):
    `_match` only reads them."""
    lines = text.splitlines()
    tree = _parse(text) if rel.suffix == ".py" else None
    if tree is None:
        return (_Unit(f"{rel}", list(enumerate(lines, 1)), first_line=1),)
    groups, rest = [], []
    for st in tree.body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            groups.append([st])
        elif isinstance(st, ast.ClassDef):
            for b in st.body:
                if isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    groups.append([b])
                else:
                    rest.append(b)
        else:
            rest.append(st)
    if rest:
        groups.append(rest)
    out = []
    for g in groups:
        span = sorted({i for n in g for i in range(n.lineno, n.end_lineno + 1)})
        u = _Unit(f"{rel}:{span[0]}", [(i, lines[i - 1]) for i in span], first_line=span[0])
        body = ast.Module(body=g, type_ignores=[])
        names_of = _statement_names(body)
        for node in ast.walk(body):
            if isinstance(node, ast.expr) and _size(node) >= MIN_NODES:
                u.held.setdefault(("code", _shape(node)), []).append(
                    (node.lineno, names_of.get(id(node), ())))
            if isinstance(node, ast.Call) and _call_sig(node):
                u.held.setdefault(("call", _call_sig(node)), []).append((node.lineno, ()))
        for node, flat, names in _int_exprs(body):
            for key in _answer_keys(flat, names, orders=False):
                u.held.setdefault(("same", key), []).append(
                    (node.lineno, names_of.get(id(node), ())))
        u.effects = tuple(n for n, _ in _effects(g))
        out.append(u)
    return tuple(out)


def _match(blk: _Block, u: _Unit) -> Finding | None:
    covered: set[int] = set()
    evidence = []                                   # (released line, kind, solution line)
    for (kind, key), occurrences in blk.pieces.items():
        if kind == "line":
            held = [(i, ()) for i, t in u.lines if key in t][:1]
        elif kind == "steps":
            held = [(u.first_line, ())] if _contains(u.effects, key) else []
        else:
            held = u.held.get((kind, key), [])
        # a piece the block uses on k different names (two barriers' waits) counts as often as
        # the unit uses it on different names: one barrier waited on twice answers one of them
        theirs = {}
        for at, names in held:
            theirs.setdefault(names, at)
        mine = {}
        for ids, sol, names in occurrences:
            mine.setdefault(names, []).append((ids, sol))
        for at, group in zip(theirs.values(), mine.values()):
            for ids, sol in group:
                covered |= ids
            evidence.append((at, kind, group[0][1]))
    if not evidence:
        return None
    evidence.sort()
    at, _, sol = evidence[0]
    text = dict(u.lines).get(at, "").strip()
    return Finding(blk.exercise, blk.where, f"{u.where.split(':')[0]}:{at}",
                   tuple(sorted({k for _, k, _ in evidence})), len(covered) / blk.nodes,
                   f"{text[:100]}  ~  {sol[:100]}")


def scan(dest: Path, package: Path | None = None) -> list[Finding]:
    """Each released unit of `dest` that reproduces part of a solution block of the exercises
    in `package` (the instructor's ``exercises/``, default this package's): a leak or an idiom
    (`Finding.leak`), leaks first."""
    from .runner import PACKAGE, exercises
    package = package or PACKAGE
    pub = _public(package)
    wanted: list[_Block] = []
    for ex in exercises(package):
        for src in sorted((package / ex).glob("*.py")):
            wanted += _solution_blocks(ex, src, f"{ex}/{src.name}", pub)
    found: list[Finding] = []
    for rel, text in _released_files(dest):
        for u in _units(rel, text):
            for blk in wanted:
                f = _match(blk, u)
                if f is not None:
                    found.append(f)
    return sorted(found, key=lambda f: (not f.leak, f.exercise, f.block, -f.share, f.where))


def report(findings: list[Finding]) -> str:
    """The leaks, then the idioms, one line each: the share of the block, where, what."""
    leaks = [f for f in findings if f.leak]
    idioms = [f for f in findings if not f.leak]
    out = [f"leak scan: {len(leaks)} leak(s): released code that reproduces more than "
           f"{LEAK_SHARE:.0%} of a solution block" + (":" if leaks else "")]
    out += [f"  LEAK {f.share:4.0%} of {f.block} in {f.where} ({', '.join(f.kinds)}): {f.what}"
            for f in leaks]
    if idioms:
        out.append(f"  {len(idioms)} idiom(s) shared with a solution, each at most "
                   f"{LEAK_SHARE:.0%} of its block:")
        out += [f"    {f.share:4.0%} of {f.block} in {f.where} ({', '.join(f.kinds)}): {f.what}"
                for f in idioms]
    return "\n".join(out)


__all__ = ["LEAK_SHARE", "Finding", "report", "scan"]
