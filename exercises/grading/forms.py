"""The form of a value a submission hands back, checked before the value is compared.

A comparison alone trusts too much: ``np.empty(0) == pytest.approx(x)`` is True (an empty array
has no element that differs), ``[1.0] == [1]`` passes a float for a slot number, ``bool([0])`` is
True, and NaN or inf slips past a check that only asks "is it close?". So every answer goes
through one of these first; a wrong form fails the test (`FormError` is an `AssertionError`)
with a message that names what was expected and what came back.
"""
from __future__ import annotations

import math
import numbers

import numpy as np


class FormError(AssertionError):
    """A value of the wrong type, shape, dtype or range: the test fails with this message."""


def _got(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return f"{type(value).__name__} {text[:60]}{'...' if len(text) > 60 else ''}"


def integer(value, what: str, lo: int | None = None, hi: int | None = None) -> int:
    """A Python or NumPy integer (not a bool, not a float that happens to be whole) in
    [lo, hi]; returns it as an int."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Integral, np.integer)):
        raise FormError(f"{what}: expected an int, got {_got(value)}")
    v = int(value)
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise FormError(f"{what}: expected an int in [{lo}, {hi}], got {v}")
    return v


def parity(value, what: str) -> int:
    """A phase parity: the int 0 or 1."""
    return integer(value, what, 0, 1)


def boolean(value, what: str) -> bool:
    """True or False (a NumPy bool too), nothing that merely has a truth value."""
    if not isinstance(value, (bool, np.bool_)):
        raise FormError(f"{what}: expected True or False, got {_got(value)}")
    return bool(value)


def number(value, what: str, lo: float | None = None, hi: float | None = None) -> float:
    """A finite real number (int or float, not a bool, not an array) in [lo, hi]."""
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating,
                                                                     np.integer)):
        raise FormError(f"{what}: expected a number, got {_got(value)}")
    v = float(value)
    if not math.isfinite(v):
        raise FormError(f"{what}: expected a finite number, got {v}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        raise FormError(f"{what}: expected a number in [{lo}, {hi}], got {v}")
    return v


def array(value, what: str, shape: tuple, finite: bool = True, allow_neginf: bool = False
          ) -> np.ndarray:
    """A real floating-point NumPy array of exactly `shape`, every element finite (or, with
    `allow_neginf`, finite or -inf); returns it as float64."""
    if not isinstance(value, np.ndarray):
        raise FormError(f"{what}: expected a NumPy array of shape {shape}, got {_got(value)}")
    if value.dtype.kind != "f":
        raise FormError(f"{what}: expected a floating-point array, got dtype {value.dtype}")
    if value.shape != tuple(shape):
        raise FormError(f"{what}: expected shape {tuple(shape)}, got {value.shape}")
    a = value.astype(np.float64)
    if finite:
        bad = ~np.isfinite(a) & ~(np.isneginf(a) if allow_neginf else False)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            raise FormError(f"{what}: expected finite values{' (or -inf)' if allow_neginf else ''},"
                            f" element {idx} is {a[idx]}")
    return a


def sequence(value, what: str, length: int) -> tuple:
    """A tuple or list of exactly `length` items."""
    if not isinstance(value, (tuple, list)) or len(value) != length:
        raise FormError(f"{what}: expected a tuple of {length} values, got {_got(value)}")
    return tuple(value)
