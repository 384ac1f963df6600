"""Does the release answer its own exercises? A scan of the *whole* released tree (``sim/``,
``kernels/``, notebooks, docs, not only ``exercises/``) for each solution.

Two kinds of finding, each naming the released file and line and the solution it answers:

* ``line``: a solution line (``source.solution_lines``: inside ``### BEGIN/END SOLUTION``, at least
  12 characters, not a comment) found verbatim in a released file, where the stripped exercise
  sources do not hold it anyway;
* ``code``: the same computation under other names. Every expression of a solution block with at
  least `MIN_NODES` syntax nodes is reduced to a shape (local names become ``_``; attribute names,
  constants and operators stay), and every released ``.py`` file is searched for the same shape:
  ``((it // STAGES) & 1) ^ 1`` in a solution finds ``((i // stages) & 1) ^ 1`` in a ring helper;
  ``gl.warp_specialize([...], [PRODUCER_WARPS], [PRODUCER_REGS])`` finds a kernel's own call.
  Shapes that the stripped sources, the public tests or the stubs hold anyway are not findings;
* ``call``: a call the solution makes and the stubs do not, found with the same callee, the same
  number of arguments and the same kind of each (``gl.warp_specialize(<list>, <list>, <list>)``);
* ``steps``: the solution's order of steps (the names it calls, three or more, in order), found
  in that order in one released function (``wait_turn, qk, pass_turn``: a schedule's consumer);
* ``same``: a function that computes the same answers. Each integer expression of a solution
  (arithmetic, bitwise, comparisons, ``x if c else y`` over names and integer constants, with at
  least two operators, three with a single name: ``(j // stages) & 1``, ``(k & 1) ^ 1 if w == 0 else k & 1``; a constant, a bitwise, modular or
  comparison operator in it: sums and products of names alone match any formula) is evaluated
  on every assignment of 0..9 to its names, and so is every such expression in the release, its
  names matched to the solution's in every order: ``(k & 1) ^ (WG == 0)`` gives the same answers
  as the ``w == 0`` form above, whatever it is called.

`scan(dest)` returns the findings; `report(findings)` prints them grouped by exercise.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from .source import blocks, solution_lines, strip

MIN_NODES = 9                  # an expression at least this large is a computation, not an idiom
SKIP_PARTS = ("wrong", "hidden", "__pycache__", ".git", ".pytest_cache")


@dataclass(frozen=True)
class Finding:
    exercise: str              # the exercise whose solution is answered (its folder name)
    kind: str                  # "line" | "code"
    where: str                 # released file:line
    what: str                  # the solution line, or the expression found


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


def _shapes(tree: ast.AST) -> dict[str, int]:
    """{shape of every expression with >= MIN_NODES nodes: its first line}."""
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.expr) and _size(node) >= MIN_NODES:
            try:
                shape = ast.dump(_Shape().visit(ast.parse(ast.unparse(node), mode="eval").body))
            except (SyntaxError, ValueError, RecursionError):
                continue
            out.setdefault(shape, getattr(node, "lineno", 0))
    return out


def _calls(tree: ast.AST) -> dict[str, int]:
    """{callee.attr(kinds of the arguments): first line} of the attribute calls in `tree`."""
    out: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            sig = (f"{node.func.attr}(" + ", ".join(type(a).__name__ for a in node.args)
                   + "".join(f", {k.arg}=" for k in node.keywords) + ")")
            out.setdefault(sig, node.lineno)
    return out


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


def _int_exprs(tree: ast.AST) -> list[tuple[ast.AST, tuple[str, ...]]]:
    """The maximal integer expressions of `tree` (not the parts of a larger one); attribute
    reads count as names."""
    out, inside = [], set()
    for node in ast.walk(tree):
        if id(node) in inside or not isinstance(node, ast.expr) or \
                isinstance(node, (ast.Name, ast.Attribute, ast.Constant)):
            continue
        try:
            node = ast.copy_location(_Flatten().visit(ast.parse(ast.unparse(node),
                                                                 mode="eval").body), node)
        except (SyntaxError, ValueError, RecursionError):
            continue
        names = _int_expr(node)
        if names is not None:
            out.append((node, names))
    return _outermost(out)


def _outermost(found):
    """Drop the expressions that lie inside another one found (same line, shorter text)."""
    keep = []
    texts = [(n.lineno, ast.unparse(n)) for n, _ in found]
    for i, (n, names) in enumerate(found):
        line, text = texts[i]
        if any(j != i and texts[j][0] == line and text in texts[j][1] and text != texts[j][1]
               for j in range(len(found))):
            continue
        keep.append((n, names))
    return keep


def _callee(node: ast.Call) -> str | None:
    f = node.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else None


def _steps(nodes) -> tuple[str, ...]:
    """The names called among `nodes`, in source order."""
    calls = sorted((n for n in nodes if isinstance(n, ast.Call) and _callee(n)),
                   key=lambda n: (n.lineno, n.col_offset))
    return tuple(_callee(n) for n in calls)


def _function_steps(tree: ast.AST) -> list[tuple[tuple[str, ...], int]]:
    return [(_steps(ast.walk(f)), f.lineno) for f in ast.walk(tree)
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]


def _contains(seq: tuple, part: tuple) -> bool:
    return any(seq[i:i + len(part)] == part for i in range(len(seq) - len(part) + 1))


def _parse(text: str) -> ast.AST | None:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None


def _solution_shapes(text: str) -> tuple[dict[str, str], dict[str, str]]:
    """({shape: the solution's line}, {call signature: the solution's line}) of the expressions
    inside solution blocks."""
    lines = text.splitlines()
    tree = _parse(text)
    if tree is None:
        return {}, {}
    spans = [(a + 1, b + 1) for a, b, _ in blocks(text, "SOLUTION")]
    out, calls = {}, {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.expr) and any(a < node.lineno <= b for a, b in spans)):
            continue
        if _size(node) >= MIN_NODES:
            shape = next(iter(_shapes(ast.Expression(node))), None)
            if shape:
                out.setdefault(shape, lines[node.lineno - 1].strip())
        if isinstance(node, ast.Call):
            for sig in _calls(ast.Expression(node)):
                calls.setdefault(sig, lines[node.lineno - 1].strip())
                break
    return out, calls


def _solution_steps(text: str) -> dict[tuple, str]:
    """{the names a solution block calls, in order (three or more): its first line}."""
    tree = _parse(text)
    if tree is None:
        return {}
    lines = text.splitlines()
    out = {}
    for a, b, _ in blocks(text, "SOLUTION"):
        nodes = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
                 and a + 1 < n.lineno <= b + 1]
        steps = _steps(nodes)
        if len(steps) >= 3:
            out[steps] = lines[a + 1].strip()
    return out


def _solution_answers(text: str) -> dict[tuple, str]:
    """{answers of a solution's integer expression, over its names in every order: its line}."""
    import itertools
    tree = _parse(text)
    if tree is None:
        return {}
    lines = text.splitlines()
    spans = [(a + 1, b + 1) for a, b, _ in blocks(text, "SOLUTION")]
    out = {}
    for node, names in _int_exprs(tree):
        if not any(a < node.lineno <= b for a, b in spans):
            continue
        fn = _evaluator(node, names)
        for order in itertools.permutations(range(len(names))):
            ans = _answers(lambda *xs, o=order: fn(*[xs[o.index(i)] for i in range(len(o))]),
                           len(names))
            if len(set(ans)) > 1:
                out.setdefault((len(names), ans), lines[node.lineno - 1].strip())
    return out


def _released_files(dest: Path):
    for p in sorted(dest.rglob("*")):
        rel = p.relative_to(dest)
        if p.is_file() and not any(x in SKIP_PARTS for x in rel.parts) and \
                p.stat().st_size <= 4 << 20:
            try:
                yield rel, p.read_text(encoding="utf-8")
            except (UnicodeDecodeError, OSError):
                continue


def scan(dest: Path, package: Path | None = None) -> list[Finding]:
    """Findings in the released tree `dest` against the solutions of the exercises in
    `package` (the instructor's ``exercises/``, default this package's)."""
    from .runner import PACKAGE, exercises
    package = package or PACKAGE
    public_text, public_shapes, public_calls, public_answers = [], set(), set(), set()
    public_steps: set = set()
    for q in package.rglob("*.py"):
        if any(x in SKIP_PARTS for x in q.relative_to(package).parts):
            continue
        stub = strip(q.read_text(encoding="utf-8"))
        public_text.append(stub)
        tree = _parse(stub)
        if tree is not None:
            public_shapes |= set(_shapes(tree))
            public_calls |= set(_calls(tree))
            public_steps |= {st for st, _ in _function_steps(tree)}
            public_answers |= {(len(nm), _answers(_evaluator(nd, nm), len(nm)))
                               for nd, nm in _int_exprs(tree)}
    public = "\n".join(public_text)
    wanted = []                                     # (exercise, lines, shapes, calls)
    for ex in exercises(package):
        for src in sorted((package / ex).glob("*.py")):
            text = src.read_text(encoding="utf-8")
            lines = [ln for ln in solution_lines(text) if ln not in public]
            sol_shapes, sol_calls = _solution_shapes(text)
            shapes = {s: ln for s, ln in sol_shapes.items() if s not in public_shapes}
            calls = {c: ln for c, ln in sol_calls.items() if c not in public_calls}
            answers = {a: ln for a, ln in _solution_answers(text).items()
                       if a not in public_answers}
            steps = {st: ln for st, ln in _solution_steps(text).items()
                     if not any(_contains(p, st) for p in public_steps)}
            if lines or shapes or calls or answers or steps:
                wanted.append((ex, lines, shapes, calls, answers, steps))
    found: list[Finding] = []
    for rel, text in _released_files(dest):
        tree = _parse(text) if rel.suffix == ".py" else None
        shapes = _shapes(tree) if tree is not None else {}
        calls = _calls(tree) if tree is not None else {}
        answers = {}
        for node, names in (_int_exprs(tree) if tree is not None else []):
            answers.setdefault((len(names), _answers(_evaluator(node, names), len(names))),
                               node.lineno)
        file_lines = text.splitlines()
        fsteps = _function_steps(tree) if tree is not None else []
        for ex, lines, sol_shapes, sol_calls, sol_answers, sol_steps in wanted:
            for st, ln in sol_steps.items():
                for seq, at in fsteps:
                    if _contains(seq, st):
                        found.append(Finding(ex, "steps", f"{rel}:{at}",
                                             f"{', '.join(st)}  ~  {ln[:100]}"))
            for key, ln in sol_answers.items():
                if key in answers:
                    at = answers[key]
                    found.append(Finding(ex, "same", f"{rel}:{at}",
                                         f"{file_lines[at - 1].strip()[:100]}  ~  {ln[:100]}"))
            for sig, ln in sol_calls.items():
                if sig in calls:
                    found.append(Finding(ex, "call", f"{rel}:{calls[sig]}", f"{sig}  ~  {ln[:100]}"))
            for ln in lines:
                for i, have in enumerate(file_lines):
                    if ln in have:
                        found.append(Finding(ex, "line", f"{rel}:{i + 1}", ln))
            for shape, ln in sol_shapes.items():
                if shape in shapes:
                    at = shapes[shape]
                    found.append(Finding(ex, "code", f"{rel}:{at}",
                                         f"{file_lines[at - 1].strip()[:100]}  ~  {ln[:100]}"))
    return sorted(set(found), key=lambda f: (f.exercise, f.where, f.kind, f.what))


def report(findings: list[Finding]) -> str:
    """The findings grouped by exercise, one line each."""
    if not findings:
        return "leak scan: no released file answers an exercise"
    out = [f"leak scan: {len(findings)} place(s) in the release answer an exercise"]
    for ex in sorted({f.exercise for f in findings}):
        mine = [f for f in findings if f.exercise == ex]
        out.append(f"  {ex}: {len(mine)}")
        out += [f"    {f.kind:<4} {f.where}: {f.what}" for f in mine]
    return "\n".join(out)


__all__ = ["Finding", "report", "scan"]
