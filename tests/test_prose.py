"""A number in a chapter's prose comes from the code beside it, never typed by hand.

Markdown cells may name sizes and section numbers ("d 128", "§3.1", "64 rows"), but a quantity
with a unit of time, rate or share — a result — must be printed by the chapter's code (`md(f"...")`
in `notebooks/course.py`), so the sentence and the value cannot drift apart.
"""
import re
from pathlib import Path

import jupytext
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
CHAPTERS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.py"))
# a number (with an optional range or ≈/~) directly followed by a unit of a result
RESULT = re.compile(
    r"(?<![\w.§])[≈~]?\d[\d,]*(?:\.\d+)?(?:\s*[-–]\s*\d[\d,]*(?:\.\d+)?)?\s*"
    r"(?:%|TFLOPs?/s|TFLOP/s|TF\b|clk\b|clocks?\b|cycles?\b|GHz|MHz|µs|ms\b|ns\b|[KMG]iB|"
    r"B/clk|GB/s|TB/s|W\b|×(?!\s*\d))")   # 1.75× is a ratio, 128×176 a tile


def typed_results(text: str) -> list[str]:
    return [m.group(0) for m in RESULT.finditer(text)]


def test_the_check_sees_a_typed_number():
    assert typed_results("FA2 at 36 % of peak, fa3 at 661 TFLOP/s, a round trip of ~1300 clk")
    assert typed_results("d 128, §3.1, 64 rows, 4 stages, B 4, H 16, a 128×176 tile") == []
    assert typed_results("cuDNN 1.75× SDPA") == ["1.75×"]


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_no_result_typed_in_markdown(py):
    cells = [c for c in jupytext.read(py).cells if c.cell_type == "markdown"]
    typed = [(n, hit) for n, c in enumerate(cells) for hit in typed_results(c.source)]
    assert typed == [], f"{py.name}: print these from code with md(f'...'): {typed}"


@pytest.mark.parametrize("py", CHAPTERS, ids=lambda p: p.stem)
def test_headings_are_markdown_cells(py):
    """A heading written as a comment in a code cell (`# ## The roofline`) shows as code in Lab."""
    code = [c for c in jupytext.read(py).cells if c.cell_type == "code"]
    headings = [ln for c in code for ln in c.source.splitlines() if re.match(r"#\s*#+\s", ln)]
    assert headings == [], f"{py.name}: make these markdown cells: {headings}"


def _course():
    import importlib.util
    spec = importlib.util.spec_from_file_location("course_for_tests", NOTEBOOKS / "course.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_md_refuses_a_number_that_would_start_a_list(capsys):
    course = _course()
    course.md("the datasheet's\n4096 FLOP a clock.")          # no full stop after it: fine
    with pytest.raises(ValueError, match="numbered list item"):
        course.md("at every N, the datasheet's\n4096. On the h200 preset")
    course.md("1. a list\n2. of its own")                       # a list stays a list
    assert "4096 FLOP" in capsys.readouterr().out               # no IPython shell: printed


def test_fit_cuts_a_wide_table_and_refuses_what_it_cannot():
    course = _course()
    row = "  d     S mask" + " x" * 40 + " | " + "y" * 60 + " | " + "z" * 30
    out = course.fit("\n".join([row] * 3 + ["a note " * 40]))
    assert max(map(len, out.splitlines())) <= course.WIDTH
    assert out.count("  d     S mask") == 9                    # the key leads every block
    with pytest.raises(ValueError, match="characters"):
        course.fit("w" * 120 + " | " + "v")


def test_in_order_fails_on_a_schedule_out_of_order():
    """The chapters assert a schedule and its kernel take the same steps in order: the check
    fails when the order does not hold, and names the step."""
    course = _course()
    course.in_order("sim.gemm.pipelined:consumer", [r"acquire\(", r"\.mma\("])
    with pytest.raises(AssertionError, match="acquire"):
        course.in_order("sim.gemm.pipelined:consumer", [r"\.mma\(", r"acquire\("])
    with pytest.raises(LookupError, match="defines no"):
        course.source("sim.gemm.pipelined:no_such_function")
