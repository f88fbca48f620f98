"""ScoredChunk values for the optimiser's tests, built directly."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime

import numpy as np

from ragloom.types import ScoredChunk

WORDS = (
    """
    catalog integration roadmap customer platform revenue churn release pricing partner api
    migration latency search checkout warehouse onboarding analytics mobile billing support security
    compliance dashboard inventory shipping payments loyalty marketplace vendor forecast budget
    hiring retention pipeline quality testing deployment cluster storage
    """.split()
)
FILLER = (
    """
    the a of to and in for with on by we our is are will be this that
    """.split()
)


def chunk(cid: str, text: str, score: float = 0.5, *, doc: str | None = None, start: int = 0,
          title: str = "", source: str | None = None, lens: str = "engineering", section: tuple[str, ...] = (),
          **kw: object) -> ScoredChunk:
    return ScoredChunk(
        chunk_id=cid, document_id=doc or f"doc-{cid}", text=text, score=score,
        source_path=source or f"docs/{doc or cid}.md", lens=lens, tenant="default", title=title or (doc or cid),
        section_path=section, start=start, end=start + len(text), token_count=len(text.split()), **kw)


def sentence(rng: random.Random, n: int | None = None) -> str:
    n = n or rng.randint(6, 18)
    ws = [rng.choice(WORDS) if rng.random() < 0.6 else rng.choice(FILLER) for _ in range(n)]
    return ws[0].capitalize() + " " + " ".join(ws[1:]) + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def realistic_candidates(n: int = 200, *, seed: int = 7, dim: int = 0) -> list[ScoredChunk]:
    """``n`` candidates from ``n // 5`` documents: overlapping neighbours, a few pasted
    duplicates, entities from a shared pool, some dated."""
    rng = random.Random(seed)
    docs = max(1, n // 5)
    texts = {d: paragraph(rng, 60) for d in range(docs)}
    entities = [f"org:{i:04x}" for i in range(150)]
    out: list[ScoredChunk] = []
    i = 0
    while len(out) < n:
        d = rng.randrange(docs)
        text = texts[d]
        length = rng.randint(700, 1400)
        start = rng.randrange(0, max(1, len(text) - length))
        body = text[start : start + length]
        if rng.random() < 0.05 and out:  # a pasted copy elsewhere
            src = rng.choice(out)
            body, d, start = src.text.replace("the", "a", 1), docs + i, 0
        ents = tuple(rng.sample(entities, rng.randint(0, 6)))
        dated = rng.random() < 0.4
        vector = np.asarray([rng.random() for _ in range(dim)], dtype=np.float32) if dim else None
        out.append(ScoredChunk(
            chunk_id=f"c{i:04d}", document_id=f"d{d}", text=body, score=rng.uniform(0.2, 0.9),
            source_path=f"docs/d{d}.md", lens=rng.choice(["engineering", "team", "analyst"]), tenant="default",
            title=f"Document {d}", section_path=("Plan", f"Part {rng.randint(1, 4)}")[: rng.randint(0, 2)],
            start=start, end=start + len(body), token_count=len(body) // 4, chunk_index=start // 1000,
            document_date=date(2024, rng.randint(1, 12), rng.randint(1, 28)) if dated else None,
            as_of=datetime(2025, 1, 1, tzinfo=UTC), entities=ents,
            time_refs=(f"Q{rng.randint(1, 4)} 2025",) if rng.random() < 0.3 else (),
            vector=vector,
        ))
        i += 1
    return out
