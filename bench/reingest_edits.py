"""Incremental re-ingest: how much is embedded again when 1% of the paragraphs change, and how
fast an unchanged workspace is re-ingested; plus entity extraction throughput.

    .venv/bin/python bench/reingest_edits.py [--documents 200] [--share 0.01] [--seed 7]

Counts of re-embedded chunks do not depend on the embedding model, so the edit runs use the
hashing embedder (seconds instead of minutes); the timing runs use the real model.
"""

from __future__ import annotations

import argparse
import random
import re
import tempfile
import time
from pathlib import Path

from common import doc_corpus, markdown_table, sample_corpus, save, stage
from ragloom.config import Settings
from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.enrich.entities import EntityExtractor, Gazetteer

MARK = "This sentence was added by the edit benchmark."
PARAGRAPH = re.compile(r"(?:^|\n\n)([^\n#`|][^\n]{40,}(?:\n[^\n#`|][^\n]*)*)")


def edit_paragraphs(folder: Path, share: float, rng: random.Random) -> tuple[int, int]:
    """Append a sentence to ``share`` of all prose paragraphs; returns (edited, total)."""
    spans = []
    for path in sorted(folder.iterdir()):
        text = path.read_text(encoding="utf-8")
        spans.extend((path, m.end(1)) for m in PARAGRAPH.finditer(text))
    chosen = rng.sample(spans, max(1, round(share * len(spans))))
    by_file: dict[Path, list[int]] = {}
    for path, end in chosen:
        by_file.setdefault(path, []).append(end)
    for path, ends in by_file.items():
        text = path.read_text(encoding="utf-8")
        for end in sorted(ends, reverse=True):
            text = text[:end] + " " + MARK + text[end:]
        path.write_text(text, encoding="utf-8")
    return len(chosen), len(spans)


def edit_run(files: list[Path], strategy: str, share: float, seed: int) -> dict:
    settings = Settings.load(environ={}, overrides={"embedding.model": "hashing", "embedding.cache": False,
                                                    "chunking.strategy": strategy})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        stage(files, folder)
        engine = Engine(Path(tmp) / "ws", settings=settings, embedder=HashingEmbedder())
        first = engine.ingest(folder, lens="engineering")
        chunks = engine.stats()["chunks"]
        sentences = len(engine.store.chunks("default", table="sentences", columns=["chunk_id"]))
        edited, paragraphs = edit_paragraphs(folder, share, random.Random(seed))
        before = {r["version_id"] for r in engine.store.chunks("default", columns=["version_id"])}
        second = engine.ingest(folder, lens="engineering")
        sentences_embedded = engine.embedder.calls - first.chunks_embedded - sentences - second.chunks_embedded
        # The floor: chunks that contain edited text must be embedded again whatever the chunker does.
        touched = sum(1 for r in engine.store.chunks("default", columns=["version_id", "text"])
                      if r["version_id"] not in before and MARK in r["text"])
    result = {
        "strategy": strategy, "paragraphs": paragraphs, "edited_paragraphs": edited, "documents_changed": second.updated,
        "chunks": chunks, "chunks_embedded": second.chunks_embedded, "chunk_share": second.chunks_embedded / chunks,
        "chunks_containing_edits": touched, "floor_share": touched / chunks,
        "sentences": sentences, "sentences_embedded": sentences_embedded,
        "sentence_share": sentences_embedded / max(sentences, 1),
    }
    print(f"{strategy}: edited {edited}/{paragraphs} paragraphs in {second.updated} documents -> re-embedded "
          f"{second.chunks_embedded}/{chunks} chunks ({result['chunk_share']:.2%}; {touched} contain an edit), "
          f"{sentences_embedded}/{sentences} sentences ({result['sentence_share']:.2%})")
    return result


def unchanged_run(files: list[Path]) -> dict:
    """First ingest with the real model, then an unchanged re-ingest, in fresh workspaces."""
    settings = Settings.load(environ={}, overrides={"embedding.cache": False})
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        stage(files, folder)
        engine = Engine(Path(tmp) / "ws", settings=settings)
        engine.embedder.embed(["warm up"])
        t0 = time.perf_counter()
        engine.ingest(folder, lens="engineering")
        first = time.perf_counter() - t0
        t1 = time.perf_counter()
        report = engine.ingest(folder, lens="engineering")
        again = time.perf_counter() - t1
    print(f"unchanged re-ingest: first {first:.1f}s, again {again:.3f}s ({first / again:.0f}x), "
          f"{report.unchanged} files skipped")
    return {"first_seconds": first, "again_seconds": again, "speedup": first / again, "skipped": report.unchanged}


def extraction_run(files: list[Path], gazetteer: Path) -> dict:
    text = "\n\n".join(f.read_text(encoding="utf-8") for f in files)
    megabytes = len(text.encode("utf-8")) / 1e6
    extractor = EntityExtractor(Gazetteer.load(gazetteer))
    t0 = time.perf_counter()
    mentions = extractor(text)
    seconds = time.perf_counter() - t0
    print(f"entity extraction: {megabytes:.1f} MB, {len(mentions)} mentions, {megabytes / seconds:.2f} MB/s")
    return {"megabytes": megabytes, "mentions": len(mentions), "mb_per_s": megabytes / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--share", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--skip-timing", action="store_true", help="skip the real-model unchanged re-ingest run")
    args = parser.parse_args()
    files = sample_corpus(args.corpus, args.documents)
    edits = [edit_run(files, strategy, args.share, args.seed) for strategy in ("token", "boundary")]
    unchanged = None if args.skip_timing else unchanged_run(files)
    extraction = extraction_run(doc_corpus(args.corpus), Path(__file__).resolve().parents[1] / "examples" / "entities.toml")
    table = markdown_table(
        ["strategy", "paragraphs edited", "documents changed", "chunks re-embedded", "of which contain an edit",
         "sentences re-embedded"],
        [[e["strategy"], f"{e['edited_paragraphs']} of {e['paragraphs']}", e["documents_changed"],
          f"{e['chunks_embedded']} of {e['chunks']} ({e['chunk_share']:.2%})",
          f"{e['chunks_containing_edits']} ({e['floor_share']:.2%})",
          f"{e['sentences_embedded']} of {e['sentences']} ({e['sentence_share']:.2%})"] for e in edits],
    )
    print(table)
    save("reingest_edits", {"edits": edits, "unchanged": unchanged, "extraction": extraction, "table": table})


if __name__ == "__main__":
    main()
