"""The tl exercise on a CPU: the interpreter runs a kernel's body as Python, so the grader also
puts the kernel through Triton's front end for sm_90a (`_run_kernel.compiles`). A kernel that
only the interpreter accepts fails every case; a kernel Triton compiles keeps its marks,
whatever else it declares that a launch may leave to its defaults."""
from pathlib import Path

import pytest

from exercises.grading import runner

PKG = Path(runner.__file__).resolve().parents[1]
SOLUTION = (PKG / "ch04_tl_attention" / "attention_tl.py").read_text()
SIGNATURE = "HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):"

pytestmark = pytest.mark.skipif(not runner.kernels_installed(), reason="needs triton and torch")


def _grade(tmp_path, text):
    sub = tmp_path / "ch04_tl_attention"
    sub.mkdir()
    (sub / "attention_tl.py").write_text(text)
    [res] = runner.grade(tmp_path, only=["ch04_tl_attention"], jobs=1,
                         test="test_interpreter_matches_reference")
    [t] = [t for t in res.tests if t.name == "test_interpreter_matches_reference"]
    return t


def test_a_kernel_with_a_defaulted_constexpr_keeps_its_marks(tmp_path):
    assert SIGNATURE in SOLUTION
    text = SOLUTION.replace(SIGNATURE, SIGNATURE[:-2]
                            + ",\n                  USE_EXP2: tl.constexpr = False):")
    t = _grade(tmp_path, text)
    assert t.outcome == "passed", t.message[-1500:]


def test_a_kernel_only_the_interpreter_runs_fails(tmp_path):
    old = "    for start_n in range(0, seqlen_k, BLOCK_N):\n"
    assert old in SOLUTION
    text = SOLUTION.replace(old, "    for start_n in range(0, 4096, BLOCK_N):\n"
                                 "        if start_n >= seqlen_k:\n            break\n")
    t = _grade(tmp_path, text)
    assert t.outcome == "failed" and "does not compile for a Hopper GPU" in t.message, t.message
