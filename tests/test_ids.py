from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import AmbiguousChunkError, UnknownChunkError
from ragloom.ids import is_prefix, pick, short_id

hex_id = st.text("0123456789abcdef", min_size=20, max_size=20)


@given(st.lists(hex_id, min_size=1, max_size=30, unique=True), st.integers(4, 19))
def test_a_prefix_names_its_chunk_or_says_which_it_could_be(ids: list[str], length: int) -> None:
    target = ids[0]
    prefix = target[:length]
    matches = [i for i in ids if i.startswith(prefix)]
    assert is_prefix(prefix) and not is_prefix(target)
    if len(matches) == 1:
        assert pick(prefix, matches, "here") == target
    else:
        with pytest.raises(AmbiguousChunkError, match="give more of it") as info:
            pick(prefix, matches, "here")
        assert info.value.matches == sorted(matches)
    assert pick(target, ids, "here") == target  # a whole id is itself


def test_short_ids_and_unknown_ones() -> None:
    assert short_id("eb50b13f5615c8d12e76") == "eb50b13f"
    assert short_id("580867be9d5fbe6377f5:12-90") == "580867be9d5fbe6377f5:12-90"  # window spans stay whole
    assert not is_prefix("eb5") and not is_prefix("not-hex!")
    with pytest.raises(UnknownChunkError, match="no chunk 'abcd' in here"):
        pick("abcd", [], "here")
