"""Every chapter runs top to bottom on a CPU with the inline backend, and every figure cell draws.

The chapters are percent-format `.py` files and nothing else (`notebooks/jupytext.toml`): no
`.ipynb` twin is tracked, and a save from JupyterLab reproduces the file byte for byte.

**Which cells must draw.** A *figure cell* is a code cell that, when it runs, calls a drawing
function: one named in `DRAWERS` (`gantt(`, `ablation(`, `utilization_bars(`, `plt.subplots(`,
`figure(`, `.plot(`, `explore(`, `explore_options(`, ...; as a bare name or as an attribute,
`plt.subplots`), or a function the chapter itself defines (in any cell) whose body calls one.
Calls written inside a `def`, `lambda` or `class` count only where that function is called: the
cell that defines `timeline` and then calls `timeline("sequential")` is a figure cell, a cell that
only defines a drawing function is not. Every figure cell must leave at least one `image/png` in its outputs
(for `explore(...)` and `explore_options(...)`: in the output widget its sliders redraw). A
chapter's figure cell that draws only when committed results exist is still a figure cell: the
results are committed.
tests/test_lab_browser.py applies the same rule to the images JupyterLab renders.
"""
from __future__ import annotations

import ast
import difflib
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import jupytext
import nbformat
import pytest
from jupytext.config import load_jupytext_config
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))
sys.path.insert(0, str(NOTEBOOKS))
import course  # noqa: E402

DRAWERS = frozenset({
    "gantt", "ablation", "utilization_bars", "lane_rows",      # sim.plot, fidelity.lanes
    "figure", "subplots", "subplot", "subplot_mosaic",         # a new matplotlib figure
    "plot", "bar", "barh", "scatter", "imshow", "hist", "fill_between", "stackplot",
    "explore", "explore_options",                              # course: a figure per slider value
})
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"


# --- which cells draw -------------------------------------------------------------------------

def _calls(node: ast.AST, into_defs: bool) -> set[str]:
    """Names called under `node` (`f(...)` -> f, `a.b.f(...)` -> f); calls inside nested
    def/lambda/class bodies only if `into_defs`."""
    found: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Call):
            f = n.func
            if isinstance(f, ast.Name):
                found.add(f.id)
            elif isinstance(f, ast.Attribute):
                found.add(f.attr)
        for child in ast.iter_child_nodes(n):
            if not into_defs and isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                    ast.Lambda, ast.ClassDef)):
                # decorators and default values still run where the def stands
                if not isinstance(child, ast.Lambda):
                    stack.extend(child.decorator_list)
                if not isinstance(child, ast.ClassDef):
                    stack.extend(child.args.defaults + [d for d in child.args.kw_defaults if d])
                continue
            stack.append(child)
    return found


def _parse(source: str) -> ast.Module:
    # IPython magics and shell escapes are not Python: blank them out before parsing.
    return ast.parse(re.sub(r"(?m)^\s*[%!].*$", "", source))


def figure_cells(nb) -> list[int]:
    """Indices (into nb.cells) of the code cells that must draw, by the rule in the docstring."""
    code = [(i, _parse(c.source)) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    defs = {d.name: d for _, tree in code for d in ast.walk(tree)
            if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef))}
    drawers = set(DRAWERS)
    while True:  # a chapter function draws if it calls a drawer, or a chapter function that does
        more = {name for name, d in defs.items()
                if name not in drawers and _calls(d, into_defs=True) & drawers}
        if not more:
            break
        drawers |= more
    return [i for i, tree in code if _calls(tree, into_defs=False) & drawers]


# --- which cells drew -------------------------------------------------------------------------

def _widget_images(model_id: str, state: dict, seen: set[str]) -> int:
    """image/png outputs inside widget `model_id` and its children (an Output widget's outputs)."""
    if model_id in seen or model_id not in state:
        return 0
    seen.add(model_id)
    s = state[model_id].get("state", {})
    n = sum(_output_images(o, state, seen) for o in s.get("outputs", []))
    for ref in s.get("children", []):
        if isinstance(ref, str) and ref.startswith("IPY_MODEL_"):
            n += _widget_images(ref[len("IPY_MODEL_"):], state, seen)
    return n


def _output_images(out: dict, state: dict, seen: set[str]) -> int:
    data = out.get("data", {})
    n = int("image/png" in data)
    if WIDGET_VIEW in data:
        n += _widget_images(data[WIDGET_VIEW]["model_id"], state, seen)
    return n


def images_per_cell(nb) -> dict[int, int]:
    """For each code cell of an executed notebook, how many image/png outputs it produced,
    counting those inside its widgets (nbclient keeps an Output widget's outputs in the
    notebook's widget state, not in the cell)."""
    state = nb.metadata.get("widgets", {}).get(WIDGET_STATE, {}).get("state", {})
    return {i: sum(_output_images(o, state, set()) for o in c.get("outputs", []))
            for i, c in enumerate(nb.cells) if c.cell_type == "code"}


def figures_without_images(nb) -> list[str]:
    """The figure cells of an executed notebook that produced no image, as readable lines."""
    images = images_per_cell(nb)
    return [f"cell {i} drew no image: {nb.cells[i].source.splitlines()[0][:70]!r}"
            for i in figure_cells(nb) if images[i] == 0]


def wide_lines(nb, width: int) -> list[str]:
    """The printed lines of an executed notebook wider than `width` characters, as readable lines:
    its stdout and stderr, and results shown as plain text only (a Markdown sentence reflows to
    the page; a printed table does not, Lab wraps it)."""
    out = []
    for i, c in enumerate(nb.cells):
        for o in c.get("outputs", []):
            if o.get("output_type") == "stream":
                text = o.get("text", "")
            elif set(o.get("data", {})) == {"text/plain"}:
                text = o["data"]["text/plain"]
            else:
                continue
            out += [f"cell {i}, {len(line)} > {width}: {line[:70]!r}..."
                    for line in text.splitlines() if len(line) > width]
    return out


def kernel_env() -> dict[str, str]:
    """The kernel's environment: pytest's own, less MPLBACKEND (tasks.py sets Agg for pytest),
    so the kernel falls back to the inline backend as it does under `python3 tasks.py lab`."""
    return {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}


def execute(nb, env: dict[str, str], timeout: int = 300):
    NotebookClient(nb, timeout=timeout, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute(env=env)
    return nb


# --- the tests --------------------------------------------------------------------------------

def test_one_notebook_per_chapter():
    assert [p.name[:2] for p in CHAPTERS] == [f"{n:02d}" for n in range(7)]


def test_no_ipynb_tracked_in_notebooks():
    import subprocess
    tracked = subprocess.run(["git", "ls-files", "notebooks/*.ipynb"], cwd=ROOT, check=True,
                             capture_output=True, text=True).stdout.split()
    assert not tracked, f"the .py chapters are the only source: git rm {' '.join(tracked)}"


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_a_save_rewrites_nothing(py):
    """What JupyterLab writes when a student runs the chapter and saves it (jupytext with
    notebooks/jupytext.toml, the running python3 kernel's kernelspec, widget state, cell
    metadata and outputs in the notebook) is the chapter's own bytes: its header holds the
    kernelspec only (no pairing, no jupytext version), its cells no metadata."""
    from jupyter_client.kernelspec import KernelSpecManager

    text = py.read_text()
    config = load_jupytext_config(str(NOTEBOOKS))
    assert config is not None and not any(config.formats or []), \
        "notebooks/jupytext.toml must exist and pair nothing (the .py is the only source)"
    header = text.split("\n# ---\n", 1)[0] if text.startswith("# ---\n") else ""
    assert "jupytext:" not in header and "formats:" not in header, \
        f"{py.name}'s header names jupytext settings a save rewrites: keep only the kernelspec"
    spec = KernelSpecManager().get_kernel_spec("python3")
    nb = jupytext.read(py)
    nb.metadata["kernelspec"] = {"display_name": spec.display_name, "language": spec.language,
                                 "name": "python3"}
    nb.metadata["language_info"] = {"name": "python", "version": "3.11.2"}
    nb.metadata["widgets"] = {WIDGET_STATE: {"state": {}, "version_major": 2}}
    for c in nb.cells:
        c.metadata.update(trusted=True, scrolled=True, tags=["student"])
        if c.cell_type == "code":
            c.outputs = [nbformat.v4.new_output("stream", text="a student's output\n")]
            c.execution_count = 1
    saved = jupytext.writes(nb, fmt="py:percent", config=config)
    assert saved == text, f"a save from JupyterLab would rewrite {py.name}:\n" + "".join(
        difflib.unified_diff(text.splitlines(True), saved.splitlines(True), n=0))[:2000]


def test_image_counter_can_fail():
    """Under MPLBACKEND=Agg a figure cell draws nothing visible: the counter must say so."""
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt"),
        nbformat.v4.new_code_cell("def line(ax):\n    ax.plot([0, 1], [1, 0])"),
        nbformat.v4.new_code_cell("fig, ax = plt.subplots(figsize=(2, 2))\nline(ax)"),
    ])
    assert figure_cells(nb) == [2]
    agg = execute(nbformat.from_dict(nb), dict(kernel_env(), MPLBACKEND="Agg"), timeout=60)
    assert figures_without_images(agg) == ["cell 2 drew no image: 'fig, ax = plt.subplots(figsize=(2, 2))'"]
    inline = execute(nbformat.from_dict(nb), kernel_env(), timeout=60)
    assert figures_without_images(inline) == []


def test_wide_line_finder_can_fail():
    """A printed line one character over the width is found, in a stream and in a plain-text
    result; a line at the width, and a Markdown sentence of any length, are not."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x"), nbformat.v4.new_code_cell("y")])
    nb.cells[0].outputs = [nbformat.v4.new_output("stream", text="a" * 10 + "\n" + "b" * 11)]
    nb.cells[1].outputs = [nbformat.v4.new_output("execute_result", data={"text/plain": "c" * 11}),
                           nbformat.v4.new_output("display_data", data={
                               "text/markdown": "d" * 50, "text/plain": "<Markdown>"})]
    assert [ln.split(":")[0] for ln in wide_lines(nb, 10)] == ["cell 0, 11 > 10", "cell 1, 11 > 10"]


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_notebook_runs_top_to_bottom(py):
    """Run in a kernel, as Lab's would. Where the browser test must run (COURSE_REQUIRE_BROWSER,
    set by .ci/run), it runs each chapter in JupyterLab's own kernel and checks all of this
    there, on what a browser shows (tests/test_lab_browser.py): errors, an image in every figure
    cell by the same rule, no wrapped line. Running the chapter a second time in a bare kernel
    then adds nothing but minutes."""
    if os.environ.get("COURSE_REQUIRE_BROWSER"):
        pytest.skip("checked in JupyterLab by tests/test_lab_browser.py (COURSE_REQUIRE_BROWSER)")
    nb = jupytext.read(py)
    t0 = time.perf_counter()
    execute(nb, kernel_env())
    errors = [f"{o['ename']}: {o['evalue']}" for c in nb.cells for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert not errors
    figures = figure_cells(nb)
    assert figures, f"{py.name} has no figure cell"
    missing = figures_without_images(nb)
    assert not missing, f"{py.name}: " + "; ".join(missing)
    # no printed table wraps in Lab (course.WIDTH: what a code cell's output shows at Lab's
    # default layout, tests/test_lab_browser.py measures it)
    wide = wide_lines(nb, course.WIDTH)
    assert not wide, f"{py.name} prints lines that wrap in Lab:\n" + "\n".join(wide[:10])
    print(f"{py.name}: {time.perf_counter() - t0:.1f} s, {len(figures)} figure cells, "
          f"{sum(images_per_cell(nb).values())} images")


# Run as `python notebooks/NN_*.py` does (its folder first on sys.path), with IPython made
# unimportable: a GPU machine without Jupyter. Then every figure the chapter drew is held to the
# one palette (`sim.plot.off_palette`, on the drawn artists), each problem a line on stderr.
AS_SCRIPT = ("import os, runpy, sys; sys.modules['IPython'] = None; path = sys.argv[1]; "
             "sys.argv = [path]; sys.path.insert(0, os.path.dirname(path)); "
             "runpy.run_path(path, run_name='__main__'); "
             "import matplotlib.pyplot as plt; from sim.plot import off_palette; "
             "bad = off_palette([plt.figure(n) for n in plt.get_fignums()]); "
             "print(*(f'OFF PALETTE: {b}' for b in bad), sep='\\n', file=sys.stderr); "
             "print(f'FIGURES: {len(plt.get_fignums())}', file=sys.stderr)")


@pytest.mark.slow
@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_chapter_runs_as_a_plain_script_without_ipython(py):
    env = dict(os.environ, MPLBACKEND="Agg", PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", AS_SCRIPT, str(py)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, f"{py.name} as a script:\n{p.stderr[-3000:]}"
    off = [ln for ln in p.stderr.splitlines() if ln.startswith("OFF PALETTE")]
    assert not off, f"{py.name} draws off the palette (sim.plot.SERIES, PALETTE):\n" + "\n".join(off)
    assert re.search(r"^FIGURES: [1-9]", p.stderr, re.M), f"{py.name} drew no figure to check"
    assert "IPython" not in p.stdout, "a display object printed instead of its text"
    # each kernel-beside-model listing printed as text (its header row names the model's file)
    listings = py.read_text().count("\nsteps_beside(")
    assert p.stdout.count("\n   sim/") >= listings, f"{py.name}: a step listing is missing"
    prose = [c.source for c in jupytext.read(py).cells if c.cell_type == "code" and "md(" in c.source]
    assert not prose or len(p.stdout.strip()) > 200, "the chapter's sentences were not printed"
