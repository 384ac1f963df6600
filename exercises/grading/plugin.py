"""pytest plugin for running an exercise's tests with plain pytest (``-p exercises.grading.plugin``,
which the released ``pytest.ini`` sets): registers the ``points(n)`` and ``gpu`` markers and skips
``gpu`` tests without a Hopper GPU. The submission's code runs in its sandbox either way
(`harness.submission`); `python -m exercises grade` does not use pytest's runner at all.
"""
from __future__ import annotations

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "points(n): the test is worth n points")
    config.addinivalue_line("markers", "gpu: needs a Hopper (sm_90a) GPU; skipped elsewhere")


def pytest_collection_modifyitems(config, items):
    from .runner import hopper
    if not any("gpu" in item.keywords for item in items) or hopper():
        return
    skip = pytest.mark.skip(reason="needs a Hopper (sm_90a) GPU; none here")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
