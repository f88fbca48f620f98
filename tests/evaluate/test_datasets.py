"""The evaluation datasets: the documentation-corpus questions (derived mechanically, reproducible,
their spans exact), and the shared sets read from the shared folder or their publishers' layouts."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from ragloom.errors import ConfigError
from ragloom.evaluate.chunking import recall_at, recursive_frontier
from ragloom.evaluate.datasets import STOPWORDS, keyword_query, load_chunking_eval, load_contextual, load_doc_questions

from ..conftest import shared_data

PROSE = ("The scheduler keeps a runnable queue for every processor in the machine. When a task wakes up, "
         "the kernel places it on the queue of the processor that ran it last.\n\n")


def corpus(root: Path) -> Path:
    for part, topic in (("python", "interpreter"), ("linux", "kernel")):
        for i in range(3):
            folder = root / part / "guide"
            folder.mkdir(parents=True, exist_ok=True)
            body = "".join(PROSE.replace("kernel", f"{topic} {i} {j}") for j in range(14))
            code = "```\nThe code block holds a sentence that is long enough to be chosen but never is.\n```\n\n"
            (folder / f"page{i}.md").write_text(f"# Page {i}\n\n{code}{body}", encoding="utf-8")
    return root


def test_questions_come_from_two_sentences_of_prose_with_exact_spans(tmp_path: Path) -> None:
    data = load_doc_questions(corpus(tmp_path), documents=6, min_chars=100, seed=3)
    assert len(data.corpora) == 6 and {name.split("/")[0] for name in data.corpora} == {"python", "linux"}
    assert data.questions and all(len(q.references) == 1 for q in data.questions)
    for q in data.questions:
        (a, b), = q.references
        passage = data.corpora[q.corpus][a:b]
        assert passage.count(". ") >= 1 and "```" not in passage and "code block" not in passage
        words = q.question.split()
        assert 4 <= len(words) <= 8 and all(w in passage.lower() for w in words)
        assert not set(words) & STOPWORDS
    again = load_doc_questions(corpus(tmp_path), documents=6, min_chars=100, seed=3)
    assert again == data  # seeded: the same questions every time


def test_a_keyword_query_keeps_the_rarest_words_in_their_order() -> None:
    frequency = {"scheduler": 1, "keeps": 7, "runnable": 1, "queue": 2, "every": 8, "processor": 5, "machine": 9}
    query = keyword_query("The scheduler keeps a runnable queue for every processor in the machine.", frequency,
                          words=4)
    assert query == "scheduler runnable queue processor"  # the four rarest, in the sentence's order


def test_a_missing_corpus_says_how_to_build_it(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="get_doc_corpus.sh"):
        load_doc_questions(tmp_path / "nowhere")


def test_the_recursive_frontier_compares_at_equal_iou() -> None:
    points = [(23.0, 80.0), (20.0, 90.0), (14.0, 92.0), (13.0, 91.0), (6.0, 90.0)]  # (IoU, recall)
    frontier = recursive_frontier(points)
    assert frontier == ([14.0, 20.0, 23.0], [92.0, 90.0, 80.0])  # dominated configurations drop out
    assert recall_at(frontier, 17.0, 6.0) == pytest.approx(91.0)  # interpolated
    assert recall_at(frontier, 10.0, 6.0) == 92.0  # below: the best recall at that IoU or higher
    assert recall_at(frontier, 5.0, 6.0) is None and recall_at(frontier, 24.0, 6.0) is None  # nothing measured


def test_the_chunking_suite_runs_on_the_documentation_corpus_by_part(tmp_path: Path) -> None:
    pytest.importorskip("langchain_text_splitters")
    pytest.importorskip("matplotlib")
    from ragloom.embed import HashingEmbedder
    from ragloom.evaluate import run_suite

    folder = corpus(tmp_path / "corpus")
    result, _ = run_suite("chunking", data=tmp_path, out=tmp_path / "out", embedder=HashingEmbedder(),
                          options={"dataset": "docs", "corpus": str(folder)})
    assert {"recall python", "iou python", "recall linux", "iou linux", "vs recursive"} <= set(result.columns)
    lifted = next(r for r in result.rows if r["configuration"] == "ragloom boundary 400 + sentence lift")
    assert 0 <= lifted["recall python"] <= 100 and lifted["vs recursive"] != ""
    assert any(n.startswith("Dataset: docs") for n in result.notes)


def chroma_layout(root: Path, questions: str = "questions_df.csv") -> Path:
    """Chroma's general_evaluation_data layout (corpora/ and questions_df.csv), from the shared copy."""
    source = shared_data() / "chunking-eval"
    shutil.copytree(source / "corpora", root / "corpora")
    shutil.copy(source / "questions.csv", root / questions)
    return root


@pytest.mark.parametrize("where", ["shared", "folder", "chroma", "file"])
def test_the_chunking_evaluation_is_read_from_any_of_its_layouts(tmp_path: Path, where: str) -> None:
    root = {"shared": shared_data, "folder": lambda: shared_data() / "chunking-eval",
            "chroma": lambda: chroma_layout(tmp_path), "file": lambda: chroma_layout(tmp_path) / "questions_df.csv"}[where]()
    data = load_chunking_eval(root)
    assert set(data.corpora) == {"chatlogs", "state_of_the_union"} and len(data.questions) == 132
    for q in data.questions:  # every reference span is a place in its corpus, as the questions say
        assert q.corpus in data.corpora and all(0 <= a < b <= len(data.corpora[q.corpus]) for a, b in q.references)


def test_a_chunking_evaluation_that_is_not_there_says_where_it_looked(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no chunking-eval data at .*: looked for corpora and questions.csv or "
                                          r"corpora and questions_df.csv in .*chunking-eval and in .*; pass --data"):
        load_chunking_eval(tmp_path)
    root = chroma_layout(tmp_path / "chroma")
    (root / "corpora" / "chatlogs.md").unlink()
    with pytest.raises(ConfigError, match=r"does not hold: chatlogs.md; put them there"):
        load_chunking_eval(root)
    (root / "questions_df.csv").write_text("question,corpus\nWhat?,chatlogs\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"questions_df.csv \(KeyError: 'references'\); it needs the columns"):
        load_chunking_eval(root)


def test_the_chunking_suite_runs_on_chromas_own_layout(tmp_path: Path) -> None:
    pytest.importorskip("langchain_text_splitters")
    pytest.importorskip("matplotlib")
    from ragloom.embed import HashingEmbedder
    from ragloom.evaluate import run_suite

    result, _ = run_suite("chunking", data=chroma_layout(tmp_path / "data"), out=tmp_path / "out", limit=4,
                          embedder=HashingEmbedder())
    assert any("4 questions over 2 documents" in note for note in result.notes)
    assert all(0 <= row["recall"] <= 100 for row in result.rows) and any(row["recall"] > 0 for row in result.rows)


def test_the_contextual_set_is_read_from_the_shared_folder_or_anthropics_layout(tmp_path: Path) -> None:
    for name in ("codebase_chunks.json", "evaluation_set.jsonl"):
        shutil.copy(shared_data() / "contextual" / name, tmp_path / name)  # the guide's data/ folder
    shared, own = load_contextual(shared_data()), load_contextual(tmp_path)
    assert len(own.documents) == 90 and len(own.queries) == 248 and own == shared
    (tmp_path / "evaluation_set.jsonl").unlink()
    with pytest.raises(ConfigError, match=r"no contextual data at .*codebase_chunks.json and evaluation_set.jsonl"):
        load_contextual(tmp_path)
