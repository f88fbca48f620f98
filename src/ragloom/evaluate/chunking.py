"""``ragloom eval chunking``: ragloom's chunkers beside LangChain's splitters on Chroma's
chunking evaluation (recall, precision and IoU of reference character spans at k = 5).

Every configuration chunks the corpora, its chunks are embedded with the same model (the local
all-MiniLM-L6-v2), and for each question the five chunks most similar to it, over one index of
all corpora, are its context. LangChain returns strings, not offsets; their spans are found in
the corpus in order, as the original evaluation does.

Two datasets (the ``dataset`` option): ``chroma``, the shared corpora and questions (chat logs
and a speech), and ``docs``, the documentation corpus with questions derived mechanically (see
:func:`~ragloom.evaluate.datasets.load_doc_questions`). Each reports recall and IoU per *part*
(a corpus, or the corpus's top folder) too, so that a setting chosen on one part can be
reported on another. Configurations marked "+ sentence lift" rank chunks as ragloom's vector
search does by default (:mod:`ragloom.retrieve.lift`): each chunk's cosine mixed with its best
sentence's. The verdict compares every configuration with LangChain's recursive splitter at
equal IoU: the best recall any recursive configuration reaches at that IoU or higher.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.chunk import get_chunker
from ragloom.enrich.prefix import PrefixBuilder
from ragloom.errors import InvalidParameterError
from ragloom.evaluate.context import EvalContext, cosine_top
from ragloom.evaluate.datasets import ChunkingEval, find_spans, load_chunking_eval, load_doc_questions
from ragloom.evaluate.metrics import span_scores
from ragloom.evaluate.report import SuiteResult, bar_chart
from ragloom.parse.sentences import sentence_spans
from ragloom.retrieve.lift import best_sentence_scores, lifted
from ragloom.types import Document

K = 5
#: The weight of a chunk's best sentence in the "+ sentence lift" rows (retrieval.sentence_weight's
#: default, fixed before it was measured).
LIFT_WEIGHT = 0.5
DATASETS = ("chroma", "docs")
#: Where ``bash ../shared/data/get_doc_corpus.sh`` puts the documentation corpus, from the checkout.
DOC_CORPUS = Path("bench/data/doc-corpus/corpus")

#: One configuration's line of the table: recall, precision and IoU in percent, overall and per part.
ChunkingRow = dict[str, Any]


@dataclass(frozen=True)
class Config:
    name: str
    family: str  # ragloom | langchain
    split: Callable[[str, str], list[tuple[int, int, str]]]  # (corpus name, text) -> (start, end, text to embed)
    #: Rank chunks with their best sentence (ragloom's default vector search), not their own cosine only.
    lift: bool = False


def ragloom_config(name: str, strategy: str, *, contextual: bool = False, lift: bool = False,
                   **params: object) -> Config:
    chunker = get_chunker(strategy, **params)
    prefix = PrefixBuilder()

    def split(corpus: str, text: str) -> list[tuple[int, int, str]]:
        chunks = chunker.chunk(text)
        if not contextual:
            return [(c.start, c.end, c.text) for c in chunks]
        doc = Document(text, f"/{corpus}.md", corpus.replace("_", " ").title(), "eval", "eval", "text/markdown",
                       datetime.now(UTC), corpus, "", "Transcript" if "chat" in corpus else "Speech")
        return [(c.start, c.end, prefix(doc, c.section_path) + c.text) for c in chunks]

    return Config(name, "ragloom", split, lift)


def langchain_config(kind: str, size: int, overlap: int, *, lift: bool = False) -> Config:
    from ragloom.tokens import ensure_tiktoken_offline

    ensure_tiktoken_offline()
    from langchain_text_splitters import RecursiveCharacterTextSplitter, TextSplitter, TokenTextSplitter

    splitter: TextSplitter
    if kind == "recursive":
        splitter = RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
        name = f"LangChain RecursiveCharacterTextSplitter {size}/{overlap}"
    else:
        splitter = TokenTextSplitter(encoding_name="cl100k_base", chunk_size=size, chunk_overlap=overlap)
        name = f"LangChain TokenTextSplitter {size}/{overlap}"

    def split(corpus: str, text: str) -> list[tuple[int, int, str]]:
        # A piece that a splitter changed is left out (none of the measured splitters change text).
        return [(a, b, text[a:b]) for a, b in find_spans(text, splitter.split_text(text))]

    return Config(name + (" + sentence lift" if lift else ""), "langchain", split, lift)


def configurations() -> list[Config]:
    configs = [
        ragloom_config("ragloom token 1024/150 (default)", "token"),
        ragloom_config("ragloom token 256/32", "token", chunk_size=256, chunk_overlap=32),
        ragloom_config("ragloom token 128/16", "token", chunk_size=128, chunk_overlap=16),
        ragloom_config("ragloom boundary 800", "boundary"),
        ragloom_config("ragloom boundary 400", "boundary", target_size=400, min_size=250, max_size=600, overlap=50),
        ragloom_config("ragloom boundary 250", "boundary", target_size=250, min_size=150, max_size=400, overlap=0),
        ragloom_config("ragloom boundary 250, contextual", "boundary", contextual=True, target_size=250, min_size=150,
                       max_size=400, overlap=0),
        ragloom_config("ragloom sentence", "sentence"),
        ragloom_config("ragloom token 256/32 + sentence lift", "token", lift=True, chunk_size=256, chunk_overlap=32),
        ragloom_config("ragloom boundary 800 + sentence lift", "boundary", lift=True),
        ragloom_config("ragloom boundary 400 + sentence lift", "boundary", lift=True, target_size=400, min_size=250,
                       max_size=600, overlap=50),
        ragloom_config("ragloom boundary 250 + sentence lift", "boundary", lift=True, target_size=250, min_size=150,
                       max_size=400, overlap=0),
    ]
    for size, overlap in ((200, 0), (250, 125), (400, 0), (400, 200), (800, 400), (1600, 800)):
        configs.append(langchain_config("recursive", size, overlap))
    for size, overlap in ((250, 125), (400, 200)):
        configs.append(langchain_config("token", size, overlap))
    # The lift with LangChain's chunks: how much of a lifted row's gain is the retrieval's.
    configs.append(langchain_config("recursive", 400, 0, lift=True))
    return configs


def load(ctx: EvalContext, dataset: str, corpus: str | None) -> tuple[ChunkingEval, Callable[[str], str]]:
    """The dataset's corpora and questions, and the part each corpus belongs to."""
    if dataset == "chroma":
        return load_chunking_eval(ctx.data, limit=ctx.limit), lambda name: name
    if dataset == "docs":
        folder = Path(corpus) if corpus else DOC_CORPUS
        if not folder.is_dir() and not folder.is_absolute():
            folder = Path(__file__).resolve().parents[3] / folder  # from the checkout, wherever the command runs
        return load_doc_questions(folder, limit=ctx.limit), lambda name: name.split("/", 1)[0]
    raise InvalidParameterError(f"unknown chunking dataset {dataset!r}; choose one of: {', '.join(DATASETS)}")


class _Sentences:
    """Every corpus's sentences, embedded once, for the "+ sentence lift" rows."""

    def __init__(self, ctx: EvalContext, corpora: dict[str, str]) -> None:
        self.spans = {name: sentence_spans(text, 0, len(text), max_chars=2000) for name, text in corpora.items()}
        self.vectors = {name: ctx.embed([corpora[name][a:b] for a, b in spans]) for name, spans in self.spans.items()}

    def best(self, query: np.ndarray, spans: Sequence[tuple[int, int]], corpora: Sequence[str]) -> np.ndarray:
        """For each chunk, its best sentence's cosine with ``query``."""
        out = np.full(len(spans), -1.0)
        for name, sentences in self.spans.items():
            rows = [i for i, c in enumerate(corpora) if c == name]
            if not rows or not sentences:
                continue
            starts = np.array([a for a, _ in sentences])
            ends = np.array([b for _, b in sentences])
            out[rows] = best_sentence_scores(starts, ends, self.vectors[name] @ query, [spans[i] for i in rows])
        return out


def run(ctx: EvalContext, configs: list[Config] | None = None, *, dataset: str = "chroma",
        corpus: str | None = None) -> SuiteResult:
    started = time.perf_counter()
    data, part_of = load(ctx, dataset, corpus)
    parts = sorted({part_of(q.corpus) for q in data.questions})
    question_vectors = ctx.embed([q.question for q in data.questions])
    rows: list[ChunkingRow] = []
    details: dict[str, dict[str, list[dict[str, float]]]] = {}
    chosen = {c.name: c for c in configs or configurations()}
    sentences = _Sentences(ctx, data.corpora) if any(c.lift for c in chosen.values()) else None
    for name in ctx.steps(list(chosen)):
        config = chosen[name]
        spans: list[tuple[int, int]] = []
        corpora: list[str] = []
        texts: list[str] = []
        for corpus_name, text in data.corpora.items():
            for start, end, embedded in config.split(corpus_name, text):
                spans.append((start, end))
                corpora.append(corpus_name)
                texts.append(embedded)
        vectors = ctx.embed(texts)
        scores: list[dict[str, float]] = []
        for q, qv in zip(data.questions, question_vectors, strict=True):
            if config.lift and sentences is not None:
                ranked = lifted(vectors @ qv, sentences.best(qv, spans, corpora), LIFT_WEIGHT)
                top = np.argsort(-ranked, kind="stable")[:K]
            else:
                top = cosine_top(qv, vectors, K)
            # Every retrieved chunk counts in the denominator; only the question's corpus can hit.
            retrieved = [spans[i] if corpora[i] == q.corpus else (-1 - i, -1 - i + (spans[i][1] - spans[i][0]))
                         for i in top]
            scores.append(span_scores(q.references, retrieved))
        row: ChunkingRow = {"configuration": config.name, "family": config.family, "chunks": len(spans),
                            "mean chars": round(float(np.mean([b - a for a, b in spans]))) if spans else 0}
        row |= {m: 100 * float(np.mean([s[m] for s in scores])) for m in ("recall", "precision", "iou")}
        for part in parts:
            mine = [s for s, q in zip(scores, data.questions, strict=True) if part_of(q.corpus) == part]
            row[f"recall {part}"] = 100 * float(np.mean([s["recall"] for s in mine]))
            row[f"iou {part}"] = 100 * float(np.mean([s["iou"] for s in mine]))
        rows.append(row)
        details[config.name] = {"per_question": scores}
    _against_recursive(rows, parts)
    columns = ["configuration", "chunks", "mean chars", "recall", "precision", "iou",
               *(f"{m} {p}" for p in parts for m in ("recall", "iou")), "vs recursive"]
    result = SuiteResult("chunking", columns, rows, details=details, seconds=time.perf_counter() - started)
    result.notes.append(f"Dataset: {dataset} ({len(data.questions)} questions over {len(data.corpora)} documents; "
                        f"parts: {', '.join(parts)}).")
    result.notes += _verdict(rows)
    result.plots.append(bar_chart(ctx.out / "chunking.png", [r["configuration"] for r in rows],
                                  {"recall": [r["recall"] for r in rows], "IoU × 10": [10 * r["iou"] for r in rows]},
                                  title=f"Chunking evaluation, {dataset} (k = 5)", ylabel="score"))
    return result


def recursive_frontier(points: Sequence[tuple[float, float]]) -> tuple[list[float], list[float]]:
    """(IoU, recall) points of LangChain's recursive splitter as a frontier: at each IoU, the best
    recall any configuration reaches at that IoU or higher (sorted by IoU)."""
    xs: list[float] = []
    ys: list[float] = []
    best = -1.0
    for iou, recall in sorted(points, key=lambda p: -p[0]):
        if recall > best:
            best = recall
            xs.append(iou)
            ys.append(recall)
    return xs[::-1], ys[::-1]


def recall_at(frontier: tuple[list[float], list[float]], iou: float, lowest: float) -> float | None:
    """The frontier's recall at ``iou`` (interpolated between its points; below its lowest IoU,
    its best recall); None outside the IoU the measured configurations span (``lowest`` being
    the lowest IoU any of them reached), where there is nothing to compare with."""
    xs, ys = frontier
    if not xs or not lowest <= iou <= xs[-1]:
        return None
    if iou <= xs[0]:
        return ys[0]
    return float(np.interp(iou, xs, ys))


def _against_recursive(rows: list[ChunkingRow], parts: Sequence[str]) -> None:
    """Each row's recall minus the recursive frontier's at the row's IoU, per part; the column
    "vs recursive" is their mean over the parts where the row's IoU is within the frontier."""
    recursive = [r for r in rows if r["configuration"].startswith("LangChain RecursiveCharacterTextSplitter")
                 and not r["configuration"].endswith("lift")]
    for row in rows:
        gaps = []
        for part in parts:
            points = [(r[f"iou {part}"], r[f"recall {part}"]) for r in recursive]
            reference = recall_at(recursive_frontier(points), row[f"iou {part}"], min(p[0] for p in points))
            if reference is not None:
                gaps.append(row[f"recall {part}"] - reference)
        row["vs recursive"] = f"{np.mean(gaps):+.1f}" if gaps else "n/a"


def _verdict(rows: Sequence[ChunkingRow]) -> list[str]:
    """The target: recall above LangChain's recursive splitter's at equal IoU."""
    ahead = [r["configuration"] for r in rows
             if r["family"] == "ragloom" and r["vs recursive"] != "n/a" and float(r["vs recursive"]) > 0]
    return ["'vs recursive': recall minus what LangChain's recursive splitter reaches at the same IoU (its best "
            "configuration at that IoU or higher), in points, averaged over the parts.",
            "ragloom configurations ahead of the recursive splitter at equal IoU: "
            + ("; ".join(ahead) if ahead else "none") + "."]
