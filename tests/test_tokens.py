from __future__ import annotations

import numpy as np
import pytest
import tiktoken
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import UnknownNameError
from ragloom.tokens import ensure_tiktoken_offline, get_tokenizer


@pytest.fixture(scope="module")
def tiktoken_cl100k() -> tiktoken.Encoding:
    ensure_tiktoken_offline()
    return tiktoken.get_encoding("cl100k_base")


def test_tiktoken_works_offline_after_setup(tiktoken_cl100k: tiktoken.Encoding) -> None:
    assert tiktoken_cl100k.encode("hello world") == [15339, 1917]


@given(st.text(max_size=400))
def test_bpe_counts_equal_tiktoken(tiktoken_cl100k: tiktoken.Encoding, text: str) -> None:
    tok = get_tokenizer("cl100k_base")
    assert tok.count(text) == len(tiktoken_cl100k.encode_ordinary(text))


def test_bpe_counts_equal_tiktoken_on_real_text(tiktoken_cl100k: tiktoken.Encoding, real_corpus) -> None:
    tok = get_tokenizer("cl100k_base")
    for _, text in real_corpus:
        assert tok.count(text) == len(tiktoken_cl100k.encode_ordinary(text))


@pytest.mark.parametrize("name", ["cl100k_base", "o200k_base", "minilm", "chars"])
@given(text=st.text(max_size=300))
def test_token_ends_are_valid_cut_points(name: str, text: str) -> None:
    tok = get_tokenizer(name)
    ends = tok.token_ends(text)
    assert np.all(np.diff(ends) >= 0)
    assert np.all((ends >= 0) & (ends <= len(text)))
    if name in ("cl100k_base", "o200k_base", "chars"):
        assert len(ends) == tok.count(text)
        if text:
            assert ends[-1] == len(text)


@given(text=st.text(max_size=300), limit=st.integers(0, 50))
def test_count_within_agrees_with_count(text: str, limit: int) -> None:
    for name in ("cl100k_base", "chars"):
        tok = get_tokenizer(name)
        n = tok.count(text)
        assert tok.count_within(text, limit) == (n if n <= limit else None)


def test_unknown_tokenizer_lists_the_valid_names() -> None:
    with pytest.raises(UnknownNameError, match="cl100k_base.*minilm"):
        get_tokenizer("gpt2")


def test_hf_tokenizer_counts_word_pieces_without_truncation() -> None:
    tok = get_tokenizer("minilm")
    long_text = "tokenization " * 400
    assert tok.count(long_text) > 128  # the file's built-in truncation is off
