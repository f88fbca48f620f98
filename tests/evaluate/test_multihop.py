"""The multi-hop suite's pieces: HotpotQA's two layouts, the question file, both@k and recall@k."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import ConfigError
from ragloom.evaluate.datasets import shared_data
from ragloom.evaluate.multihop import DATA_FILE, KS, documents, load_hotpot, question_file, scores

from ..conftest import shared_data as shared

ORIGINAL = [{  # HotpotQA's own layout: lists of [title, sentences] and [title, sentence id]
    "question": "Which city is the home of the band that recorded Songs?", "answer": "Leeds", "type": "bridge",
    "supporting_facts": [["Songs (album)", 0], ["The Band", 1], ["The Band", 0]],
    "context": [["Songs (album)", ["Songs is an album", " by The Band."]], ["The Band", ["The Band is from Leeds."]],
                ["Leeds", ["Leeds is a city."]]],
}]


def test_both_layouts_and_every_paragraph_once(tmp_path: Path) -> None:
    path = tmp_path / "original.json"
    path.write_text(json.dumps(ORIGINAL * 2), encoding="utf-8")
    questions = load_hotpot(path)
    assert len(questions) == 2 and questions[0].supporting == ("Songs (album)", "The Band")
    assert questions[0].paragraphs[0] == ("Songs (album)", "Songs is an album by The Band.")
    docs = documents(questions)
    assert [d.title for d in docs] == ["Songs (album)", "The Band", "Leeds"]
    assert docs[0].text == "# Songs (album)\n\nSongs is an album by The Band.\n"
    assert len({d.document_id for d in docs}) == 3 and len(load_hotpot(path, limit=1)) == 1
    shared_questions = load_hotpot(question_file(shared()), limit=3)  # the Hugging Face layout
    assert [q.type for q in shared_questions] and all(len(q.supporting) == 2 for q in shared_questions)


def test_the_question_file_is_found_from_a_folder_or_given(tmp_path: Path) -> None:
    assert question_file(shared()) == shared() / DATA_FILE
    other = tmp_path / "held-out.json"
    other.write_text("[]", encoding="utf-8")
    assert question_file(other) == other == question_file(tmp_path)
    assert shared_data(other) == other  # --data FILE reaches the suite as it is
    with pytest.raises(ConfigError, match=r"--data .*typo.json does not exist; pass the shared data folder"):
        shared_data(tmp_path / "typo.json")  # never the shared data in its place
    with pytest.raises(ConfigError, match="pass --data FILE"):
        question_file(tmp_path / "missing")
    (tmp_path / "bad.json").write_text("{", encoding="utf-8")
    with pytest.raises(ConfigError, match="bad.json"):
        load_hotpot(tmp_path / "bad.json")


def test_both_and_recall_at_k() -> None:
    got = scores(["A", "B"], ["A", "x", "y", "B", "z"])
    assert got["both@2"] == 0 and got["recall@2"] == 0.5
    assert got["both@5"] == got["both@10"] == 1 and got["recall@10"] == 1


@given(st.lists(st.sampled_from("ABCDEF"), max_size=12), st.sets(st.sampled_from("ABCDEF"), min_size=1, max_size=2))
def test_scores_grow_with_k_and_both_means_all_recalled(ranked: list, supporting: set) -> None:
    got = scores(sorted(supporting), ranked)
    for small, large in zip(KS, KS[1:], strict=False):
        assert got[f"both@{small}"] <= got[f"both@{large}"] and got[f"recall@{small}"] <= got[f"recall@{large}"]
    for k in KS:
        assert got[f"both@{k}"] == float(got[f"recall@{k}"] == 1.0)
