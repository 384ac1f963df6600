"""The rooms and their import rules (README, "Where things live").

    sim          the model: imports nothing else of ours, reads no result file at import
    kernels      the kernels: import nothing else of ours
    records      what a measurement leaves (results/, Proton traces read back): a leaf
    instruments  what measures the kernels: imports kernels and records
    fidelity     the model against the machine: imports sim's public names and records, never
                 kernels or instruments (it reads what they wrote; it runs no kernel)
    exercises    imports only the model's public names (`sim.__all__`)

The tile table both the model and the kernels read is a data file (sim/tiles.json), not an import.

Imports are read off each file's syntax tree (absolute, relative and `import_module("...")`
with a literal name), so a rule broken anywhere in a room fails here, naming the file and line.
"""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = {"sim", "kernels", "records", "instruments", "fidelity", "exercises", "notebooks", "tests"}
ALLOWED = {
    "sim": {"sim"},
    "kernels": {"kernels"},
    "records": {"records"},
    "instruments": {"instruments", "kernels", "records"},
    "fidelity": {"fidelity", "sim", "records"},
    "exercises": {"exercises", "sim"},
}


def _package_of(path: Path, root: Path) -> list[str]:
    """Dotted package of a module file, as a list (`sim/gemm/ws.py` -> ["sim", "gemm"])."""
    return list(path.relative_to(root).with_suffix("").parts[:-1])


def imports(path: Path, root: Path = ROOT):
    """(line, module, names) for every import of `path`; relative imports resolved against its
    package, `import_module("x.y")` with a literal argument counted as an import of x.y."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, ()
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = _package_of(path, root)
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            yield node.lineno, module, tuple(a.name for a in node.names)
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
              == "import_module" and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str) and not node.args[0].value.startswith(".")):
            yield node.lineno, node.args[0].value, ()


def _private(name: str) -> bool:
    """`_x`, not a dunder such as `__main__`."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def violations(room: str, root: Path = ROOT, public: set[str] | None = None) -> list[str]:
    """Every import in `room` that its rule forbids, as "file:line: module"."""
    out = []
    for path in sorted((root / room).rglob("*.py")):
        if room == "exercises" and "wrong" in path.relative_to(root / room).parts:
            continue    # known-wrong and cheating submissions: data the grader is tested on
        for line, module, names in imports(path, root):
            top = module.split(".")[0]
            where = f"{path.relative_to(root)}:{line}: {module}"
            if top in OURS and top not in ALLOWED[room]:
                out.append(where)
            elif room == "fidelity" and top == "sim" and any(
                    _private(part) for part in module.split(".") + list(names)):
                out.append(where + f" imports {sorted(names)}: a private name of the model")
            elif room == "exercises" and top == "sim":
                if module != "sim":
                    out.append(where + " (only `from sim import <public name>`)")
                elif public is not None and not set(names) <= public:
                    out.append(where + f" imports {sorted(set(names) - public)}, not in sim.__all__")
    return out


def _public_names() -> set[str]:
    import sim
    return set(getattr(sim, "__all__", ()))


@pytest.mark.parametrize("room", sorted(ALLOWED))
def test_room_imports_follow_the_rules(room):
    assert violations(room, public=_public_names()) == []


def test_the_rules_catch_a_violation(tmp_path):
    """The checker is not vacuous: each kind of forbidden import in a throwaway tree is named."""
    for room, body in {
        "sim": "from kernels.gemm import gemm\n",
        "kernels": "import sim.hardware\n",
        "instruments": "from fidelity.compare import compare\n",
        "fidelity": "from exercises.grading import harness\n",
        "records": "from instruments import bench\n",
        "exercises": "from sim.engine import MBarrier\n",
    }.items():
        (tmp_path / room / "sub").mkdir(parents=True)
        (tmp_path / room / "sub" / "m.py").write_text(body)
        assert len(violations(room, tmp_path)) == 1, room
    (tmp_path / "kernels" / "sub" / "m.py").write_text(
        "import importlib\nimportlib.import_module('sim.trace')\n")
    assert violations("kernels", tmp_path) == ["kernels/sub/m.py:2: sim.trace"]
    (tmp_path / "exercises" / "sub" / "m.py").write_text("from sim import _secret, predict\n")
    assert "not in sim.__all__" in violations("exercises", tmp_path, public={"predict"})[0]
    for body in ("from kernels.attention import config\n", "import instruments.trace\n",
                 "from sim.predict import _settle\n", "from sim._inside import x\n"):
        (tmp_path / "fidelity" / "sub" / "m.py").write_text(body)
        assert len(violations("fidelity", tmp_path)) == 1, body
    (tmp_path / "fidelity" / "sub" / "m.py").write_text("from sim.predict import predict\n")
    assert violations("fidelity", tmp_path) == []
    (tmp_path / "sim" / "sub" / "m.py").write_text("from ..sub import x\nfrom .. import y\n")
    assert violations("sim", tmp_path) == []


def test_the_model_reads_no_result_file_at_import():
    """Importing every module of the model opens nothing under results/ (an audit hook sees
    every open)."""
    code = (
        "import sys, pkgutil, importlib\n"
        "opened = []\n"
        "sys.addaudithook(lambda ev, args: opened.append(str(args[0])) if ev == 'open' else None)\n"
        "import sim\n"
        "for m in pkgutil.walk_packages(sim.__path__, 'sim.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        f"print('\\n'.join(p for p in opened if p.startswith({str(ROOT / 'results')!r})))\n"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                       check=True)
    assert r.stdout.strip() == ""
