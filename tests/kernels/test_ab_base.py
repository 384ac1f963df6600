"""The A/B script runs only on a GPU, so a name it imports that moved breaks it only there: every
`from X import Y` in it (the ones inside its functions included) must resolve here."""
import ast
import importlib
from pathlib import Path

import pytest

SCRIPT = Path(__file__).with_name("ab_base.py")


def imported(path: Path) -> list[tuple[str, str]]:
    return [(n.module, a.name) for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.ImportFrom) and n.module and n.level == 0 for a in n.names]


def resolves(module: str, name: str) -> bool:
    """`from module import name`: an attribute of the module, or a submodule of the package."""
    if hasattr(importlib.import_module(module), name):
        return True
    try:
        importlib.import_module(f"{module}.{name}")
    except ModuleNotFoundError:
        return False
    return True


@pytest.mark.parametrize("module,name", imported(SCRIPT), ids=lambda x: str(x))
def test_every_imported_name_exists(module, name):
    pytest.importorskip("torch")
    assert resolves(module, name), f"{module} has no {name}"


def test_the_check_can_fail(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    from instruments.bench import environment\n")
    (module, name), = imported(bad)
    assert not resolves(module, name)


def test_settings_of_the_grid_and_of_tab_2():
    """`--seqlens` takes the grid's shapes (B·S 16K, H·d 2048) at the default launch; without
    it FA3 tab. 2's B 4, H 16, S 8448 at every head dim, non-causal and causal."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("ab_base", SCRIPT)
    ab = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ab)
    assert ab.settings("64,128", "1024,4096", causal_only=True) == [
        (64, (16, 32, 1024), True), (64, (4, 32, 4096), True),
        (128, (16, 16, 1024), True), (128, (4, 16, 4096), True)]
    assert ab.settings("256") == [(256, (4, 16, 8448), False), (256, (4, 16, 8448), True)]
