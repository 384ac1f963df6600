"""Shared test set-up: tests marked `gpu` run only where a Hopper (sm_90) GPU is present, and the
order of the tests for pytest-xdist (`python3 tasks.py test` runs a worker a core and one more,
--dist loadfile).

Under xdist each file's tests stay on one worker (loadfile), so a module's shared fixtures (a
graded class, compiled kernels, a model's grid of points) are built once. (`--dist loadgroup`
with `xdist_group` marks would let the chapter runs split too, but pytest-xdist 3.8 groups by
rewriting `item._nodeid`, which pytest 9.2's nodes no longer read: every test runs apart.)
xdist hands the files out most tests first (its default `--loadscope-reorder`, a stable sort),
so the order set here — the files of LONG_FIRST first, those of LAST last — decides only among
files with as many tests. That still measured: 5:38 and 5:51 on a 2-core clone with it, 6:27
without; making it the whole order (`--no-loadscope-reorder`) 6:24 (results/lab-notebook.md).
"""
from __future__ import annotations

import functools
import os

import pytest

from sim import memo

# The model's results kept (sim/memo.py): the chapters run four ways each (in a kernel, as a
# script, in JupyterLab, in the release's JupyterLab) and the fidelity tests and the chapters ask
# for many of the same simulations. The first to ask computes; the rest read it back — in this
# run and the next ones, from the model's folder in the user's cache (`memo.user_folder`, keyed
# by the model's code and the versions of Python and SimPy), as Triton's compiles are.
# `SIM_CACHE_DIR` set by the caller is used instead (an empty folder: every result afresh).
# A test that patches anything (it asks for `monkeypatch`) computes the model afresh, so a test
# that perturbs a constant sees the perturbed model. A submission's process never gets the
# variable: the grader's sandbox passes a scrubbed environment (exercises/grading/sandbox.py).
_SET = pytest.StashKey[bool]()


def pytest_configure(config):
    """The controller (or a run without xdist) names the folder; xdist's workers, started after
    this, inherit it through the environment, as does every process a test starts (a chapter's
    kernel, JupyterLab)."""
    if not hasattr(config, "workerinput") and not os.environ.get(memo.ENV):
        os.environ[memo.ENV] = str(memo.user_folder())
        config.stash[_SET] = True


def pytest_unconfigure(config):
    if config.stash.get(_SET, False):
        os.environ.pop(memo.ENV, None)


@pytest.fixture(autouse=True)
def _fresh_model_where_patched(request):
    if "monkeypatch" in request.fixturenames:
        request.getfixturevalue("monkeypatch").delenv(memo.ENV, raising=False)


@functools.cache
def hopper_gpu() -> str | None:
    """The name of the Hopper GPU here, or None (no torch, no CUDA, or not sm_90)."""
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    if torch.cuda.get_device_capability(0)[0] != 9:
        return None
    return torch.cuda.get_device_name(0)


LONG_FIRST = ("test_lab_browser.py",)
LAST = ("test_notebooks.py",)


def pytest_collection_modifyitems(config, items):
    # stable: the long ones first, the chapters as scripts last (they ask for what the Lab runs
    # computed; started beside them, a worker waits on the other's lock with its core idle)
    items.sort(key=lambda item: (item.path.name not in LONG_FIRST) + (item.path.name in LAST))
    if hopper_gpu():
        return
    skip = pytest.mark.skip(reason="needs a Hopper (sm_90a) GPU; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
