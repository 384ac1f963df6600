"""Chapters 02-04 put each kernel beside its model: the files and functions they name exist (so a
rename in kernels/ fails here, and is one line in `fidelity.pairs` to fix), the listings are read
from those files, and the run cell says what it needs where no Hopper GPU is."""
import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "notebooks"))

import course  # noqa: E402
from fidelity.pairs import attention_pairs, gemm_pairs, steps  # noqa: E402

# (chapter, workload, variant): the pairs each chapter shows
SHOWN = [("02", "attention", "ws"), ("02", "gemm", "ws"), ("03", "attention", "ws_pingpong"),
         ("03", "gemm", "ws_pingpong"), ("04", "attention", "overlap")]


def pair(workload, variant):
    return (attention_pairs() if workload == "attention" else gemm_pairs())[variant]


@pytest.mark.parametrize("chapter,workload,variant", SHOWN)
def test_the_named_kernel_function_is_in_its_file(chapter, workload, variant):
    p = pair(workload, variant)
    path = ROOT / course.kernel_file(p)
    assert path.is_file(), f"chapter {chapter}: {path} is gone"
    name = p[2].name
    tree = ast.parse(path.read_text())
    assert name in {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}, \
        f"chapter {chapter}: no function {name!r} in {path}"
    assert steps(p[2], **p[3]), f"{path}:{name} lists no shared steps"


@pytest.mark.parametrize("chapter,workload,variant", SHOWN)
def test_the_chapters_name_the_kernel_file_they_show(chapter, workload, variant):
    """The chapter's kernel cell prints `kernel_file(...)` of the pair, and the chapter text says
    which variant: its kernel module's name appears in the chapter."""
    text = next((ROOT / "notebooks").glob(f"{chapter}_*.py")).read_text()
    assert "kernel_file(" in text and "steps_beside(" in text
    assert f"{workload}_pairs()" in text or f"{workload}_pairs()[" in text


def test_beside_lists_both_files_steps():
    """In a notebook: both listings, left-aligned with their spaces kept (a loop's body indented
    under its `for`), and nothing but the table (no difflib legend, no navigation links)."""
    html = course.steps_html(pair("attention", "overlap"), "model", "kernel")
    assert "model" in html and "kernel" in html and "softmax" in html and "wait_pv" in html
    cells = html.count("<td ") + html.count("<th ")
    assert cells > 20 and html.count("text-align:left") == html.count("white-space:pre") == cells
    assert ">    wait_pv<" in html, "the loop's body is not indented"
    assert not any(w in html for w in ("Legends", "(f)irst change", "<a ", "href")), html[:300]


def test_beside_marks_a_differing_step():
    rows = course._aligned(["for j:", "    qk", "    pv"],
                           ["for j:", "    qk", "    wait", "    pv"])
    assert rows == [(True, "for j:", "for j:"), (True, "    qk", "    qk"),
                    (False, "", "    wait"), (True, "    pv", "    pv")]


def test_plain_python_with_ipython_importable_prints_the_listing(capsys):
    """`python notebooks/NN_*.py` where IPython is importable (JupyterLab installs it) but no
    kernel runs: no shell, so the step listings are printed as text, not handed to a `display`
    nobody shows (the chapters' own plain-script runs, IPython blocked, hold each chapter's
    listings: tests/test_notebooks.py)."""
    import IPython  # noqa: F401 - importable, as in the release's venv

    assert course._shell() is None
    p = pair("attention", "overlap")
    course.steps_beside(p, "sim/attention/overlap.py: consumer", "kernel: consumer")
    out = capsys.readouterr().out
    assert course.steps_text(p, "sim/attention/overlap.py: consumer", "kernel: consumer") in out
    assert "<IPython" not in out and "HTML object" not in out


def test_run_kernels_without_a_hopper_gpu_says_what_it_needs(monkeypatch, capsys):
    monkeypatch.setattr(course, "hopper_gpu", lambda: None)
    assert course.run_kernels("attention", ["overlap"]) is None
    out = capsys.readouterr().out
    assert "Hopper GPU (sm_90a" in out and "requirements-kernels.txt" in out and "overlap" in out


@pytest.mark.parametrize("chapter", ["02", "03", "04"])
def test_headings_are_markdown_cells(chapter):
    """A heading written as a comment in a code cell renders as code, not as a heading."""
    import jupytext

    nb = jupytext.read(next((ROOT / "notebooks").glob(f"{chapter}_*.py")))
    found = [line for c in nb.cells if c.cell_type == "code"
             for line in c.source.splitlines() if line.lstrip().startswith("# #")]
    assert not found, found
