"""Chunking throughput (MB/s of UTF-8 input) on the documentation corpus, one process, one
thread, ragloom beside LangChain, chonkie and semchunk in the same run.

    .venv/bin/python bench/chunking_throughput.py [--corpus bench/data/doc-corpus] [--repeats 3]

Token splitters all use cl100k_base: the peers through tiktoken, ragloom through bpe-openai's
Rust BPE (the same ids; see tests/test_tokens.py). Character splitters use about 800
characters. ragloom's chunkers also parse sections, keep exact offsets and cut at sentence or
paragraph ends; the peers' splitters do less, which is the point of the comparison.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from common import doc_corpus, markdown_table, save
from ragloom.chunk import get_chunker
from ragloom.tokens import ensure_tiktoken_offline


def splitters() -> dict[str, tuple[str, Callable[[], Callable[[str], object]]]]:
    """Name -> (family, factory). Every timed run gets a splitter from its factory, so that no
    run profits from a cache filled by the one before: semchunk memoises token counts, and a
    second pass over the same corpus runs about eight times faster than the first."""
    ensure_tiktoken_offline()
    import semchunk
    import tiktoken
    from chonkie import FastChunker, RecursiveChunker, TokenChunker
    from langchain_text_splitters import RecursiveCharacterTextSplitter, TokenTextSplitter

    enc = tiktoken.get_encoding("cl100k_base")
    return {
        "ragloom token (1024/150, cl100k)":
            ("token", lambda: get_chunker("token", chunk_size=1024, chunk_overlap=150).chunk),
        "langchain TokenTextSplitter (1024/150, cl100k)":
            ("token", lambda: TokenTextSplitter(encoding_name="cl100k_base", chunk_size=1024, chunk_overlap=150).split_text),
        "chonkie TokenChunker (1024/150, cl100k)":
            ("token", lambda: TokenChunker(tokenizer=enc, chunk_size=1024, chunk_overlap=150).chunk),
        "semchunk (1024, overlap 150, cl100k)":
            ("token", lambda: (lambda sc: lambda t: sc(t, overlap=150))(semchunk.chunkerify(enc, 1024))),
        "ragloom boundary (800 chars, token counts cl100k)": ("chars", lambda: get_chunker("boundary").chunk),
        "ragloom boundary (800 chars, sizes only)": ("chars", lambda: get_chunker("boundary", tokenizer="chars").chunk),
        "langchain RecursiveCharacterTextSplitter (800/100)":
            ("chars", lambda: RecursiveCharacterTextSplitter(chunk_size=800, chunk_overlap=100).split_text),
        "chonkie RecursiveChunker (800 chars)": ("chars", lambda: RecursiveChunker(chunk_size=800).chunk),
        "chonkie FastChunker (800 bytes)": ("chars", lambda: FastChunker(chunk_size=800).chunk),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    texts = [p.read_text(encoding="utf-8") for p in doc_corpus(args.corpus)]
    megabytes = sum(len(t.encode("utf-8")) for t in texts) / 1e6
    print(f"{len(texts)} documents, {megabytes:.2f} MB")
    results = {}
    for name, (family, factory) in splitters().items():
        seconds = float("inf")  # the fastest run: the least disturbed by other load
        for _ in range(args.repeats):
            split = factory()  # built outside the timed region
            t0 = time.perf_counter()
            [split(t) for t in texts]  # the chunks are freed inside the timed region too
            seconds = min(seconds, time.perf_counter() - t0)
        split = factory()
        chunks = sum(len(split(t)) for t in texts[:50])  # type: ignore[arg-type]
        results[name] = {"family": family, "seconds": seconds, "mb_per_s": megabytes / seconds,
                         "chunks_first_50_docs": chunks}
        print(f"{name:<55} {megabytes / seconds:8.1f} MB/s")
    rows = []
    for family, reference in (("token", "ragloom token (1024/150, cl100k)"),
                              ("chars", "ragloom boundary (800 chars, sizes only)")):
        base = results[reference]["mb_per_s"]
        for name, r in results.items():
            if r["family"] == family:
                rows.append([name, f"{r['mb_per_s']:.1f}", f"{r['mb_per_s'] / base:.2f}"])
    table = markdown_table(["splitter", "MB/s", "× ragloom"], rows)
    print()
    print(table)
    save("chunking_throughput", {"documents": len(texts), "megabytes": megabytes, "repeats": args.repeats,
                                 "results": results, "table": table})


if __name__ == "__main__":
    main()
