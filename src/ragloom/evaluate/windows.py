"""``ragloom eval windows``: seed 003's three-way benchmark on Chroma's chunking evaluation.

- **A** naive token chunks, 256 tokens with 20 overlap (no sentence-aware cuts), top 5;
- **B** the fixed sentence window, 3 sentences per side (across sections, as LlamaIndex
  does), grown from the top 5 sentences;
- **C** the dynamic semantic window, threshold 0.75, grown from the top 5 sentences; and C
  with the query floor, with the adaptive threshold, with both, and from more seeds.

Per question and strategy: the context's token count (cl100k), its intra-cluster similarity
(mean pairwise cosine of its sentences), its boundary coherence (spans that start and end on
sentence boundaries; share of the sentences it touches that it holds whole), and recall,
precision and IoU of the reference spans. Answer F1 needs a language model and is left out
when none is configured.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from ragloom.config import Settings
from ragloom.engine import Engine
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.datasets import SpanQuestion, load_chunking_eval
from ragloom.evaluate.metrics import boundary_coherence, mean_pairwise_cosine, span_scores
from ragloom.evaluate.report import SuiteResult, _pyplot
from ragloom.tokens import get_tokenizer

K = 5
#: Name -> (retrieval mode, the mode's own options for ``Engine.query``; ``k`` overrides K).
STRATEGIES: dict[str, tuple[str, dict[str, Any]]] = {
    "A naive chunks 256/20": ("vector", {}),
    "B fixed window 3": ("window", {"window": 3, "cross_sections": True}),
    "C dynamic 0.75": ("dynamic", {"threshold": 0.75}),
    "C dynamic 0.75 + query floor 0.3": ("dynamic", {"threshold": 0.75, "query_floor": 0.3}),
    "C dynamic, adaptive (median)": ("dynamic", {"adaptive": True, "adaptive_quantile": 0.5}),
    "C dynamic, adaptive + query floor": ("dynamic", {"adaptive": True, "adaptive_quantile": 0.5, "query_floor": 0.3}),
    # Two more points on the tokens-recall frontier, found while looking for B's recall.
    "C dynamic, adaptive (lower quartile)": ("dynamic", {"adaptive": True, "adaptive_quantile": 0.25}),
    "C dynamic 0.0 + query floor 0.3": ("dynamic", {"threshold": 0.0, "query_floor": 0.3}),
    # More seed sentences buy recall with tokens; these sit on the same frontier as B.
    "C dynamic 0.75, top 20 sentences": ("dynamic", {"threshold": 0.75, "top_k": 20, "k": 20}),
    "C dynamic 0.0 + query floor 0.3, top 10 sentences": ("dynamic", {"threshold": 0.0, "query_floor": 0.3,
                                                                     "top_k": 10, "k": 10}),
}

#: One strategy's line of the table: recall, precision, IoU and the boundary shares in percent.
WindowsRow = TypedDict("WindowsRow", {
    "strategy": str, "tokens": float, "recall": float, "precision": float, "iou": float, "intra-similarity": float,
    "starts and ends on sentences": float, "complete sentences": float,
})
Span = tuple[int, int]


def run(ctx: EvalContext) -> SuiteResult:
    started = time.perf_counter()
    data = load_chunking_eval(ctx.data, limit=ctx.limit)
    tokenizer = get_tokenizer("cl100k_base")
    settings = Settings.load(environ={}, overrides={
        "embedding.embed_text": "naked", "embedding.cache": False, "graph.enabled": False,
        "entities.enabled": False, "chunking.chunk_size": 256, "chunking.chunk_overlap": 20,
        "chunking.boundary_window": 0.0, "sentences.top_k": K, **ctx.overrides,
    })
    # Per strategy, one record per question: tokens, intra_similarity, boundary_*, recall, precision, iou.
    per_strategy: dict[str, list[dict[str, float]]] = {name: [] for name in STRATEGIES}
    with tempfile.TemporaryDirectory() as tmp:
        corpus_dir = Path(tmp) / "corpora"
        corpus_dir.mkdir()
        for name, text in data.corpora.items():
            (corpus_dir / f"{name}.md").write_text(text, encoding="utf-8")
        engine = Engine(Path(tmp) / "ws", settings=settings, embedder=ctx.embedder)
        ctx.progress("ingesting the corpora (chunks and sentences)")
        engine.ingest(corpus_dir, lens="eval", progress=ctx.tracker)
        doc_of = {Path(d["source_path"]).stem: d["document_id"] for d in engine.store.documents("default")}
        sentences = {doc: sorted(engine.store.chunks("default", table="sentences", document_ids=[doc], with_vectors=True,
                                                     columns=["start_char", "end_char", "vector"]),
                                 key=lambda r: r["start_char"]) for doc in doc_of.values()}
        spans_of = {doc: [(r["start_char"], r["end_char"]) for r in rows] for doc, rows in sentences.items()}
        vectors_of = {doc: np.stack([np.asarray(r["vector"], dtype=np.float32) for r in rows])
                      for doc, rows in sentences.items()}
        examples: dict[str, list[Span]] = {}
        for name in ctx.steps(list(STRATEGIES)):
            mode, options = STRATEGIES[name]
            for q in data.questions:
                query_options: dict[str, Any] = {"k": K, **options}
                found = engine.query(q.question, mode=mode, **query_options)
                doc = doc_of[q.corpus]
                retrieved = [(r.start, r.end) if r.document_id == doc else (-10**9 - r.start, -10**9 - r.start + len(r.text))
                             for r in found]
                texts = [r.text for r in found]
                sims: list[float] = []
                for r in found:  # one pass over the document's sentences: those the result holds whole
                    inside = [i for i, (s, e) in enumerate(spans_of[r.document_id]) if r.start <= s and e <= r.end]
                    if inside:
                        sims.append(mean_pairwise_cosine(vectors_of[r.document_id][inside]))
                coherence = boundary_coherence([(r.start, r.end) for r in found if r.document_id == doc], spans_of[doc])
                record: dict[str, float] = {
                    "tokens": tokenizer.count("\n\n".join(texts)), "intra_similarity": float(np.mean(sims)) if sims else 1.0,
                    **{f"boundary_{k}": v for k, v in coherence.items()}, **span_scores(q.references, retrieved)}
                per_strategy[name].append(record)
                if q is data.questions[0]:
                    examples[name] = [(r.start, r.end) for r in found if r.document_id == doc]
    rows: list[WindowsRow] = []
    for name, records in per_strategy.items():
        mean = {k: float(np.mean([r[k] for r in records])) for k in records[0]}
        rows.append({"strategy": name, "tokens": round(mean["tokens"], 1), "recall": 100 * mean["recall"],
                     "precision": 100 * mean["precision"], "iou": 100 * mean["iou"],
                     "intra-similarity": round(mean["intra_similarity"], 3),
                     "starts and ends on sentences": 100 * mean["boundary_starts_and_ends"],
                     "complete sentences": 100 * mean["boundary_complete_sentences"]})
    columns = ["strategy", "tokens", "recall", "precision", "iou", "intra-similarity", "starts and ends on sentences",
               "complete sentences"]
    result = SuiteResult("windows", columns, rows, details={"per_question": per_strategy},
                         seconds=time.perf_counter() - started)
    result.notes += _verdict(rows)
    result.notes.append("Answer F1 needs a language model; none is configured, so it is not measured.")
    first = data.questions[0]
    result.plots.append(_tokens_vs_recall(ctx.out / "windows_tokens_recall.png", rows, per_strategy))
    result.plots.append(_similarity_curve(ctx.out / "windows_curve.png", first, spans_of[doc_of[first.corpus]],
                                          vectors_of[doc_of[first.corpus]], examples))
    return result


def _verdict(rows: Sequence[WindowsRow]) -> list[str]:
    notes: list[str] = []
    by = {r["strategy"]: r for r in rows}
    a, b = by["A naive chunks 256/20"], by["B fixed window 3"]
    for name, row in by.items():
        if not name.startswith("C"):
            continue
        fewer = row["tokens"] < b["tokens"]
        recall = row["recall"] >= b["recall"]
        iou = row["iou"] > a["iou"]
        notes.append(f"{name}: {row['tokens']:.0f} tokens vs {b['tokens']:.0f} for B "
                     f"({'fewer' if fewer else 'more'}), recall {row['recall']:.1f} vs {b['recall']:.1f} "
                     f"({'equal or better' if recall else 'worse'}), IoU {row['iou']:.1f} vs {a['iou']:.1f} "
                     f"for A ({'better' if iou else 'worse'}).")
    return notes


def _tokens_vs_recall(path: Path, rows: Sequence[WindowsRow],
                      per_strategy: Mapping[str, Sequence[Mapping[str, float]]]) -> str:
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 5))
    for row in rows:
        records = per_strategy[row["strategy"]]
        ax.scatter([r["tokens"] for r in records], [100 * r["recall"] for r in records], s=8, alpha=0.25)
        ax.scatter([row["tokens"]], [row["recall"]], s=80, marker="D", edgecolors="black",
                   label=f"{row['strategy']} ({row['tokens']:.0f} tok, {row['recall']:.0f}%)")
    ax.set_xlabel("context tokens (cl100k)")
    ax.set_ylabel("recall of reference spans (%)")
    ax.set_title("Tokens against recall: each dot a question, diamonds the means")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)


def _similarity_curve(path: Path, question: SpanQuestion, spans: Sequence[Span], vectors: np.ndarray,
                      examples: Mapping[str, Sequence[Span]]) -> str:
    """Adjacent-sentence similarity along the document, the reference spans, and the windows each
    strategy chose for the first question."""
    plt = _pyplot()
    sims = np.sum(vectors[:-1] * vectors[1:], axis=1)
    centre = [s for s, _ in spans][: len(sims)]
    refs = question.references
    lo = max(0, min(a for a, _ in refs) - 2500)
    hi = max(b for _, b in refs) + 2500
    fig, ax = plt.subplots(figsize=(10, 5))
    shown = [(x, y) for x, y in zip(centre, sims, strict=False) if lo <= x <= hi]
    ax.plot([x for x, _ in shown], [y for _, y in shown], color="gray", linewidth=1, label="similarity to next sentence")
    ax.axhline(0.75, color="gray", linestyle=":", linewidth=1)
    for a, b in refs:
        ax.axvspan(a, b, color="gold", alpha=0.4)
    for level, (name, windows) in enumerate(examples.items()):
        y = -0.1 - 0.08 * level
        for a, b in windows:
            if b >= lo and a <= hi:
                ax.plot([max(a, lo), min(b, hi)], [y, y], linewidth=5, solid_capstyle="butt",
                        color=f"C{level}", label=name if (a, b) == windows[0] else None)
    ax.set_xlim(lo, hi)
    ax.set_xlabel("character offset in the document")
    ax.set_ylabel("cosine similarity")
    ax.set_title(f"“{question.question[:70]}” — reference in gold, windows below")
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return str(path)
