"""``ragloom eval chunking``: ragloom's chunkers beside LangChain's splitters on Chroma's
chunking evaluation (recall, precision and IoU of reference character spans at k = 5).

Every configuration chunks both corpora, its chunks are embedded with the same model (the
local all-MiniLM-L6-v2), and for each question the five chunks most similar to it, over one
index of both corpora, are its context. LangChain returns strings, not offsets; their spans
are found in the corpus in order, as the original evaluation does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict

import numpy as np

from ragloom.chunk import get_chunker
from ragloom.enrich.prefix import PrefixBuilder
from ragloom.evaluate.context import EvalContext, cosine_top
from ragloom.evaluate.datasets import ChunkingEval, find_spans, load_chunking_eval
from ragloom.evaluate.metrics import span_scores
from ragloom.evaluate.report import SuiteResult, bar_chart
from ragloom.types import Document

K = 5

#: One configuration's line of the table: recall, precision and IoU in percent.
ChunkingRow = TypedDict("ChunkingRow", {
    "configuration": str, "family": str, "chunks": int, "mean chars": int,
    "recall": float, "precision": float, "iou": float,
})


@dataclass(frozen=True)
class Config:
    name: str
    family: str  # ragloom | langchain
    split: Callable[[str, str], list[tuple[int, int, str]]]  # (corpus name, text) -> (start, end, text to embed)


def ragloom_config(name: str, strategy: str, *, contextual: bool = False, **params: object) -> Config:
    chunker = get_chunker(strategy, **params)
    prefix = PrefixBuilder()

    def split(corpus: str, text: str) -> list[tuple[int, int, str]]:
        chunks = chunker.chunk(text)
        if not contextual:
            return [(c.start, c.end, c.text) for c in chunks]
        doc = Document(text, f"/{corpus}.md", corpus.replace("_", " ").title(), "eval", "eval", "text/markdown",
                       datetime.now(UTC), corpus, "", "Transcript" if "chat" in corpus else "Speech")
        return [(c.start, c.end, prefix(doc, c.section_path) + c.text) for c in chunks]

    return Config(name, "ragloom", split)


def langchain_config(kind: str, size: int, overlap: int) -> Config:
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

    return Config(name, "langchain", split)


def configurations() -> list[Config]:
    configs = [
        ragloom_config("ragloom token 1024/150 (default)", "token"),
        ragloom_config("ragloom token 256/32", "token", chunk_size=256, chunk_overlap=32),
        ragloom_config("ragloom token 128/16", "token", chunk_size=128, chunk_overlap=16),
        ragloom_config("ragloom token 64/0", "token", chunk_size=64, chunk_overlap=0),
        ragloom_config("ragloom boundary 800 (default)", "boundary"),
        ragloom_config("ragloom boundary 400", "boundary", target_size=400, min_size=250, max_size=600, overlap=50),
        ragloom_config("ragloom boundary 250", "boundary", target_size=250, min_size=150, max_size=400, overlap=0),
        ragloom_config("ragloom boundary 250, contextual", "boundary", contextual=True, target_size=250, min_size=150,
                       max_size=400, overlap=0),
        ragloom_config("ragloom sentence", "sentence"),
    ]
    for size, overlap in ((250, 125), (200, 0), (400, 200), (800, 400)):
        configs.append(langchain_config("recursive", size, overlap))
        configs.append(langchain_config("token", size, overlap))
    return configs


def run(ctx: EvalContext, configs: list[Config] | None = None) -> SuiteResult:
    started = time.perf_counter()
    data: ChunkingEval = load_chunking_eval(ctx.data, limit=ctx.limit)
    questions = [q.question for q in data.questions]
    question_vectors = ctx.embed(questions)
    rows: list[ChunkingRow] = []
    details: dict[str, dict[str, list[dict[str, float]]]] = {}
    chosen = {c.name: c for c in configs or configurations()}
    for name in ctx.steps(list(chosen)):
        config = chosen[name]
        spans: list[tuple[int, int]] = []
        corpora: list[str] = []
        texts: list[str] = []
        for corpus, text in data.corpora.items():
            for start, end, embedded in config.split(corpus, text):
                spans.append((start, end))
                corpora.append(corpus)
                texts.append(embedded)
        vectors = ctx.embed(texts)
        scores: list[dict[str, float]] = []
        for q, qv in zip(data.questions, question_vectors, strict=True):
            top = cosine_top(qv, vectors, K)
            # Every retrieved chunk counts in the denominator; only the question's corpus can hit.
            retrieved = [spans[i] if corpora[i] == q.corpus else (-1 - i, -1 - i + (spans[i][1] - spans[i][0]))
                         for i in top]
            scores.append(span_scores(q.references, retrieved))
        mean = {m: 100 * float(np.mean([s[m] for s in scores])) for m in ("recall", "precision", "iou")}
        size = np.mean([b - a for a, b in spans]) if spans else 0
        rows.append({"configuration": config.name, "family": config.family, "chunks": len(spans),
                     "mean chars": round(float(size)), "recall": mean["recall"], "precision": mean["precision"],
                     "iou": mean["iou"]})
        details[config.name] = {"per_question": scores}
    result = SuiteResult(
        "chunking", ["configuration", "chunks", "mean chars", "recall", "precision", "iou"], rows,
        details=details, seconds=time.perf_counter() - started,
    )
    result.notes += _verdict(rows)
    result.plots.append(bar_chart(ctx.out / "chunking.png", [r["configuration"] for r in rows],
                                  {"recall": [r["recall"] for r in rows], "IoU × 10": [10 * r["iou"] for r in rows]},
                                  title="Chunking evaluation (k = 5)", ylabel="score"))
    return result


def _verdict(rows: Sequence[ChunkingRow]) -> list[str]:
    """The target: a ragloom configuration with recall at least LangChain's best and IoU above
    every LangChain configuration."""
    peers = [r for r in rows if r["family"] == "langchain"]
    ours = [r for r in rows if r["family"] == "ragloom"]
    if not peers or not ours:
        return []
    best_recall = max(r["recall"] for r in peers)
    best_iou = max(r["iou"] for r in peers)
    winners = [r["configuration"] for r in ours if r["recall"] >= best_recall and r["iou"] > best_iou]
    notes = [f"LangChain's best recall {best_recall:.1f}, best IoU {best_iou:.2f}."]
    if winners:
        notes.append("Target met by: " + "; ".join(winners))
    else:
        best = max(ours, key=lambda r: r["iou"])
        notes.append(f"Target not met: no ragloom configuration has both. Highest ragloom IoU: "
                     f"{best['configuration']} ({best['iou']:.2f}, recall {best['recall']:.1f}).")
    return notes
