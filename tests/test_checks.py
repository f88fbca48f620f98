"""The argument checks every layer shares: what they accept, and the one line they refuse with."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.checks import check_count, check_known, shown
from ragloom.errors import InvalidParameterError


@given(st.one_of(st.none(), st.integers(min_value=0)))
def test_a_count_is_none_or_a_whole_number_not_below_zero(value: int | None) -> None:
    check_count("limit", value, "how many to list")


@given(st.one_of(st.integers(max_value=-1), st.booleans(), st.floats(), st.text(max_size=3000),
                 st.lists(st.integers(), max_size=3)))
def test_anything_else_is_refused_in_one_short_line(value: object) -> None:
    with pytest.raises(InvalidParameterError) as info:
        check_count("limit", value, "how many to list")
    message = str(info.value)
    assert message.startswith("limit (") and message.endswith("must be a whole number, 0 or more: how many to list")
    assert "\n" not in message and len(message) < 200


@given(st.one_of(st.text(), st.binary(), st.integers(), st.lists(st.text())))
def test_shown_is_the_value_itself_or_its_shortened_repr(value: object) -> None:
    text, full = shown(value), repr(value)
    assert "\n" not in text
    if len(full) <= 80:
        assert text == full
    else:  # a 1 MB argument makes a one-line error
        assert text.startswith(full[:60]) and f"({len(full)} characters)" in text and len(text) < 100


@given(st.lists(st.sampled_from(["alpha", "beta", "gamma"]), max_size=5))
def test_known_names_pass(names: list[str]) -> None:
    check_known(names, ["alpha", "beta", "gamma"], "option", "mode 'x'")


def test_an_unknown_name_is_refused_with_the_closest_and_every_valid_one() -> None:
    with pytest.raises(InvalidParameterError) as info:
        check_known(["alpha", "gama"], ["gamma", "alpha", "beta"], "option", "mode 'x'")
    assert str(info.value) == ("unknown option 'gama' for mode 'x' (did you mean 'gamma'?); valid options: alpha, "
                               "beta, gamma")
    with pytest.raises(InvalidParameterError, match=r"^unknown parameter 'zzz' for y; valid parameters: none$"):
        check_known(["zzz"], [], "parameter", "y")
