"""Shared test set-up: tests marked `gpu` run only where a Hopper (sm_90) GPU is present, and the
order and grouping of the tests when pytest-xdist runs them on several workers
(`python3 tasks.py test` does: -n auto --dist loadgroup).

Under xdist each module's tests stay on one worker (an `xdist_group` per file), so a module's
shared fixtures (a graded class, compiled kernels, a model's grid of points) are built once,
except in the modules of SPLIT: there each test is expensive on its own (a chapter run top to
bottom, in a kernel or in JupyterLab) and needs nothing from the others (each worker starts its
own Lab, on a free port of its own). Those go first, so that the long ones do not end the run
alone.
"""
from __future__ import annotations

import functools

import pytest


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


SPLIT = ("test_notebooks.py", "test_lab_browser.py")


@pytest.hookimpl(tryfirst=True)     # before xdist reads the groups off the marks
def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.path.name not in SPLIT)     # stable: the long ones first
    for item in items:
        if item.path.name not in SPLIT:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if hopper_gpu():
        return
    skip = pytest.mark.skip(reason="needs a Hopper (sm_90a) GPU; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
