"""The sample materials as numbered sources, built the way the engine builds them: the real
loader, the boundary chunker, exact offsets. Also real contradictions between them, found by
the real analyser."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ragloom.analyse.contradictions import Contradiction, detect_contradictions, sentences_with_claims
from ragloom.chunk import chunk_text
from ragloom.load import load_document
from ragloom.parse.sentences import sentence_spans
from ragloom.synthesise import Source, number_sources
from ragloom.types import Document, ScoredChunk

MATERIALS = Path(__file__).resolve().parents[2] / "examples" / "materials"
AUTHORITY = ("your-voice", "business-framework", "team-structured", "team-conversational", "engineering",
             "external-analyst")


@dataclass(frozen=True)
class Corpus:
    documents: dict[str, Document]  # by document id
    chunks: tuple[ScoredChunk, ...]
    sources: tuple[Source, ...]

    def text_of(self, document_id: str) -> str:
        return self.documents[document_id].text

    def by_lens(self, lens: str) -> list[Source]:
        return [s for s in self.sources if s.lens == lens]


def scored_chunks(document: Document, *, strategy: str = "boundary") -> list[ScoredChunk]:
    chunks = chunk_text(document.text, strategy)
    return [
        ScoredChunk(chunk_id=f"{document.document_id}:{i}", document_id=document.document_id, text=c.text,
                    score=round(1.0 - i / (len(chunks) + 1), 3), source_path=document.source_path, lens=document.lens,
                    tenant="default", title=document.title, section_path=c.section_path, start=c.start, end=c.end,
                    token_count=c.token_count, chunk_index=i, total_chunks=len(chunks),
                    document_date=document.document_date)
        for i, c in enumerate(chunks)
    ]


@lru_cache(maxsize=1)
def corpus() -> Corpus:
    """Every Markdown file of the sample materials, lens from its folder."""
    documents: dict[str, Document] = {}
    chunks: list[ScoredChunk] = []
    for path in sorted(MATERIALS.rglob("*.md")):
        document = load_document(path, lens=path.parent.name)
        documents[document.document_id] = document
        chunks.extend(scored_chunks(document))
    return Corpus(documents, tuple(chunks), tuple(number_sources(chunks)))


def contradictions(documents: dict[str, Document], chunks: tuple[ScoredChunk, ...],
                   key_terms: tuple[str, ...] = ("catalog integration", "catalog", "integration", "quickbooks"),
                   ) -> list[Contradiction]:
    """What the analyser finds between the documents' sentences about ``key_terms``."""
    chunk_rows = [{"chunk_id": c.chunk_id, "document_id": c.document_id, "lens": c.lens, "start_char": c.start,
                   "end_char": c.end, "key_terms": list(key_terms)} for c in chunks]
    sentence_rows = []
    for d in documents.values():
        for start, end in sentence_spans(d.text):
            sentence_rows.append({"document_id": d.document_id, "lens": d.lens, "source_path": d.source_path,
                                  "section_path": "", "start_char": start, "end_char": end,
                                  "text": d.text[start:end], "document_date": d.document_date, "vector": None})
    claims = sentences_with_claims(sentence_rows, chunk_rows, generic=set())
    return detect_contradictions(claims, authority=AUTHORITY)
