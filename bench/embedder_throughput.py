"""Ingest speed by embedder, against encode-only rates of the same chunks, in one run.

    .venv/bin/python bench/embedder_throughput.py [--documents 200] [--variants st onnx onnx-int8 static]

Every ninth file of the documentation corpus, up to ``--documents``. For each embedder, the
whole default ingest (token chunks 1024/150, contextual prefixes, entities, the sentence index,
the graph) into a fresh workspace with the embedding cache off, the model loaded first:
chunks per second. Then, on the chunk texts that ingest embedded (prefix + text), the rate of
a plain encode that truncates each at 256 word pieces, as the peers do: sentence-transformers
(``model.encode``), fastembed running the same model exported to ONNX from a local folder, and
ragloom's ONNX embedder. The ratio the issue asks about is the default ingest's chunks/s over
sentence-transformers' encode-only chunks/s.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from common import markdown_table, sample_corpus, save, stage
from ragloom.config import Settings
from ragloom.engine import Engine

VARIANTS: dict[str, dict[str, Any]] = {
    "st": {"embedding.provider": "sentence-transformers"},
    "onnx": {"embedding.provider": "onnx"},
    "onnx-int8": {"embedding.provider": "onnx", "embedding.precision": "int8"},
    "onnx, derived sentences": {"embedding.provider": "onnx", "sentences.vectors": "derived"},
    "onnx-int8, derived sentences": {"embedding.provider": "onnx", "embedding.precision": "int8",
                                     "sentences.vectors": "derived"},
    "static": {"embedding.model": "minilm-static"},
}


def ingest(folder: Path, overrides: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    settings = Settings.load(environ={}, overrides={"embedding.cache": False, **overrides})
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Path(tmp) / "ws", settings=settings)
        engine.embedder.embed(["warm up the model"])  # loading (and exporting) is not ingest time
        _ = engine.store
        started = time.perf_counter()
        report = engine.ingest(folder, lens="engineering")
        seconds = time.perf_counter() - started
        assert report.ok, report.failed
        texts = [r["contextualized_text"] for r in engine.store.chunks("default", columns=["contextualized_text"])]
    return {"chunks": report.chunks_written, "sentences": report.sentences_written, "seconds": seconds,
            "chunks_per_s": report.chunks_written / seconds, "embed_seconds": report.timings.get("embed", 0.0),
            "embedder": engine.embedder.name}, texts


def encode_only(texts: list[str]) -> dict[str, float]:
    """Chunks/s of plain encodes that truncate at 256 word pieces."""
    from ragloom.embed import SentenceTransformerEmbedder
    from ragloom.embed.onnx import OnnxEmbedder, exported, model_folder

    rates = {}
    st = SentenceTransformerEmbedder().model
    st.encode(["warm"])
    started = time.perf_counter()
    st.encode(texts, batch_size=32, normalize_embeddings=True, show_progress_bar=False)
    rates["sentence-transformers encode"] = len(texts) / (time.perf_counter() - started)
    try:
        from fastembed import TextEmbedding
        from fastembed.common.model_description import ModelSource, PoolingType
    except ImportError:
        print("fastembed is not installed: pip install fastembed (skipped)")
    else:
        from ragloom.tokens import minilm_folder

        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp)
            for name in ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json",
                         "vocab.txt"):
                shutil.copy(minilm_folder() / name, folder / name)
            shutil.copy(exported(model_folder("all-MiniLM-L6-v2"), "fp32"), folder / "model.onnx")
            TextEmbedding.add_custom_model(model="local/all-MiniLM-L6-v2", pooling=PoolingType.MEAN,
                                           normalization=True, sources=ModelSource(hf="local/all-MiniLM-L6-v2"),
                                           dim=384, model_file="model.onnx")
            fe = TextEmbedding("local/all-MiniLM-L6-v2", specific_model_path=str(folder), threads=2)
            fe.model.tokenizer.enable_truncation(256)  # as sentence-transformers truncates
            list(fe.embed(["warm"]))
            started = time.perf_counter()
            list(fe.embed(texts, batch_size=32))
            rates["fastembed encode"] = len(texts) / (time.perf_counter() - started)
    ours = OnnxEmbedder()  # unwindowed: it truncates at 256 like the others
    ours.embed(["warm"])
    started = time.perf_counter()
    ours.embed(texts)
    rates["ragloom onnx encode"] = len(texts) / (time.perf_counter() - started)
    return rates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument("--documents", type=int, default=200)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--name", default="embedder_throughput",
                        help="the result file under bench/results/ (keep an earlier run by naming a new one)")
    args = parser.parse_args()
    files = sample_corpus(args.corpus, args.documents)
    runs: dict[str, dict[str, Any]] = {}
    texts: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "docs"
        stage(files, folder)
        for name in args.variants:
            runs[name], made = ingest(folder, VARIANTS[name])
            texts = texts or made
            print(f"{name}: {runs[name]['chunks']} chunks, {runs[name]['sentences']} sentences in "
                  f"{runs[name]['seconds']:.1f} s = {runs[name]['chunks_per_s']:.2f} chunks/s", flush=True)
    rates = encode_only(texts)
    for label, rate in rates.items():
        print(f"{label}: {rate:.1f} chunks/s", flush=True)
    baseline = rates["sentence-transformers encode"]
    rows = [[f"ingest, {name}", f"{r['chunks_per_s']:.2f}", f"{r['chunks_per_s'] / baseline:.2f}", f"{r['seconds']:.0f}"]
            for name, r in runs.items()]
    rows += [[label, f"{rate:.1f}", f"{rate / baseline:.2f}", ""] for label, rate in rates.items()]
    table = markdown_table(["run", "chunks/s", "× sentence-transformers encode", "seconds"], rows)
    print(table)
    save(args.name, {"documents": len(files), "runs": runs, "encode_only": rates, "table": table,
                                 "sentences_per_chunk": float(np.mean([r["sentences"] / max(r["chunks"], 1)
                                                                      for r in runs.values()]))})


if __name__ == "__main__":
    main()
