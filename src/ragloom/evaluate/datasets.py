"""The evaluation datasets: loaded from where they live, never copied into the project."""

from __future__ import annotations

import csv
import json
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from ragloom.errors import ConfigError


def shared_data(explicit: str | Path | None = None) -> Path:
    """``explicit``, else ``$RAGLOOM_SHARED_DATA``, else ``../shared/data`` beside the checkout."""
    candidates = [Path(explicit)] if explicit else []
    if os.environ.get("RAGLOOM_SHARED_DATA"):
        candidates.append(Path(os.environ["RAGLOOM_SHARED_DATA"]))
    candidates += [Path.cwd().parent / "shared" / "data", Path(__file__).resolve().parents[4] / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c
    raise ConfigError("evaluation data not found (looked in " + ", ".join(map(str, candidates))
                      + "); pass --data DIR or set RAGLOOM_SHARED_DATA")


@dataclass(frozen=True)
class SpanQuestion:
    question: str
    corpus: str
    references: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class ChunkingEval:
    """Chroma's chunking evaluation: corpora and questions with reference character spans."""

    corpora: dict[str, str]
    questions: tuple[SpanQuestion, ...]


def load_chunking_eval(root: Path, *, limit: int | None = None) -> ChunkingEval:
    folder = root / "chunking-eval"
    corpora = {p.stem: p.read_text(encoding="utf-8") for p in sorted((folder / "corpora").glob("*.md"))}
    questions = []
    with open(folder / "questions.csv", encoding="utf-8", newline="") as f:
        for row in csv.DictReader(f):
            refs = json.loads(row["references"])
            spans = tuple((int(r["start_index"]), int(r["end_index"])) for r in refs)
            questions.append(SpanQuestion(row["question"], row["corpus_id"], spans))
    if limit is not None:
        questions = questions[:limit]
    return ChunkingEval(corpora, tuple(questions))


def find_spans(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Where each piece occurs, searching from just after the previous one (pieces overlap).

    A piece found nowhere in ``text`` (a splitter that changed the text) is left out.
    """
    spans, position = [], 0
    for piece in pieces:
        start = text.find(piece, position)
        if start < 0:
            start = text.find(piece)
        if start < 0:
            continue
        spans.append((start, start + len(piece)))
        position = start + 1
    return spans


@dataclass(frozen=True)
class CodeDocument:
    uuid: str
    doc_id: str
    path: str  # "repo/relative/path" when the evaluation set names it, else the doc id
    text: str
    chunks: tuple[tuple[int, int], ...]  # the dataset's own chunks, as spans of text


@dataclass(frozen=True)
class CodeQuery:
    query: str
    golden: tuple[tuple[str, int], ...]  # (document uuid, chunk index)


@dataclass(frozen=True)
class ContextualEval:
    """Anthropic's contextual-retrieval codebase: documents, their chunks and the queries."""

    documents: tuple[CodeDocument, ...]
    queries: tuple[CodeQuery, ...]


def load_contextual(root: Path, *, limit: int | None = None) -> ContextualEval:
    folder = root / "contextual"
    raw = json.loads((folder / "codebase_chunks.json").read_text(encoding="utf-8"))
    queries, paths = [], {}
    with open(folder / "evaluation_set.jsonl", encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            for doc in item.get("golden_documents", []):
                meta = doc.get("meta", {})
                if meta.get("relative_path"):
                    paths[doc["uuid"]] = f"{meta.get('repo_name', '')}{meta['relative_path']}"
            queries.append(CodeQuery(item["query"], tuple((u, int(i)) for u, i in item["golden_chunk_uuids"])))
    documents = []
    for doc in raw:
        text = doc["content"]
        # Every chunk of the dataset is found in its document, so spans keep the chunk indexes.
        spans = find_spans(text, [c["content"] for c in sorted(doc["chunks"], key=lambda c: c["original_index"])])
        documents.append(CodeDocument(doc["original_uuid"], doc["doc_id"], paths.get(doc["original_uuid"], doc["doc_id"]),
                                      text, tuple(spans)))
    if limit is not None:
        keep = queries[:limit]
        wanted = {u for q in keep for u, _ in q.golden}
        # A slice keeps the documents its queries need plus a few others to search among.
        extra = [d.uuid for d in documents if d.uuid not in wanted][: max(5, limit)]
        documents = [d for d in documents if d.uuid in wanted or d.uuid in extra]
        queries = keep
    return ContextualEval(tuple(documents), tuple(queries))


@dataclass(frozen=True)
class SectionQuery:
    query: str
    category: str  # cross-section | document-specific | single-section
    expected: tuple[tuple[str, str], ...]  # (file name, section path suffix)


@dataclass
class AbSet:
    queries: list[SectionQuery] = field(default_factory=list)


def load_ab(path: Path) -> AbSet:
    """Queries for the sample materials, with the sections they should find (examples/ab_queries.toml)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    queries: list[SectionQuery] = []
    for q in data["query"]:
        expected = tuple(_section(e) for e in q["expected"])
        queries.append(SectionQuery(q["text"], q["category"], expected))
    return AbSet(queries)


def _section(expected: str) -> tuple[str, str]:
    """``"file.md#Section"`` -> ``("file.md", "Section")``; ``"file.md"`` -> ``("file.md", "")``."""
    name, _, section = expected.partition("#")
    return name, section

