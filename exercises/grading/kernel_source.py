"""A kernel file as plain data: the grader keeps only what it compiles (or interprets) itself.

A submission that is a kernel (a Gluon or ``tl`` file) is never imported where the grader
compiles, launches or interprets it. `kernel_module(text)` reads the file's source and keeps:

* imports of Triton's own modules (``triton``, ``triton.language``, ``triton.experimental.gluon``
  and below) and of ``math``;
* constants: ``NAME = <number, string, tuple of them, arithmetic on earlier constants>`` and
  ``NAME = gl.constexpr(<constant>)``;
* functions decorated exactly ``@triton.jit``, ``@gluon.jit`` or ``@gluon.constexpr_function``,
  whose bodies reach only their own locals, the kept names, a few builtins (``range``, ``min``,
  ``float`` ...) and Triton's *language* (``tl.*``, ``gl.*``, ``triton.cdiv``: every attribute
  path is resolved here and must stay inside the language's modules and end at something they
  define — ``tl.core.builtins.exec`` or ``tl.core.knobs.os`` leave them); no name or
  attribute beginning with ``_``, no ``.handle`` (the interpreter's numpy buffers), no import,
  no nested function, class, lambda, ``global`` or ``nonlocal``.

Everything else (host code, module-level statements, other decorators) is dropped: the blank
lines left in its place keep the line numbers of the original in every compiler message. A kept
statement that breaks a rule is refused (`KernelRefused`, naming the line and the rule), so no
code of the submission runs at import in the grader's process: a module-level rebinding of the
grader's compile helper, of ``torch.full``, of the interpreter, or a class posing as a
``triton.runtime.jit`` object is simply not there. Under the interpreter a ``tl`` kernel's body
does run as Python; the name rules above keep it to Triton's language.
"""
from __future__ import annotations

import ast

ALLOWED_MODULES = ("triton", "triton.language", "triton.experimental", "math")
LANGUAGE = ("triton.language.", "triton.experimental.gluon.language.", "math.")
LANGUAGE_NAMES = {"triton.cdiv", "triton.next_power_of_2"}
# the modules a kernel's attribute path may pass through: Triton's language and `math` (a path
# such as tl.core.builtins.exec or tl.core.knobs.os starts in the language and leaves it)
LANGUAGE_MODULES = ("triton.language", "triton.experimental.gluon.language", "math")
PLAIN_VALUES = (int, float, str, bool, type(None))
DECORATORS = {"triton.jit", "triton.experimental.gluon.jit",
              "triton.experimental.gluon.constexpr_function"}
BUILTINS = {"range", "min", "max", "abs", "int", "float", "bool", "len", "tuple", "list", "zip",
            "enumerate", "isinstance", "True", "False", "None", "print", "NotImplementedError"}
FORBIDDEN_ATTRS = {"handle"}
_NODES_REFUSED = (ast.Import, ast.ImportFrom, ast.Global, ast.Nonlocal, ast.Lambda, ast.ClassDef,
                  ast.FunctionDef, ast.AsyncFunctionDef, ast.Await, ast.Yield, ast.YieldFrom,
                  ast.Try, ast.With, ast.AsyncWith, ast.Delete, ast.NamedExpr)


class KernelRefused(ValueError):
    """A kernel file the grader will not compile (the message names the line and the rule)."""


def _refuse(node: ast.AST, why: str):
    raise KernelRefused(f"line {getattr(node, 'lineno', '?')}: {why} (the grader compiles only "
                        "the kernel: @triton.jit / @gluon.jit functions, constants and Triton "
                        "imports)")


def _dotted(node: ast.AST) -> list[str] | None:
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


class _Module:
    def __init__(self):
        self.modules: dict[str, str] = {}       # alias -> module path
        self.constants: set[str] = set()
        self.functions: set[str] = set()
        self.values: dict[str, object] = {}

    def path(self, node: ast.AST) -> str | None:
        """The dotted module path of `alias.attr...`, if it starts at an imported module."""
        d = _dotted(node)
        if d is None or d[0] not in self.modules:
            return None
        return ".".join([self.modules[d[0]], *d[1:]])


def _within(name: str, modules: tuple[str, ...]) -> bool:
    """Whether dotted `name` is one of `modules` or below one."""
    return any(name == m or name.startswith(m + ".") for m in modules)


def _import(node, mod: _Module) -> None:
    if isinstance(node, ast.Import):
        for a in node.names:
            if not _within(a.name, ALLOWED_MODULES):
                _refuse(node, f"import of {a.name!r}")
            if a.asname:
                mod.modules[a.asname] = a.name
            else:
                mod.modules[a.name.split(".")[0]] = a.name.split(".")[0]
        return
    if node.level or not node.module or not _within(node.module, ALLOWED_MODULES):
        _refuse(node, f"import from {node.module!r}")
    for a in node.names:
        if a.name == "*":
            _refuse(node, "import *")
        mod.modules[a.asname or a.name] = f"{node.module}.{a.name}"


def _constant(node: ast.AST, mod: _Module):
    """The value of a constant expression (numbers, strings, tuples, arithmetic, earlier
    constants, `gl.constexpr(c)`), or raise KernelRefused."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if isinstance(node, ast.Name) and node.id in mod.values:
        return mod.values[node.id]
    if isinstance(node, (ast.Tuple, ast.List)):
        return tuple(_constant(e, mod) for e in node.elts)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _constant(node.operand, mod)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub, ast.Mult,
                                                            ast.FloorDiv, ast.Mod, ast.Pow,
                                                            ast.Div)):
        a, b = _constant(node.left, mod), _constant(node.right, mod)
        if not all(isinstance(x, (int, float)) for x in (a, b)) or \
                (isinstance(node.op, ast.Pow) and abs(b) > 64):
            _refuse(node, "arithmetic on something that is not a small number")
        expr = ast.fix_missing_locations(
            ast.Expression(ast.BinOp(ast.Constant(a), node.op, ast.Constant(b))))
        return eval(compile(expr, "<constant>", "eval"))  # noqa: S307 - two numbers
    if isinstance(node, ast.Call) and not node.keywords and len(node.args) == 1 and \
            mod.path(node.func) in ("triton.language.constexpr",
                                    "triton.experimental.gluon.language.constexpr"):
        return _constant(node.args[0], mod)
    _refuse(node, "a module-level value that is not a constant")


def _resolve(path: str) -> list:
    """The objects along a dotted path from its top module (Triton imported here, in the
    grader's process: the path is read, never the submission's code run)."""
    import importlib

    parts = path.split(".")
    obj, chain = importlib.import_module(parts[0]), []
    chain.append(obj)
    for i, part in enumerate(parts[1:], 1):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            try:
                obj = importlib.import_module(".".join(parts[:i + 1]))
            except ImportError:
                raise LookupError(path) from None
        chain.append(obj)
    return chain


def _check_language_path(node: ast.Attribute, path: str, as_root: bool) -> None:
    """Refuse a language path that leaves Triton's language: through a module that is not one
    of LANGUAGE_MODULES, to a module used as a value, or to an object defined elsewhere."""
    import types

    try:
        chain = _resolve(path)
    except LookupError:
        _refuse(node, f"{path} is not in Triton's language")
    except ImportError:
        _refuse(node, f"{path}: Triton is needed to check a kernel's names")
    parts = path.split(".")
    for i, obj in enumerate(chain):
        prefix = ".".join(parts[:i + 1])
        if isinstance(obj, types.ModuleType) and not _within(obj.__name__, LANGUAGE_MODULES) and \
                not any(m.startswith(prefix + ".") for m in LANGUAGE_MODULES):
            _refuse(node, f"{prefix} is the module {obj.__name__!r}, not Triton's language")
    last = chain[-1]
    if isinstance(last, types.ModuleType):
        if not as_root:
            _refuse(node, f"the module {path!r} used as a value")
        return
    owner = getattr(last, "__module__", None) or type(last).__module__
    if path in LANGUAGE_NAMES or isinstance(last, PLAIN_VALUES) or \
            (isinstance(owner, str) and _within(owner, LANGUAGE_MODULES)):
        return
    _refuse(node, f"{path} is defined in {owner!r}, not in Triton's language")


def _check_annotation(node, mod: _Module) -> None:
    if node is None:
        return
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return
    p = mod.path(node)
    if p is None or not (p.startswith(LANGUAGE) or p in LANGUAGE_NAMES):
        _refuse(node, "an annotation that is not a Triton type (e.g. tl.constexpr)")


def _check_function(fn: ast.FunctionDef, mod: _Module) -> None:
    for d in fn.decorator_list:
        if mod.path(d) not in DECORATORS:
            _refuse(d, "a decorator other than @triton.jit, @gluon.jit, @gluon.constexpr_function")
    if len(fn.decorator_list) != 1:
        _refuse(fn, f"function {fn.name!r} must carry exactly one Triton decorator")
    args = fn.args
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    if args.vararg or args.kwarg:
        _refuse(fn, "*args / **kwargs in a kernel")
    for a in (*args.posonlyargs, *args.args, *args.kwonlyargs):
        _check_annotation(a.annotation, mod)
    for default in (*args.defaults, *[d for d in args.kw_defaults if d is not None]):
        _constant(default, mod)
    _check_annotation(fn.returns, mod)
    local = set(params)
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            local.add(node.id)
        elif isinstance(node, ast.arg):
            local.add(node.arg)
    known = local | mod.constants | mod.functions | set(mod.modules) | BUILTINS
    roots = {id(n.value) for n in ast.walk(ast.Module(body=fn.body, type_ignores=[]))
             if isinstance(n, ast.Attribute)}
    for stmt in fn.body:
        for node in ast.walk(stmt):
            if isinstance(node, _NODES_REFUSED):
                _refuse(node, f"{type(node).__name__.lower()} inside a kernel")
            if isinstance(node, ast.Name):
                if node.id.startswith("_"):
                    _refuse(node, f"the name {node.id!r} (names beginning with '_')")
                if node.id not in known:
                    _refuse(node, f"the name {node.id!r}: not a local, a constant or function of "
                            "this file, Triton's language or an allowed builtin")
                if node.id in mod.modules and isinstance(node.ctx, ast.Store):
                    _refuse(node, f"assigning to the module name {node.id!r}")
            if isinstance(node, ast.Attribute):
                if node.attr.startswith("_") or node.attr in FORBIDDEN_ATTRS:
                    _refuse(node, f"the attribute {node.attr!r}")
                p = mod.path(node)
                root = _dotted(node)
                if p is not None and root is not None and \
                        not (p.startswith(LANGUAGE) or p in LANGUAGE_NAMES
                             or any(p.startswith(n + ".") for n in LANGUAGE_NAMES)):
                    _refuse(node, f"{'.'.join(root)} ({p}) is not Triton's language")
                if p is not None:
                    _check_language_path(node, p, id(node) in roots)
    # a bare module name used as a value (not as the root of tl.xxx) would hand out the module
    for node in ast.walk(ast.Module(body=fn.body, type_ignores=[])):
        if isinstance(node, ast.Name) and node.id in mod.modules and id(node) not in roots:
            p = mod.modules[node.id]
            if not (p.startswith(LANGUAGE) or p in LANGUAGE_NAMES):
                _refuse(node, f"the module {node.id!r} used as a value")


def kernel_module(text: str, filename: str = "<submission>") -> str:
    """The kept part of a kernel file (see the module docstring), line numbers unchanged;
    raises `KernelRefused` (or SyntaxError) for a kept statement that breaks a rule."""
    tree = ast.parse(text, filename)
    lines = text.splitlines()
    keep = [""] * len(lines)
    mod = _Module()

    def take(node):
        start = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]])
        for i in range(start - 1, node.end_lineno):
            keep[i] = lines[i]

    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            take(node)                                  # the docstring
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                continue
            try:
                _import(node, mod)
            except KernelRefused:
                continue                                # host code's import (torch ...): dropped
            take(node)
        elif isinstance(node, ast.Assign) and all(isinstance(t, (ast.Name, ast.Tuple))
                                                   for t in node.targets):
            try:
                value = _constant(node.value, mod)
            except KernelRefused:
                continue                                # not a constant: host code, dropped
            names = []
            for t in node.targets:
                if isinstance(t, ast.Name):
                    names.append((t.id, value))
                elif isinstance(value, tuple) and len(value) == len(t.elts) and \
                        all(isinstance(e, ast.Name) for e in t.elts):
                    names += [(e.id, v) for e, v in zip(t.elts, value)]
                else:
                    names = []
                    break
            if not names or any(n.startswith("_") or n in mod.modules for n, _ in names):
                continue
            for n, v in names:
                mod.constants.add(n)
                mod.values[n] = v
            take(node)
        elif isinstance(node, ast.FunctionDef) and any(
                mod.path(d) in DECORATORS for d in node.decorator_list):
            if node.name.startswith("_") or node.name in mod.modules:
                _refuse(node, f"a kernel function named {node.name!r}")
            mod.functions.add(node.name)
            take(node)
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in mod.functions:
            _check_function(node, mod)
    src = "\n".join(keep) + "\n"
    ast.parse(src, filename)                            # what is kept still parses
    return src


__all__ = ["KernelRefused", "kernel_module"]
