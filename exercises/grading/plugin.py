"""pytest plugin loaded into every grading subprocess (``-p exercises.grading.plugin``).

* registers the ``points(n)`` and ``gpu`` markers, skips ``gpu`` tests without a Hopper GPU;
* streams one JSON line per event to ``$EXERCISES_REPORT`` — the collected tests with their points,
  ``start`` before each test and ``result`` after it — so the runner knows which test was running
  when a submission killed the interpreter;
* snapshots the reference modules (``sim.*``, ``numpy``, ``math``, the grading helpers) before
  any test and checks them after each one: a test whose submission monkeypatched them fails, and
  the originals are put back so the following tests run against the real thing.
"""
from __future__ import annotations

import importlib
import json
import os
import re
import sys

import pytest

GUARDED = ("math", "numpy", "numpy.random", "numpy.linalg", "numpy.testing", "pytest", "simpy",
           "sim", "sim.run", "sim.predict", "sim.engine", "sim.trace", "sim.hardware", "sim.config",
           "sim.cta", "sim.attention", "sim.attention.cta", "sim.attention.ws",
           "sim.attention.ws_pingpong", "exercises.grading.harness")
HIDDEN_RE = re.compile(r"^\s*### (BEGIN|END) HIDDEN TESTS")
_snapshot: dict = {}
_hidden_lines: dict = {}


def _emit(**event) -> None:
    path = os.environ.get("EXERCISES_REPORT")
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps(event) + "\n")


_HOPPER: list = []


def _hopper() -> bool:
    """Is there a Hopper GPU? (Imports torch: asked only when a gpu test was collected.)"""
    if not _HOPPER:
        _HOPPER.append(_probe())
    return _HOPPER[0]


def _probe() -> bool:
    if os.environ.get("EXERCISES_ASSUME_NO_GPU"):
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available() and torch.cuda.get_device_capability(0)[0] == 9)


def _hidden_ranges(path: str) -> list[tuple[int, int]]:
    if path not in _hidden_lines:
        ranges, start = [], None
        try:
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
        except OSError:
            lines = []
        for i, line in enumerate(lines):
            m = HIDDEN_RE.match(line)
            if m and m.group(1) == "BEGIN":
                start = i
            elif m and start is not None:
                ranges.append((start, i))
                start = None
        _hidden_lines[path] = ranges
    return _hidden_lines[path]


def _take_snapshot() -> None:
    for name in GUARDED:
        try:
            mod = importlib.import_module(name)
        except Exception:  # noqa: BLE001, S112 - a module the tests don't need
            continue
        attrs = {}
        for k, v in list(vars(mod).items()):
            if k.startswith("__"):
                continue
            attrs[k] = v
            if isinstance(v, type) and getattr(v, "__module__", None) == name:
                for ck, cv in list(vars(v).items()):
                    if not ck.startswith("__") or ck in ("__init__", "__call__"):
                        attrs[(k, ck)] = cv
        _snapshot[name] = (mod, attrs)


def _check_and_restore() -> list[str]:
    changed = []
    for name, (mod, attrs) in _snapshot.items():
        if sys.modules.get(name) is not mod:
            changed.append(f"{name} (module replaced)")
            sys.modules[name] = mod
        for key, value in attrs.items():
            if isinstance(key, tuple):
                cls = attrs.get(key[0])
                if vars(cls).get(key[1], _MISSING) is not value:
                    changed.append(f"{name}.{key[0]}.{key[1]}")
                    setattr(cls, key[1], value)
            elif vars(mod).get(key, _MISSING) is not value:
                changed.append(f"{name}.{key}")
                setattr(mod, key, value)
    return changed


_MISSING = object()


def pytest_configure(config):
    cap = os.environ.get("EXERCISES_OUTPUT_CAP")
    if cap:  # bytes any one file may grow to: a submission's output flood fails its own writes
        import resource
        resource.setrlimit(resource.RLIMIT_FSIZE, (int(cap), int(cap)))
    config.addinivalue_line("markers", "points(n): the test is worth n points")
    config.addinivalue_line("markers", "gpu: needs a Hopper (sm_90a) GPU; skipped elsewhere")
    _take_snapshot()


def points_of(item) -> float:
    m = item.get_closest_marker("points")
    return float(m.args[0]) if m and m.args else 0.0


def pytest_collection_modifyitems(config, items):
    only = os.environ.get("EXERCISES_ONLY_TEST")
    if only:   # exact test name (pytest -k matches substrings: test_softmax ⊂ test_softmax_masked)
        keep = [i for i in items if i.name == only]
        config.hook.pytest_deselected(items=[i for i in items if i.name != only])
        items[:] = keep
    if not any("gpu" in item.keywords for item in items) or _hopper():
        return
    skip = pytest.mark.skip(reason="needs a Hopper (sm_90a) GPU; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


def pytest_collection_finish(session):
    """The final list (after -k and --deselect), with points, hidden and gpu flags."""
    gpu = any("gpu" in item.keywords for item in session.items) and _hopper()
    tests = []
    for item in session.items:
        is_gpu = "gpu" in item.keywords
        path, lineno = str(item.path), item.location[1]
        hidden = ("hidden" in item.path.parts[-3:-1]
                  or any(a <= lineno <= b for a, b in _hidden_ranges(path)))
        doc = getattr(getattr(item, "function", None), "__doc__", None) or ""
        tests.append({"nodeid": item.nodeid, "name": item.name, "points": points_of(item),
                      "gpu": is_gpu, "skipped": is_gpu and not gpu, "hidden": hidden,
                      "doc": doc.strip().split("\n")[0]})
    _emit(event="collected", tests=tests)


def pytest_runtest_logstart(nodeid, location):
    _emit(event="start", nodeid=nodeid)


_outcomes: dict = {}


def pytest_runtest_logreport(report):
    prev = _outcomes.get(report.nodeid, ("passed", ""))
    if report.failed:
        msg = report.longreprtext or ""
        if report.when != "call":
            msg = f"[{report.when}] " + msg
        _outcomes[report.nodeid] = ("failed", prev[1] + msg)
    elif report.skipped and prev[0] == "passed":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _outcomes[report.nodeid] = ("skipped", reason)


def pytest_runtest_logfinish(nodeid, location):
    outcome, msg = _outcomes.pop(nodeid, ("passed", ""))
    _emit(event="result", nodeid=nodeid, outcome=outcome, message=msg[-4000:])


@pytest.fixture(autouse=True)
def _reference_guard():
    yield
    changed = _check_and_restore()
    if changed:
        pytest.fail("the submission modified the grader's reference code: " + ", ".join(changed[:5])
                    + " (restored for the next tests)", pytrace=False)
