"""The source conventions: solution blocks (nbgrader's), and hidden tests in ``hidden/``.

    ### BEGIN SOLUTION
    ...the answer...
    ### END SOLUTION

A solution block becomes ``raise NotImplementedError`` (at the block's indentation) in the student
copy. Hidden tests, and every value they use, live in an exercise's ``hidden/`` folder, which the
student copy does not get: a ``### BEGIN HIDDEN TESTS`` block in a public file is refused (it would
ship the values its tests are built from, at module level, beside it).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

SOLUTION_BEGIN, SOLUTION_END = "### BEGIN SOLUTION", "### END SOLUTION"
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"
_MARK = re.compile(r"^(\s*)### (BEGIN|END) (SOLUTION|HIDDEN TESTS)\s*$")


class MarkerError(ValueError):
    pass


def blocks(text: str, kind: str) -> list[tuple[int, int, str]]:
    """(first line, last line, indentation) of each block of `kind` ("SOLUTION" or "HIDDEN TESTS")."""
    out, start = [], None
    for i, line in enumerate(text.splitlines()):
        m = _MARK.match(line)
        if not m or m.group(3) != kind:
            continue
        if m.group(2) == "BEGIN":
            if start is not None:
                raise MarkerError(f"line {i + 1}: nested ### BEGIN {kind}")
            start = (i, m.group(1))
        else:
            if start is None:
                raise MarkerError(f"line {i + 1}: ### END {kind} without BEGIN")
            out.append((start[0], i, start[1]))
            start = None
    if start is not None:
        raise MarkerError(f"line {start[0] + 1}: ### BEGIN {kind} never ends")
    return out


def strip(text: str) -> str:
    """The student version of one source file."""
    if blocks(text, "HIDDEN TESTS"):
        raise MarkerError("a ### BEGIN HIDDEN TESTS block: hidden tests, and every value they "
                          "use, live in the exercise's hidden/ folder")
    lines = text.splitlines()
    drop: set[int] = set()
    replace: dict[int, str] = {}
    for a, b, indent in blocks(text, "SOLUTION"):
        drop.update(range(a, b + 1))
        replace[a] = f"{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError"
    out = []
    for i, line in enumerate(lines):
        if i in replace:
            out.append(replace[i])
        elif i not in drop:
            out.append(line)
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def solution_lines(text: str) -> list[str]:
    """The non-trivial lines inside solution blocks (what must not leak into the release)."""
    lines = text.splitlines()
    found = []
    for a, b, _ in blocks(text, "SOLUTION"):
        for line in lines[a + 1:b]:
            s = line.strip()
            if len(s) >= 12 and not s.startswith("#"):
                found.append(s)
    return found


def meta(folder: Path) -> dict:
    """An exercise's exercise.json: title, chapter, the files the student writes, points."""
    return json.loads((folder / "exercise.json").read_text(encoding="utf-8"))


def submission_files(folder: Path) -> list[str]:
    """Files of an exercise the student writes (relative paths), from its exercise.json."""
    return list(meta(folder)["submission"])


def preload(folder: Path) -> list[str]:
    """What the warm process of this exercise's adapter sandbox runs before any submission
    (exercise.json's "preload": "module" or "module:function", e.g. ``_compile:warm``, a first
    compile that loads Triton's backend once): the grader's heavy start-up, done once per
    grading process instead of once per test (`zygote`)."""
    return list(meta(folder).get("preload", []))
