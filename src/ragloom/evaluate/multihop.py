"""``ragloom eval multihop``: multi-hop retrieval on HotpotQA's distractor paragraphs.

The protocol of ``../shared/data/README.md`` ("hotpot-dev"): every paragraph of the question
file goes into one workspace, a document per paragraph with its title as the heading; each
question is asked of every retrieval mode, and its top ``k`` results count when they hold both
of its supporting paragraphs (``both@k``), and for the share of them they hold
(``recall@k``), for ``k`` = 2, 5 and 10; the mean time per query is kept too. Bridge questions
(the second paragraph is reached through an entity the first names) and comparison questions
(two named subjects) are also reported apart: a chunk graph should help the first kind.

``--data`` is the shared data folder, another file of HotpotQA questions in the same format
(the held-out check), or a folder holding one. With ``--limit N`` only the first N questions
are asked, over their own paragraphs only.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.config import Settings
from ragloom.engine import Engine
from ragloom.errors import ConfigError
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.report import SuiteResult, bar_chart
from ragloom.load import document_id
from ragloom.types import Document

#: The shared question file, relative to the data folder.
DATA_FILE = Path("hotpot-dev") / "hotpot_dev_distractor_50.json"
KS = (2, 5, 10)
TYPES = ("bridge", "comparison")
LENS = "wikipedia"
#: Row name -> (retrieval mode, the mode's own options). ``balanced`` is left out: over one lens
#: it is ``hybrid`` cut to ``chunks_per_lens`` results.
MODES: dict[str, tuple[str, dict[str, Any]]] = {
    "vector": ("vector", {}),
    "bm25": ("bm25", {}),
    "hybrid": ("hybrid", {}),
    "graph": ("graph", {}),
    # What each part of graph mode adds (issue 17): every edge kind followed, as before it;
    # entity edges only, without linking the query's names; the query's names only.
    "graph, every edge kind": ("graph", {"follow": "all"}),
    "graph, no query names": ("graph", {"query_entities": False}),
    "graph, no edges followed": ("graph", {"follow": "none"}),
    "window": ("window", {}),
    "dynamic": ("dynamic", {}),
}


@dataclass(frozen=True)
class HotpotQuestion:
    """One question: its type, the titles of its two supporting paragraphs, and its ten
    paragraphs as (title, text)."""

    question: str
    answer: str
    type: str
    supporting: tuple[str, ...]
    paragraphs: tuple[tuple[str, str], ...]


def question_file(data: Path) -> Path:
    """The question file ``data`` names: the file itself, the shared folder's
    :data:`DATA_FILE`, or the one ``*.json`` file of a folder."""
    if data.is_file():
        return data
    if (data / DATA_FILE).is_file():
        return data / DATA_FILE
    found = sorted(data.glob("*.json")) if data.is_dir() else []
    if len(found) == 1:
        return found[0]
    raise ConfigError(f"no HotpotQA question file at {data} (looked for {DATA_FILE} and a single *.json there); "
                      "pass --data FILE")


def _paragraphs(context: Any) -> list[tuple[str, str]]:  # noqa: ANN401 - either of HotpotQA's layouts
    """(title, text) pairs from a question's ``context``: ``{"title": [...], "sentences": [...]}``
    (the Hugging Face layout) or ``[[title, sentences], ...]`` (the original one)."""
    pairs = zip(context["title"], context["sentences"], strict=True) if isinstance(context, Mapping) else context
    return [(str(title), "".join(sentences).strip()) for title, sentences in pairs]


def _supporting(facts: Any) -> tuple[str, ...]:  # noqa: ANN401 - either of HotpotQA's layouts
    titles = facts["title"] if isinstance(facts, Mapping) else [fact[0] for fact in facts]
    return tuple(dict.fromkeys(str(t) for t in titles))


def load_hotpot(path: Path, *, limit: int | None = None) -> list[HotpotQuestion]:
    """The questions of a HotpotQA distractor file (a JSON list), the first ``limit`` of them."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read the HotpotQA questions {path} ({exc}); pass --data FILE") from exc
    if not isinstance(raw, list):
        raise ConfigError(f"{path}: expected a JSON list of HotpotQA questions")
    questions = []
    for item in raw[:limit] if limit is not None else raw:
        try:
            questions.append(HotpotQuestion(str(item["question"]), str(item.get("answer", "")), str(item["type"]),
                                            _supporting(item["supporting_facts"]), tuple(_paragraphs(item["context"]))))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigError(f"{path}: a question without question, type, supporting_facts and context "
                              f"in HotpotQA's format ({exc!r})") from exc
    return questions


def documents(questions: Sequence[HotpotQuestion]) -> list[Document]:
    """A document per distinct paragraph, its title as the heading (a title seen twice keeps
    its first text: HotpotQA repeats a paragraph whole)."""
    texts: dict[str, str] = {}
    for q in questions:
        for title, text in q.paragraphs:
            texts.setdefault(title, text)
    at = datetime(2024, 1, 1, tzinfo=UTC)
    return [Document(text=f"# {title}\n\n{text}\n", source_path=f"/eval/hotpot/{i:05d}.md", title=title, lens=LENS,
                     tenant="default", media_type="text/markdown", modified_at=at,
                     document_id=document_id("default", f"hotpot:{title}"), file_hash=str(i))
            for i, (title, text) in enumerate(texts.items())]


def scores(supporting: Sequence[str], ranked: Sequence[str]) -> dict[str, float]:
    """``both@k`` (1 or 0) and ``recall@k`` of one question, ``ranked`` being the titles of its
    results in order (one per result, repeats included)."""
    out: dict[str, float] = {}
    wanted = set(supporting)
    for k in KS:
        found = wanted & set(ranked[:k])
        out[f"both@{k}"] = float(found == wanted)
        out[f"recall@{k}"] = len(found) / len(wanted) if wanted else 0.0
    return out


def _settings(overrides: Mapping[str, Any]) -> Settings:
    # The defaults a user gets, so that the numbers are those of an ordinary workspace.
    return Settings.load(environ={}, overrides={"embedding.cache": False, **overrides})


def _mean(values: Sequence[float]) -> float:
    return 100 * float(np.mean(values)) if values else 0.0


def run(ctx: EvalContext) -> SuiteResult:
    started = time.perf_counter()
    path = question_file(ctx.data)
    questions = load_hotpot(path, limit=ctx.limit)
    docs = documents(questions)
    title_of = {d.document_id: d.title for d in docs}
    rows: list[dict[str, object]] = []
    details: dict[str, Any] = {"file": str(path), "questions": [q.question for q in questions]}
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Path(tmp) / "ws", settings=_settings(ctx.overrides), embedder=ctx.embedder)
        ctx.progress(f"ingesting {len(docs)} paragraphs")
        engine.add_documents(docs, progress=ctx.tracker)
        engine.query(questions[0].question if questions else "warm up", k=1)  # the first query loads the model
        for name in ctx.steps(list(MODES)):
            mode, options = MODES[name]
            per_question: list[dict[str, float]] = []
            seconds: list[float] = []
            ranks: list[list[str]] = []
            for q in questions:
                t0 = time.perf_counter()
                found = engine.query(q.question, k=max(KS), mode=mode, **options)
                seconds.append(time.perf_counter() - t0)
                ranked = [title_of.get(r.document_id, "") for r in found.results]
                per_question.append(scores(q.supporting, ranked))
                ranks.append(ranked)
            row: dict[str, object] = {"mode": name}
            for k in KS:
                row[f"both@{k}"] = _mean([s[f"both@{k}"] for s in per_question])
            row["recall@10"] = _mean([s["recall@10"] for s in per_question])
            for kind in TYPES:
                chosen = [s for s, q in zip(per_question, questions, strict=True) if q.type == kind]
                for k in (5, 10):
                    row[f"{kind} both@{k}"] = _mean([s[f"both@{k}"] for s in chosen]) if chosen else None
            row["ms/query"] = 1000 * float(np.mean(seconds)) if seconds else 0.0
            rows.append(row)
            details[name] = {"scores": per_question, "ranked": ranks, "seconds": seconds}
    columns = ["mode", *(f"both@{k}" for k in KS), "recall@10", *(f"{kind} both@{k}" for kind in TYPES for k in (5, 10)),
               "ms/query"]
    result = SuiteResult("multihop", columns, rows, details=details, seconds=time.perf_counter() - started)
    counts = {kind: sum(q.type == kind for q in questions) for kind in TYPES}
    result.notes.append(f"{len(questions)} questions ({counts['bridge']} bridge, {counts['comparison']} comparison) "
                        f"from {path.name}, {len(docs)} paragraphs in one workspace, a document each; both@k: both "
                        "supporting paragraphs in the top k results.")
    result.notes.append("The graph rows below 'graph' take one part away each: following every edge kind (as "
                        "graph mode did before issue 17), linking the titles the question names, following any "
                        "edge at all.")
    by_name = {str(r["mode"]): r for r in rows}
    if "graph" in by_name and "hybrid" in by_name:
        gain = {k: float(by_name["graph"][f"both@{k}"]) - float(by_name["hybrid"][f"both@{k}"])  # type: ignore[arg-type]
                for k in (5, 10)}
        result.notes.append(f"graph over hybrid: {gain[5]:+.1f} points on both@5, {gain[10]:+.1f} on both@10 "
                            f"(target +5 on each: {'met' if min(gain.values()) >= 5 else 'not met'}).")
    result.plots.append(bar_chart(ctx.out / "multihop.png", [str(r["mode"]) for r in rows],
                                  {f"both@{k}": [float(r[f"both@{k}"]) for r in rows] for k in KS},  # type: ignore[arg-type]
                                  title="Multi-hop retrieval on HotpotQA (both supporting paragraphs in the top k)",
                                  ylabel="% of questions"))
    return result
