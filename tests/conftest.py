"""Shared test set-up: tests marked `gpu` run only where a Hopper (sm_90) GPU is present."""
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


def pytest_collection_modifyitems(config, items):
    if hopper_gpu():
        return
    skip = pytest.mark.skip(reason="needs a Hopper (sm_90a) GPU; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
