"""The search for fusion and prefix settings on the contextual set's tuning half (issue 17).

    .venv/bin/python bench/contextual_tuning.py [--half tune]

``ragloom eval contextual`` splits ../shared/data/contextual by file (seed 17, half of each
repository's files on each side; :func:`ragloom.evaluate.contextual.split_files`). This script
looks at one half only (the tuning half unless told otherwise) and measures, with the default
embedder (cached in ~/.cache/ragloom/eval) and ragloom's own store and fusion:

- the fusion grid: ``rrf_k`` x BM25 weight x candidates per retriever (reciprocal-rank fusion,
  :func:`ragloom.retrieve.base.reciprocal_rank_fusion`, as the ``hybrid`` mode runs it);
- score fusion instead of ranks: ``alpha * bm25 / max + (1 - alpha) * cosine / max``;
- document-level evidence: a chunk's fused score plus ``beta`` times the best fused score
  of its file;
- neighbour evidence: plus ``gamma`` times the better of its two neighbours' scores;
- query-side identifier splitting (``DiffExecutor`` also as "diff executor" in the BM25 query);
- the prefix template without its ``Type:`` field (a second index);
- the names a chunk defines added to its prefix (its section path ends with ``defines
  AVLogGetLevel, ...``; a second index);
- the question's opening words ("How does the", "What is") dropped before it is embedded;
- file evidence from a second index holding each file whole (its BM25 and dense ranks fused into
  a file score added to its chunks');
- an exact-name boost: a chunk whose file stem or enclosing definition the query names gets a
  small bonus (a tie-break);
- pseudo-relevance feedback (Rocchio): the vector search asked again with the query's
  embedding moved towards the mean of the default ranking's top chunks.

The vector and BM25 rankings of each query are read once (top 200, as the hybrid mode's two
searches read them) and fused in Python; the rows that change only the queries share one index.
The whole script takes a little under two minutes.
Writes ``bench/results/contextual_tuning.json`` (``contextual_tuning_report.json`` with
``--half report``: the same rows on the half they were not chosen on).
"""

from __future__ import annotations

import argparse
import itertools
import re
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from common import SHARED, save
from ragloom.chunk.preset import PresetSpan
from ragloom.config import EmbeddingSettings
from ragloom.embed import embedder_from_settings
from ragloom.engine import Engine
from ragloom.enrich.search_text import search_text
from ragloom.evaluate import contextual as suite
from ragloom.evaluate.context import default_cache
from ragloom.evaluate.datasets import load_contextual
from ragloom.evaluate.metrics import pass_at_k
from ragloom.retrieve.base import SearchRequest, reciprocal_rank_fusion
from ragloom.retrieve.basic import SearchOptions
from ragloom.retrieve.basic import vector as vector_search
from ragloom.types import Document

KS = (5, 10, 20)
DEPTH = 200
Ranking = list[dict[str, Any]]


@contextmanager
def index(template: str | None = None,
          spans_of: Callable[[Document, list[PresetSpan]], list[PresetSpan]] | None = None) -> Iterator[
        tuple[Engine, dict[str, tuple[str, int]]]]:
    """The contextual set in a fresh workspace, and chunk id -> (file uuid, chunk index);
    ``template`` replaces the prefix template, ``spans_of`` changes each document's chunks."""
    data = load_contextual(SHARED)
    docs, spans, uuid_of = suite.documents(data)
    if spans_of is not None:
        spans = {d.document_id: spans_of(d, spans[d.document_id]) for d in docs}
    embedder = embedder_from_settings(EmbeddingSettings().model_copy(update={"cache": True}), default_cache())
    settings = suite._settings("contextual", {})
    if template is not None:
        settings = settings.with_overrides(prefix__template=template)
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Path(tmp) / "ws", settings=settings, embedder=embedder)
        engine.add_documents(docs, spans=spans)
        rows = engine.store.chunks("default", columns=["chunk_id", "document_id", "chunk_index"])
        yield engine, {r["chunk_id"]: (uuid_of[r["document_id"]], int(r["chunk_index"])) for r in rows}


def search(engine: Engine, queries: Sequence[str], *, split_queries: bool = False,
           vector_queries: Sequence[str] | None = None) -> list[tuple[Ranking, Ranking]]:
    """(vector rows, BM25 rows) per query; the vector search asks ``vector_queries`` when given,
    the BM25 search has the query's identifiers split with ``split_queries``."""
    out = []
    for q, vq in zip(queries, vector_queries or queries, strict=True):
        # The vector ranking as the vector mode makes it (each chunk with its best sentence).
        vector = [{"chunk_id": r.chunk_id, "_score": r.score} for r in engine.query(vq, mode="vector", k=DEPTH)]
        text = engine.store.text_search("default", search_text(q) if split_queries else q, DEPTH)
        out.append((vector, text))
    return out


def rankings(template: str | None, queries: Sequence[str],
             spans_of: Callable[[Document, list[PresetSpan]], list[PresetSpan]] | None = None) -> tuple[
        list[tuple[Ranking, Ranking]], dict[str, tuple[str, int]]]:
    """:func:`search` in an index of its own (another prefix template, other chunks), and its
    chunk id -> (file uuid, chunk index)."""
    with index(template, spans_of) as (engine, where):
        return search(engine, queries), where


def feedback(engine: Engine, queries: Sequence[str], runs: Sequence[tuple[Ranking, Ranking]],
             tries: Sequence[tuple[int, float]]) -> dict[tuple[int, float], list[tuple[Ranking, Ranking]]]:
    """Pseudo-relevance feedback (Rocchio): for each (m, b) in ``tries``, the vector search asked
    again with the query's embedding plus ``b`` times the mean embedding of the default hybrid
    ranking's top ``m`` chunks (normalised), and fused with the same BM25 ranking."""
    out: dict[tuple[int, float], list[tuple[Ranking, Ranking]]] = {t: [] for t in tries}
    fused = rrf()
    rows = engine.store.chunks("default", columns=["chunk_id", "vector"], with_vectors=True)
    unit = {r["chunk_id"]: np.asarray(r["vector"], dtype=np.float32) / np.linalg.norm(r["vector"]) for r in rows}
    options = SearchOptions(sentence_weight=engine.settings.retrieval.sentence_weight)
    for q, (vector_rows, text) in zip(queries, runs, strict=True):
        order = fused(vector_rows, text)
        own = np.asarray(engine.embedder.embed_query(q), dtype=np.float32)
        for m, b in tries:
            moved = own / np.linalg.norm(own) + b * np.mean([unit[c] for c in order[:m]], axis=0)
            request = SearchRequest(text=q, store=engine.store, embedder=engine.embedder, tenant="default",
                                    settings=engine.settings, options=options, k=DEPTH,
                                    query_vector=moved / np.linalg.norm(moved))
            again = [{"chunk_id": r.chunk_id, "_score": r.score} for r in vector_search(request)]
            out[(m, b)].append((again, text))
    return out


Ranker = Callable[[Ranking, Ranking], list[str]]


def rrf(rrf_k: int = 60, candidates: int = 50, bm25: float = 1.0, beta: float = 0.0, gamma: float = 0.0,
        where: Mapping[str, tuple[str, int]] | None = None) -> Ranker:
    def rank(vector: Ranking, text: Ranking) -> list[str]:
        fused = reciprocal_rank_fusion({"vector": vector[:candidates], "bm25": text[:candidates]}, k=rrf_k,
                                       weights={"vector": 1.0, "bm25": bm25})
        score = {row["chunk_id"]: s for row, s, _ in fused}
        if (beta or gamma) and where is not None:
            best: dict[str, float] = {}
            at = {where[c]: s for c, s in score.items()}
            for c, s in score.items():
                best[where[c][0]] = max(best.get(where[c][0], 0.0), s)
            score = {c: s + beta * best[where[c][0]]
                     + gamma * max(at.get((where[c][0], where[c][1] - 1), 0.0), at.get((where[c][0], where[c][1] + 1), 0.0))
                     for c, s in score.items()}
        return sorted(score, key=lambda c: -score[c])
    return rank


def convex(alpha: float, candidates: int = 50) -> Ranker:
    def rank(vector: Ranking, text: Ranking) -> list[str]:
        def share(rows: Ranking) -> dict[str, float]:
            top = max((float(r["_score"]) for r in rows), default=1.0) or 1.0
            return {r["chunk_id"]: float(r["_score"]) / top for r in rows}
        v, t = share(vector[:candidates]), share(text[:candidates])
        score = {c: (1 - alpha) * v.get(c, 0.0) + alpha * t.get(c, 0.0) for c in v.keys() | t.keys()}
        return sorted(score, key=lambda c: (-score[c], c))  # ties by id: the union is a set
    return rank


#: A definition's name (types, functions, methods) in the common languages, roughly.
_DEFINES = (
    re.compile(r"^[ \t]*(?:(?:pub(?:\([^)]*\))?|public|private|protected|static|final|abstract|export|default|async|"
               r"unsafe|const|virtual|inline|override)\s+)*(?:class|struct|enum|trait|interface|record|namespace|module|"
               r"impl|fn|def|func|function|type|object|fun)\s+(?:<[^>]*>\s*)?([A-Za-z_]\w*)", re.M),
    re.compile(r"^[ \t]*(?:[\w:<>\[\],*&]+[ \t]+)+?([A-Za-z_]\w*)[ \t]*\([^;{}]*\)[ \t\w,.]*(?:\{|$)", re.M),
)
_NOT_NAMES = {"if", "for", "while", "switch", "return", "catch", "new", "else", "sizeof", "match", "assert", "print"}


def defined_names(text: str, limit: int = 10) -> list[str]:
    """The names the definitions in ``text`` introduce, in order, at most ``limit``."""
    names: list[str] = []
    for pattern in _DEFINES:
        names.extend(m.group(1) for m in pattern.finditer(text) if m.group(1) not in _NOT_NAMES)
    return list(dict.fromkeys(names))[:limit]


def with_defines(document: Document, spans: list[PresetSpan]) -> list[PresetSpan]:
    """Each chunk's section path ends with the names it defines, so the prefix carries them."""
    out: list[PresetSpan] = []
    for start, end, path in spans:
        names = defined_names(document.text[start:end])
        out.append((start, end, (*path, "defines " + ", ".join(names)) if names else path))
    return out


def whole_files(document: Document, spans: list[PresetSpan]) -> list[PresetSpan]:
    """One chunk per file, the whole file."""
    return [(0, len(document.text), ())]


_QUESTION = re.compile(r"^(?:how (?:does|do|can|is|are)|what (?:is|are|does|do)|which|why (?:does|do|is)|"
                       r"where (?:is|are|does))\s+(?:the\s+|a\s+|an\s+|you\s+|i\s+)?", re.I)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_KINDS = {"class", "impl", "fn", "def", "struct", "for", "namespace", "enum", "trait", "interface", "mod", "func",
          "type", "record", "object", "module", "function"}


def query_names(query: str) -> set[str]:
    """Identifier-like words of a query, lower-cased: an inner capital, an underscore, or backticks."""
    names = {w.strip("`") for w in re.findall(r"`[^`]+`", query)}
    names |= {w for w in _NAME.findall(query) if re.search(r"[a-z][A-Z]|_|[A-Z][a-z]+[A-Z]", w)}
    return {n.rstrip("()").lower() for n in names}


def chunk_names(title: str, section_path: str) -> set[str]:
    """A chunk's file stem and the names of the definitions enclosing it, lower-cased."""
    names = {title.rsplit("/", 1)[-1].split(".")[0].lower()}
    for part in section_path.split(" > ") if section_path else ():
        names |= {w.lower() for w in _NAME.findall(part) if w not in _KINDS}
    return names


def pass_rates(orders: Sequence[Sequence[str]], golden: Sequence[Sequence[tuple[str, int]]],
               where: Mapping[str, tuple[str, int]]) -> dict[int, float]:
    """Pass@k in percent of each query's ranked chunk ids."""
    scores: dict[int, list[float]] = {k: [] for k in KS}
    for order, gold in zip(orders, golden, strict=True):
        ranked = [where[c] for c in order]
        for k in KS:
            scores[k].append(pass_at_k(list(gold), ranked, k))
    return {k: round(100 * float(np.mean(v)), 1) for k, v in scores.items()}


def measure(ranker: Ranker, runs: Sequence[tuple[Ranking, Ranking]], golden: Sequence[Sequence[tuple[str, int]]],
            where: Mapping[str, tuple[str, int]]) -> dict[int, float]:
    return pass_rates([ranker(vector, text) for vector, text in runs], golden, where)


def measure_with(runs: Sequence[tuple[Ranking, Ranking]], golden: Sequence[Sequence[tuple[str, int]]],
                 where: Mapping[str, tuple[str, int]], bonuses: Sequence[Mapping[str, float]]) -> dict[int, float]:
    """The default hybrid fusion with a per-query bonus added to chunks' scores (a chunk outside
    both retrievers' candidates has its bonus alone)."""
    def ranked(vector: Ranking, text: Ranking, bonus: Mapping[str, float]) -> list[str]:
        score = {row["chunk_id"]: s for row, s, _ in reciprocal_rank_fusion(
            {"vector": vector[:50], "bm25": text[:50]}, k=60)}
        total = {c: score.get(c, 0.0) + bonus.get(c, 0.0) for c in score.keys() | bonus.keys()}
        return sorted(total, key=lambda c: (-total[c], c))
    return pass_rates([ranked(v, t, b) for (v, t), b in zip(runs, bonuses, strict=True)], golden, where)


def half_from_arguments(description: str) -> tuple[str, list[Any]]:
    """The half ``--half`` names (the tuning half unless told) and its queries, as the suite splits them."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--half", choices=("tune", "report"), default="tune")
    half = parser.parse_args().half
    data = load_contextual(SHARED)
    halves = suite.split_files(data.documents)
    chosen = [q for q in data.queries if suite.query_half(q, halves) == half]
    print(f"{half} half: {len(chosen)} queries")
    return half, chosen


def main() -> None:
    half, chosen = half_from_arguments(__doc__ or "")
    texts, golden = [q.query for q in chosen], [q.golden for q in chosen]
    results: dict[str, Any] = {"half": half, "queries": len(chosen), "seed": suite.SPLIT_SEED}

    # Every row that changes only the queries (or their fusion) searches this one index.
    tries = [(5, 0.0)] + [(m, b) for m in (3, 5, 10) for b in (0.3, 0.6, 1.0)]
    with index() as (engine, where):
        runs = search(engine, texts)
        split_runs = search(engine, texts, split_queries=True)
        cleaned = search(engine, texts, vector_queries=[_QUESTION.sub("", t).rstrip("?") for t in texts])
        moved = feedback(engine, texts, runs, tries)

    def row(name: str, ranker: Ranker, store: dict[str, Any], r: Sequence[tuple[Ranking, Ranking]] = runs) -> None:
        store[name] = measure(ranker, r, golden, where)
        print(f"{name:60s} " + "  ".join(f"{store[name][k]:5.1f}" for k in KS))

    single: dict[str, Any] = {}
    row("vector", lambda v, t: [r["chunk_id"] for r in v], single)
    row("bm25", lambda v, t: [r["chunk_id"] for r in t], single)
    row("hybrid, the defaults (rrf_k 60, equal weights, 50 candidates)", rrf(), single)
    results["single"] = single

    grid: list[dict[str, Any]] = []
    for rrf_k, bm25, candidates in itertools.product((5, 10, 15, 20, 30, 60), (1.0, 1.25, 1.5, 2.0), (20, 50, 100)):
        grid.append({"rrf_k": rrf_k, "bm25": bm25, "candidates": candidates,
                     **{f"Pass@{k}": v for k, v in measure(rrf(rrf_k, candidates, bm25), runs, golden, where).items()}})
    results["grid"] = grid
    # The choice: the best Pass@10, ties broken by Pass@5, then Pass@20, keeping 50 candidates.
    best = max((g for g in grid if g["candidates"] == 50), key=lambda g: (g["Pass@10"], g["Pass@5"], g["Pass@20"]))
    results["chosen"] = best
    print(f"chosen (50 candidates): rrf_k {best['rrf_k']}, BM25 weight {best['bm25']}: "
          f"{best['Pass@5']} / {best['Pass@10']} / {best['Pass@20']}")
    for name, values in (("rrf_k", (5, 10, 15, 20, 30, 60)), ("bm25", (1.0, 1.25, 1.5, 2.0)),
                         ("candidates", (20, 50, 100))):
        print(f"  mean Pass@10 over the grid by {name}: "
              + ", ".join(f"{v}: {np.mean([g['Pass@10'] for g in grid if g[name] == v]):.1f}" for v in values))

    other: dict[str, Any] = {}
    for alpha in (0.4, 0.5, 0.6, 0.7):
        row(f"score fusion, alpha {alpha}", convex(alpha), other)
    for beta in (0.25, 0.5, 1.0):
        row(f"rrf_k 60 + document evidence, beta {beta}", rrf(beta=beta, where=where), other)
        row(f"rrf_k 15 + document evidence, beta {beta}", rrf(15, beta=beta, where=where), other)
    for gamma in (0.1, 0.2, 0.5):
        row(f"rrf_k 60 + neighbour evidence, gamma {gamma}", rrf(gamma=gamma, where=where), other)
        row(f"rrf_k 15 + neighbour evidence, gamma {gamma}", rrf(15, gamma=gamma, where=where), other)
    row("query identifiers split, rrf_k 60", rrf(), other, split_runs)
    row("query identifiers split, rrf_k 15", rrf(15), other, split_runs)
    no_type, no_type_where = rankings("[Document: {title} - Section: {section}]", texts)
    other["prefix without Type, rrf_k 60"] = measure(rrf(), no_type, golden, no_type_where)
    other["prefix without Type, rrf_k 15"] = measure(rrf(15), no_type, golden, no_type_where)
    for name in ("prefix without Type, rrf_k 60", "prefix without Type, rrf_k 15"):
        print(f"{name:60s} " + "  ".join(f"{other[name][k]:5.1f}" for k in KS))
    # Tried after the grid, still on this half only (docs/benchmarks.md, "tried on the tuning half").
    defines, defines_where = rankings(None, texts, spans_of=with_defines)
    other["prefix + the names the chunk defines"] = measure(rrf(), defines, golden, defines_where)
    other["question words dropped before embedding"] = measure(rrf(), cleaned, golden, where)
    files, files_where = rankings(None, texts, spans_of=whole_files)
    file_of = {c: w[0] for c, w in where.items()}
    for weight in (0.25, 0.5, 1.0):
        rows = []
        for file_vector, file_text in files:
            fused = {files_where[r["chunk_id"]][0]: s for r, s, _ in reciprocal_rank_fusion(
                {"vector": file_vector, "bm25": file_text}, k=60)}
            rows.append({c: weight * fused.get(f, 0.0) for c, f in file_of.items()})
        other[f"file evidence (whole files, rrf), weight {weight}"] = measure_with(runs, golden, where, rows)
    docs, spans, uuid_of = suite.documents(load_contextual(SHARED))
    at = {(uuid_of[d.document_id], i): chunk_names(d.title, " > ".join(path))
          for d in docs for i, (_, _, path) in enumerate(spans[d.document_id])}
    info = {c: at[w] for c, w in where.items()}
    for bonus in (0.002, 0.005, 0.01):
        rows = [{c: bonus * len(query_names(t) & names) for c, names in info.items()} for t in texts]
        other[f"exact-name bonus {bonus}"] = measure_with(runs, golden, where, rows)
    for (m, b), again in moved.items():
        name = "feedback off (the same search, b 0)" if not b else f"feedback, top {m} chunks, b {b}"
        other[name] = measure(rrf(), again, golden, where)
    for name in [n for n in other if n.startswith(("prefix +", "question", "file evidence", "exact-name", "feedback"))]:
        print(f"{name:60s} " + "  ".join(f"{other[name][k]:5.1f}" for k in KS))
    results["other"] = other
    print(f"wrote {save(f'contextual_tuning_{half}' if half != 'tune' else 'contextual_tuning', results)}")


if __name__ == "__main__":
    main()
