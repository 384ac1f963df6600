"""Self-tests of the form checks (`exercises/grading/forms.py`) and of the model's refusal of
durations and byte counts that would corrupt its clock (`sim.RoleView`): a value of the wrong
type, shape, dtype or range fails with a message naming what was expected, before any
comparison could take it for right."""
import math

import numpy as np
import pytest

from exercises.grading import forms
from sim import H100, AttentionConfig, simulate


@pytest.mark.parametrize("value", [np.empty(0), np.array([3.0]), [3.0], "3", None, True,
                                   float("nan"), float("inf"), -float("inf")])
def test_number_refuses_what_is_not_one_finite_number(value):
    assert np.empty(0) == pytest.approx(3.0)          # why the form comes first
    with pytest.raises(forms.FormError, match="expected a (finite )?number"):
        forms.number(value, "answer")


def test_number_takes_numbers_and_names_the_range():
    assert forms.number(3, "x") == 3.0 and forms.number(np.float32(2.5), "x") == 2.5
    assert forms.number(np.array(1.5), "x") == 1.5
    with pytest.raises(forms.FormError, match=r"x: expected a number in \[0, 1\], got 1.5"):
        forms.number(1.5, "x", 0, 1)


@pytest.mark.parametrize("value", [2.0, True, np.bool_(True), "2", [2], np.array([2])])
def test_integer_refuses_floats_bools_and_containers(value):
    with pytest.raises(forms.FormError, match="slot: expected an int"):
        forms.integer(value, "slot", 0, 3)


def test_integer_and_parity_ranges():
    assert forms.integer(np.int64(2), "s", 0, 3) == 2
    assert forms.parity(1, "p") == 1
    for bad in (2, -1):
        with pytest.raises(forms.FormError, match=r"expected an int in \[0, 1\]"):
            forms.parity(bad, "p")


def test_boolean_refuses_truthy_values():
    assert forms.boolean(np.bool_(False), "b") is False
    for bad in ([0], 1, "yes", np.array([True])):
        with pytest.raises(forms.FormError, match="expected True or False"):
            forms.boolean(bad, "b")


def test_array_checks_type_shape_dtype_and_finiteness():
    good = np.zeros((3, 2))
    assert forms.array(good, "o", (3, 2)).dtype == np.float64
    for bad, msg in (([[0.0] * 2] * 3, "expected a NumPy array"),
                     (np.zeros((3, 2), dtype=np.int64), "floating-point"),
                     (np.zeros((2, 3)), r"expected shape \(3, 2\), got \(2, 3\)"),
                     (np.zeros(0), "expected shape"),
                     (np.full((3, 2), np.nan), r"element \(0, 0\) is nan")):
        with pytest.raises(forms.FormError, match=msg):
            forms.array(bad, "o", (3, 2))
    m = np.array([0.0, -np.inf])
    assert forms.array(m, "m", (2,), allow_neginf=True) is not m
    with pytest.raises(forms.FormError, match="finite"):
        forms.array(np.array([np.inf, 0.0]), "m", (2,), allow_neginf=True)


def test_sequence_length():
    assert forms.sequence([1, 2], "pair", 2) == (1, 2)
    with pytest.raises(forms.FormError, match="expected a tuple of 3 values"):
        forms.sequence((1, 2), "state", 3)


def _run_with(bad_call):
    """A producer role that makes one call the model must refuse; returns the run."""
    def producer(cta):
        cta.load_q(cta.producer_name)
        yield from bad_call(cta)

    def consumer(cta, w):
        return
        yield

    return simulate(AttentionConfig(variant="ws"), H100,
                    roles={"producer": producer, "consumer": consumer}, n_blocks=1)


@pytest.mark.parametrize("clk", [float("nan"), float("inf"), -1.0, "5", True])
def test_a_role_cannot_delay_by_nan_inf_or_a_negative_time(clk):
    def delay(cta):
        yield cta.delay(clk)

    run = _run_with(delay)
    assert not run.finished and "delay: expected a finite number of cycles >= 0" in run.error
    assert math.isfinite(run.clk)


@pytest.mark.parametrize("parity", [2, -1, 3, True, 0.0, "0", None])
def test_a_role_cannot_wait_on_a_parity_other_than_0_or_1(parity):
    """The model's barrier passes any parity but its phase's (`completed & 1 != parity`), so 2 or
    -1 would never wait in the model and hang a fresh barrier on the machine (its low bit 0)."""
    def wait(cta):
        yield from cta.wait(cta.producer_name, cta.k.empty[0], parity)

    run = _run_with(wait)
    assert not run.finished and "a phase parity is the int 0 or 1" in run.error


@pytest.mark.parametrize("nbytes", [float("nan"), float("inf"), -128, 12.5])
def test_a_role_cannot_expect_or_copy_a_bad_byte_count(nbytes):
    def expect(cta):
        cta.k.full[0].expect(nbytes)
        yield cta.delay(1)

    def copy(cta):
        cta.k.full[0].expect(128)
        cta.tma_copy(cta.producer_name, "load K", nbytes, cta.k.full[0], cta.tile("kv", 0))
        yield cta.delay(1)

    for call in (expect, copy):
        run = _run_with(call)
        assert not run.finished and "expected a whole number of bytes >= 0" in run.error
