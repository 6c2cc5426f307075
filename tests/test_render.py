"""Displayed numbers are rounded in the safe direction, exactly."""
from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from dpcalc.cli.output.render import plain_lower, plain_upper, show_lower, show_upper, to_json, Report

finite = st.floats(min_value=1e-300, max_value=1e300, allow_nan=False, allow_infinity=False)


@settings(max_examples=500)
@given(value=finite, digits=st.integers(1, 8))
def test_upper_bounds_never_shown_smaller_nor_lower_bounds_larger(value, digits):
    assert float(show_upper(value, digits)) >= value
    assert float(show_lower(value, digits)) <= value
    assert float(plain_upper(value)) >= value and float(plain_lower(value)) <= value


def test_rounding_is_tight():
    assert show_upper(0.9469993042988731) == "0.947"
    assert show_lower(0.9466347254304652) == "0.94663"
    assert show_upper(math.inf) == "inf" and show_upper(None) == "n/a"


def test_json_infinity_is_a_string_and_nan_is_null():
    report = Report("epsilon", "", {"x": math.inf}, [{"epsilon": math.inf, "other": math.nan}], [], [])
    text = to_json(report)
    assert '"inf"' in text and "Infinity" not in text and "NaN" not in text
