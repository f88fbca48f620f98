"""The context optimiser against plain concatenation of the same candidates.

    .venv/bin/python bench/optimizer_quality.py [--candidates 20] [--budget 4000]

For every question of ../shared/data/chunking-eval (chunks: ragloom ``token`` 256/64, whose
overlap makes neighbouring chunks repeat each other) and of ../shared/data/contextual (the
dataset's chunks), the top 20 hybrid results are the candidates. Plain concatenation sends
them all, best first; the optimiser sends what it keeps within the budget (4,000 tokens minus
the 500 reserved). Per question:

- redundancy: the share of the context's characters that repeat characters already in it
  (the same document characters twice, or a chunk whose 5-word shingles are mostly in an
  earlier one);
- token efficiency: characters of the reference spans (golden chunks) per context token,
  counted on the same footing for both (the chunks' text joined by blank lines), and for the
  optimiser also on its whole formatted context (header, numbered source lines, relations);
- recall: the share of the reference characters the context holds.

Also the time to optimise 200 candidates (median of 20 runs, the tokenizer already loaded).
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from common import SHARED, markdown_table, save
from ragloom.config import Settings
from ragloom.engine import Engine
from ragloom.evaluate import contextual as contextual_suite
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.datasets import load_chunking_eval, load_contextual
from ragloom.evaluate.metrics import intersection, length, union
from ragloom.tokens import get_tokenizer

_WORDS = re.compile(r"\w+")


def shingles(text: str, n: int = 5) -> set[tuple[str, ...]]:
    words = _WORDS.findall(text.lower())
    return {tuple(words[i : i + n]) for i in range(max(1, len(words) - n + 1))}


def redundancy(chunks: list) -> float:
    """Share of characters repeating earlier ones: span overlaps within a document, and chunks
    whose 5-word shingles are at least 70% contained in what came before."""
    total = sum(len(c.text) for c in chunks)
    if not total:
        return 0.0
    seen_spans: dict[str, list[tuple[int, int]]] = {}
    seen_shingles: set[tuple[str, ...]] = set()
    repeated = 0
    for c in chunks:
        spans = union(seen_spans.get(c.document_id, []))
        overlap = intersection(spans, [(c.start, c.end)])
        own = shingles(c.text)
        if own and len(own & seen_shingles) / len(own) >= 0.7:
            overlap = max(overlap, len(c.text))
        repeated += overlap
        seen_spans.setdefault(c.document_id, []).append((c.start, c.end))
        seen_shingles |= own
    return repeated / total


def measure(chunks: list, references: dict[str, list[tuple[int, int]]], tokens: int) -> dict[str, float]:
    covered = {}
    for c in chunks:
        covered.setdefault(c.document_id, []).append((c.start, c.end))
    found = sum(intersection(union(refs), union(covered.get(doc, []))) for doc, refs in references.items())
    total = sum(length(union(refs)) for refs in references.values())
    return {"redundancy": redundancy(chunks), "efficiency": found / tokens if tokens else 0.0,
            "recall": found / total if total else 0.0, "tokens": tokens}


def compare(engine: Engine, questions: list[tuple[str, dict[str, list[tuple[int, int]]]]], k: int,
            budget: int) -> dict[str, dict[str, float]]:
    tok = get_tokenizer("cl100k_base")
    plain, optimised = [], []
    for text, references in questions:
        results = engine.query(text, k=k, mode="hybrid").results
        plain.append(measure(results, references, tok.count("\n\n".join(r.text for r in results))))
        context = engine.optimize(results, text, budget=budget)
        row = measure(list(context.chunks), references, tok.count("\n\n".join(c.text for c in context.chunks)))
        formatted = measure(list(context.chunks), references, context.total_tokens)
        row.update(formatted_tokens=formatted["tokens"], formatted_efficiency=formatted["efficiency"])
        optimised.append(row)
    mean = lambda rows: {m: float(np.mean([r[m] for r in rows])) for m in rows[0]}  # noqa: E731
    return {"plain": mean(plain), "optimised": mean(optimised)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--candidates", type=int, default=20)
    parser.add_argument("--budget", type=int, default=4000)
    args = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        ctx = EvalContext(SHARED, Path(tmp) / "out")
        # Chunking evaluation: token chunks with a large overlap, the corpora as two documents.
        data = load_chunking_eval(SHARED)
        folder = Path(tmp) / "corpora"
        folder.mkdir()
        for name, text in data.corpora.items():
            (folder / f"{name}.md").write_text(text, encoding="utf-8")
        settings = Settings.load(environ={}, overrides={"embedding.cache": False, "chunking.chunk_size": 256,
                                                        "chunking.chunk_overlap": 64, "sentences.enabled": False})
        engine = Engine(Path(tmp) / "ws1", settings=settings, embedder=ctx.embedder)
        engine.ingest(folder, lens="eval")
        doc_of = {Path(d["source_path"]).stem: d["document_id"] for d in engine.store.documents("default")}
        questions = [(q.question, {doc_of[q.corpus]: list(q.references)}) for q in data.questions]
        results["chunking-eval"] = compare(engine, questions, args.candidates, args.budget)
        # Contextual retrieval: the dataset's chunks; the references are the golden chunks' spans.
        code = load_contextual(SHARED)
        docs, spans, uuid_of = contextual_suite.documents(code)
        engine = Engine(Path(tmp) / "ws2", settings=contextual_suite._settings("contextual"), embedder=ctx.embedder)
        engine.add_documents(docs, spans=spans)
        by_uuid = {d.uuid: d for d in code.documents}
        id_of = {uuid: doc for doc, uuid in uuid_of.items()}
        questions = []
        for q in code.queries:
            refs: dict[str, list[tuple[int, int]]] = {}
            for uuid, index in q.golden:
                refs.setdefault(id_of[uuid], []).append(by_uuid[uuid].chunks[index])
            questions.append((q.query, refs))
        results["contextual"] = compare(engine, questions, args.candidates, args.budget)
        # Speed: 200 candidates.
        many = engine.query("How are errors handled when a request fails?", k=200, mode="hybrid").results
        engine.optimize(many, "warm up")
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            engine.optimize(many, "How are errors handled when a request fails?")
            times.append(time.perf_counter() - t0)
        timing = {"candidates": len(many), "median_ms": 1000 * statistics.median(times), "max_ms": 1000 * max(times)}
    rows = []
    for name, r in results.items():
        p, o = r["plain"], r["optimised"]
        rows.append([name, f"{100 * p['redundancy']:.1f}% → {100 * o['redundancy']:.1f}%",
                     f"{100 * (1 - o['redundancy'] / p['redundancy']):.0f}%" if p["redundancy"] else "n/a",
                     f"{p['efficiency']:.2f} → {o['efficiency']:.2f}",
                     f"{100 * (o['efficiency'] / p['efficiency'] - 1):+.0f}%" if p["efficiency"] else "n/a",
                     f"{100 * (o['formatted_efficiency'] / p['efficiency'] - 1):+.0f}%" if p["efficiency"] else "n/a",
                     f"{100 * p['recall']:.1f}% → {100 * o['recall']:.1f}%",
                     f"{100 * o['recall'] / p['recall']:.1f}%" if p["recall"] else "n/a",
                     f"{p['tokens']:.0f} → {o['tokens']:.0f} ({o['formatted_tokens']:.0f} formatted)"])
    table = markdown_table(["candidates from", "redundancy", "less redundancy", "reference chars per token",
                            "efficiency gain", "gain, formatted", "recall", "recall kept", "tokens"], rows)
    print(table)
    print(f"optimising {timing['candidates']} candidates: median {timing['median_ms']:.1f} ms, max {timing['max_ms']:.1f} ms")
    save("optimizer_quality", {"results": results, "timing": timing, "table": table})


if __name__ == "__main__":
    main()
