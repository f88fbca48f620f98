"""Where an ingest's time goes: each stage, and what the embedder is given to encode.

    .venv/bin/python bench/ingest_profile.py [--documents 200] [--corpus bench/data/doc-corpus]

One default ingest (token chunks 1024/150, contextual prefixes, the sentence index, the ONNX
int8 all-MiniLM-L6-v2, embedding cache off) of every ninth documentation-corpus file, into a
fresh workspace, the model loaded first; its stage timings as the ingest reports them. Then,
with the same embedder and in the same process, the encode of each kind of text alone: the
chunks as ingest embeds them (prefix and text, windowed when longer than the model's 256 word
pieces), the same texts cut at 256 word pieces (what the peers encode), and the sentences. The
word pieces of each set say why the ingest costs what it costs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from tokenizers import Tokenizer

from common import markdown_table, sample_corpus, save, stage
from ragloom.config import Settings
from ragloom.engine import Engine
from ragloom.tokens import minilm_folder


def pieces(tokenizer: Tokenizer, texts: list[str]) -> int:
    """Word pieces of ``texts`` under the model's tokenizer, without the special tokens."""
    return sum(len(e.ids) for e in tokenizer.encode_batch(texts, add_special_tokens=False))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--documents", type=int, default=200)
    args = parser.parse_args()
    tokenizer = Tokenizer.from_file(str(minilm_folder() / "tokenizer.json"))
    tokenizer.no_truncation()  # the file pads and cuts at 128: count every word piece
    tokenizer.no_padding()
    settings = Settings.load(environ={}, overrides={"embedding.cache": False})
    files = sample_corpus(args.corpus, args.documents)
    with tempfile.TemporaryDirectory() as tmp:
        stage(files, Path(tmp) / "docs")
        engine = Engine(Path(tmp) / "ws", settings=settings)
        embedder = engine.embedder
        embedder.embed(["warm up the model"])
        _ = engine.store
        started = time.perf_counter()
        report = engine.ingest(Path(tmp) / "docs", lens="docs")
        seconds = time.perf_counter() - started
        assert report.ok, report.failed
        chunks = [r["prefix"] + r["text"] for r in engine.store.chunks("default", columns=["prefix", "text"])]
        sentences = [r["text"] for r in engine.store.chunks("default", table="sentences", columns=["text"])]
        cut = [tokenizer.decode(e.ids[:254]) for e in tokenizer.encode_batch(chunks, add_special_tokens=False)]
        encodes = {}
        for name, texts in (("chunks, whole (as ingest embeds them)", chunks), ("chunks cut at 256 word pieces", cut),
                            ("sentences", sentences)):
            t0 = time.perf_counter()
            embedder.embed(texts)
            encodes[name] = {"texts": len(texts), "word_pieces": pieces(tokenizer, texts),
                             "seconds": time.perf_counter() - t0}
    stages = sorted(report.timings.items(), key=lambda kv: -kv[1])
    stage_rows = [[name, f"{t:.1f}", f"{t / seconds:.1%}"] for name, t in stages]
    stage_rows.append(["(outside the stages)", f"{seconds - sum(report.timings.values()):.1f}",
                       f"{(seconds - sum(report.timings.values())) / seconds:.1%}"])
    encode_rows = [[name, e["texts"], e["word_pieces"], f"{e['seconds']:.1f}",
                    f"{e['word_pieces'] / e['seconds']:.0f}"] for name, e in encodes.items()]
    print(f"ingest: {report.added} documents, {report.chunks_written} chunks, {report.sentences_written} sentences "
          f"in {seconds:.1f} s ({report.chunks_written / seconds:.2f} chunks/s)")
    print(markdown_table(["stage", "seconds", "share"], stage_rows))
    print(markdown_table(["encoded alone", "texts", "word pieces", "seconds", "word pieces/s"], encode_rows))
    save("ingest_profile", {"documents": len(files), "chunks": report.chunks_written, "sentences": len(sentences),
                            "seconds": seconds, "stages": report.timings, "encodes": encodes})


if __name__ == "__main__":
    main()
