"""Every chapter runs top to bottom on a CPU, and its .ipynb is the stripped twin of its .py."""
import time
from pathlib import Path

import jupytext
import pytest
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))


def test_one_notebook_per_chapter():
    assert [p.name[:2] for p in CHAPTERS] == [f"{n:02d}" for n in range(7)]


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_paired_notebook_in_sync_and_stripped(py):
    ipynb = py.with_suffix(".ipynb")
    assert ipynb.exists(), f"{ipynb.name} missing: run `jupytext --sync {py.name}`"
    a, b = jupytext.read(py), jupytext.read(ipynb)
    assert [(c.cell_type, c.source) for c in a.cells] == [(c.cell_type, c.source) for c in b.cells], \
        f"{py.name} and {ipynb.name} differ: run `jupytext --sync {py.name}`"
    assert all(not c.get("outputs") for c in b.cells if c.cell_type == "code"), \
        f"{ipynb.name} carries outputs: strip them"


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(py):
    nb = jupytext.read(py)
    t0 = time.perf_counter()
    NotebookClient(nb, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    print(f"{py.name}: {time.perf_counter() - t0:.1f} s")
