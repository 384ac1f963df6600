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
