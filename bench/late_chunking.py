"""Late chunking on the contextual set's tuning half (issue 17, part 3): a measurement, not a feature.

    .venv/bin/python bench/late_chunking.py [--half tune]

A chunk of code read alone lacks its file: the names it uses are defined elsewhere. Late
chunking (Günther et al., 2024) embeds the chunk's tokens *inside* a longer window of its file
and averages only the chunk's own token states, so each vector has seen its surroundings. It
needs no other weights than the embedder's, so it could be a default here if it paid.

Each row replaces only the chunk vectors; everything else is ragloom's hybrid mode as it runs
by default: a chunk's dense score is its cosine mixed half and half with its best sentence's
(``retrieval.sentence_weight``, the stored sentence vectors), fused by reciprocal rank with the
BM25 ranking of the same index (50 candidates each, ``rrf_k`` 60). Chunk vectors:

- the stored ones (the ONNX int8 default), the suite's own numbers;
- sentence-transformers fp32 over the same contextualised text (prefix + chunk), the control
  for the late rows, which need the model's token states and so run it in fp32 too;
- late: the chunk's tokens in a window of ``W`` tokens of its file (the chunk centred, the
  prefix first), ``W`` 256 (the model's trained length) and 510 (its position limit), and 510
  without the prefix.

Queries are embedded once, by the default embedder, for every row. The whole script takes
about three minutes. Writes ``bench/results/late_chunking.json``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from common import save
from contextual_tuning import DEPTH, KS, half_from_arguments, index, pass_rates, rrf
from ragloom.engine import Engine
from ragloom.tokens import minilm_folder


def unit(rows: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (rows / norms).astype(np.float32)


class Model:
    """The bundled MiniLM in fp32 (sentence-transformers), for its token states."""

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import torch
        from sentence_transformers import SentenceTransformer

        torch.set_num_threads(os.cpu_count() or 1)
        self.torch = torch
        self.st = SentenceTransformer(str(minilm_folder()), device="cpu")
        self.tokenizer = self.st.tokenizer
        self.bert = self.st[0].auto_model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        return unit(np.asarray(self.st.encode(list(texts), batch_size=16), dtype=np.float32))

    def late(self, text: str, spans: Sequence[tuple[int, int]], prefixes: Sequence[str], window: int) -> np.ndarray:
        """For each chunk span of one file: the mean state of its tokens, read in a window of
        ``window`` tokens of the file around it (its prefix first, when given)."""
        tok = self.tokenizer
        encoded = tok(text, add_special_tokens=False, return_offsets_mapping=True)
        ids, offsets = encoded["input_ids"], np.asarray(encoded["offset_mapping"])
        out = np.zeros((len(spans), self.bert.config.hidden_size), dtype=np.float32)
        for i, ((start, end), prefix) in enumerate(zip(spans, prefixes, strict=True)):
            inside = np.where((offsets[:, 0] >= start) & (offsets[:, 1] <= end) & (offsets[:, 1] > offsets[:, 0]))[0]
            if not len(inside):
                continue
            head = tok(prefix, add_special_tokens=False)["input_ids"] if prefix else []
            room = window - len(head)
            a, b = int(inside[0]), int(inside[-1]) + 1
            if b - a >= room:  # a chunk longer than the window: its first tokens, as the model reads it
                lo, hi = a, a + room
            else:
                lo = max(0, a - (room - (b - a)) // 2)
                hi = min(len(ids), lo + room)
                lo = max(0, hi - room)
            tokens = [tok.cls_token_id, *head, *ids[lo:hi], tok.sep_token_id]
            with self.torch.no_grad():
                states = self.bert(input_ids=self.torch.tensor([tokens]),
                                   attention_mask=self.torch.ones(1, len(tokens), dtype=self.torch.long))
            hidden = states.last_hidden_state[0].numpy()
            first = 1 + len(head) - lo  # the position of token ``lo`` in the window
            out[i] = hidden[[j + first for j in range(max(a, lo), min(b, hi))]].mean(axis=0)
        return unit(out)


def dense_scores(engine: Engine, chunks: Sequence[Mapping[str, Any]], vectors: np.ndarray,
                 queries: np.ndarray) -> np.ndarray:
    """Queries x chunks: each chunk's cosine mixed with its best sentence's, as the vector mode
    scores it (``retrieval.sentence_weight``)."""
    sentences = engine.store.chunks("default", with_vectors=True, table="sentences",
                                    columns=["document_id", "start_char", "end_char", "vector"])
    matrix = unit(np.stack([np.asarray(s["vector"], dtype=np.float32) for s in sentences]))
    by_document: dict[str, list[tuple[int, int, int]]] = {}
    for j, s in enumerate(sentences):
        by_document.setdefault(s["document_id"], []).append((int(s["start_char"]), int(s["end_char"]), j))
    sentence_cos = queries @ matrix.T
    chunk_cos = queries @ vectors.T
    weight = engine.settings.retrieval.sentence_weight
    scores = chunk_cos.copy()
    for i, c in enumerate(chunks):
        members = [j for a, b, j in by_document.get(c["document_id"], []) if a >= c["start_char"] and b <= c["end_char"]]
        if members:
            scores[:, i] = (1 - weight) * chunk_cos[:, i] + weight * sentence_cos[:, members].max(axis=1)
    return scores


def main() -> None:
    half, chosen = half_from_arguments(__doc__ or "")
    golden = [q.golden for q in chosen]
    model = Model()
    with index() as (engine, where):
        chunks = engine.store.chunks("default", with_vectors=True, columns=[
            "chunk_id", "document_id", "start_char", "end_char", "prefix", "contextualized_text", "vector"])
        ids = [c["chunk_id"] for c in chunks]
        texts = engine.store.document_texts("default", sorted({c["document_id"] for c in chunks}))
        queries = unit(np.stack([np.asarray(engine.embedder.embed_query(q.query), dtype=np.float32) for q in chosen]))
        bm25 = [engine.store.text_search("default", q.query, DEPTH) for q in chosen]

        def late(window: int, prefix: bool) -> np.ndarray:
            out = np.zeros((len(chunks), len(queries[0])), dtype=np.float32)
            for document_id, text in texts.items():
                mine = [i for i, c in enumerate(chunks) if c["document_id"] == document_id]
                out[mine] = model.late(text, [(chunks[i]["start_char"], chunks[i]["end_char"]) for i in mine],
                                       [chunks[i]["prefix"] if prefix else "" for i in mine], window)
            return out

        rows = {
            "stored chunk vectors (ONNX int8, the default)": unit(np.stack([np.asarray(c["vector"]) for c in chunks])),
            "fp32 chunk vectors of prefix + text (the control)": model.encode([c["contextualized_text"] for c in chunks]),
            "late chunking, 256-token window, prefix first": late(256, True),
            "late chunking, 510-token window, prefix first": late(510, True),
            "late chunking, 510-token window, no prefix": late(510, False),
        }
        dense = {name: dense_scores(engine, chunks, vectors, queries) for name, vectors in rows.items()}

    fuse = rrf()
    results: dict[str, Any] = {"half": half, "queries": len(chosen), "rows": {}}
    print(f"{'chunk vectors':55s} {'vector alone':>20s}   {'hybrid':>20s}")
    for name, scores in dense.items():
        orders = [np.argsort(-s, kind="stable")[:DEPTH] for s in scores]
        vector = [[{"chunk_id": ids[i], "_score": float(s[i])} for i in order] for s, order in zip(scores, orders,
                                                                                                   strict=True)]
        alone = pass_rates([[r["chunk_id"] for r in v] for v in vector], golden, where)
        hybrid = pass_rates([fuse(v, t) for v, t in zip(vector, bm25, strict=True)], golden, where)
        results["rows"][name] = {"vector": alone, "hybrid": hybrid}
        print(f"{name:55s} " + " / ".join(f"{alone[k]:.1f}" for k in KS) + "   "
              + " / ".join(f"{hybrid[k]:.1f}" for k in KS))
    save(f"late_chunking{'' if half == 'tune' else '_report'}", results)


if __name__ == "__main__":
    main()
