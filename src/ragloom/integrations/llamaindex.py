"""LlamaIndex adapters: a retriever over ragloom's sentence index and a node postprocessor that
grows each retrieved sentence into its dynamic semantic window.

Needs ``pip install 'ragloom[llamaindex]'`` (llama-index-core only; no network, no LLM)::

    from llama_index.core.query_engine import RetrieverQueryEngine
    from ragloom import Engine
    from ragloom.integrations.llamaindex import DynamicWindowPostprocessor, SentenceRetriever

    engine = Engine("ragloom-data")
    query_engine = RetrieverQueryEngine.from_args(
        SentenceRetriever(engine=engine, top_k=10),
        node_postprocessors=[DynamicWindowPostprocessor(engine=engine, threshold=0.75)],
    )
"""

from __future__ import annotations

from typing import Any

try:
    from llama_index.core.bridge.pydantic import ConfigDict, Field
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    from ragloom.errors import MissingExtraError

    raise MissingExtraError("llama-index-core", "llamaindex", "the LlamaIndex integration") from exc

import numpy as np

from ragloom.retrieve.base import SearchRequest, to_scored
from ragloom.retrieve.window import Expansion, Sentences, expand, load_sentences


def _node(result: Any, text: str | None = None) -> NodeWithScore:  # noqa: ANN401 - a ScoredChunk
    metadata = {
        "document_id": result.document_id, "source_path": result.source_path, "lens": result.lens,
        "tenant": result.tenant, "section_path": " > ".join(result.section_path), "start_char": result.start,
        "end_char": result.end, "position": result.chunk_index,
    }
    node = TextNode(id_=result.chunk_id, text=text if text is not None else result.text, metadata=metadata,
                    excluded_embed_metadata_keys=list(metadata), excluded_llm_metadata_keys=list(metadata))
    return NodeWithScore(node=node, score=result.score)


class SentenceRetriever(BaseRetriever):
    """Retrieves single sentences from a ragloom workspace's sentence index."""

    def __init__(self, engine: Any, *, top_k: int = 10, tenant: str | None = None,  # noqa: ANN401
                 lenses: list[str] | None = None) -> None:
        super().__init__()
        self._engine, self._top_k, self._tenant, self._lenses = engine, top_k, tenant, lenses

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        engine = self._engine
        tenant = engine._tenant(self._tenant)
        vector = engine.embedder.embed_query(query_bundle.query_str)
        hits = engine.store.vector_search(tenant, vector, self._top_k, lenses=self._lenses, table="sentences")
        return [_node(to_scored(h, h["_score"], "sentence")) for h in hits]


class DynamicWindowPostprocessor(BaseNodePostprocessor):
    """Replaces each retrieved sentence node by its dynamic semantic window.

    Nodes must carry ragloom's ``document_id`` and ``position`` (or ``start_char``) metadata, as
    :class:`SentenceRetriever`'s do. Windows of one document that overlap or touch are merged;
    each output node is one contiguous span with exact ``start_char``/``end_char``.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)
    engine: Any = Field(description="a ragloom Engine")
    threshold: float = 0.75
    max_expand: int = 5
    cross_sections: bool = False
    query_floor: float | None = None
    adaptive_quantile: float | None = None
    tenant: str | None = None

    @classmethod
    def class_name(cls) -> str:
        return "RagloomDynamicWindowPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if not nodes:
            return []
        engine = self.engine
        tenant = engine._tenant(self.tenant)
        rule = Expansion(self.threshold, self.max_expand, self.cross_sections, self.query_floor,
                         self.adaptive_quantile)
        hits = [{"document_id": n.node.metadata["document_id"], "chunk_index": int(n.node.metadata["position"]),
                 "start_char": int(n.node.metadata["start_char"]), "score": float(n.score or 0.0)} for n in nodes]
        query = engine.embedder.embed_query(query_bundle.query_str) if query_bundle is not None else None
        request = SearchRequest(text=query_bundle.query_str if query_bundle else "", store=engine.store,
                                embedder=engine.embedder, tenant=tenant, query_vector=query)
        documents: dict[str, Sentences] = load_sentences(request, hits, rule)
        seeds = [(h["document_id"], int(np.searchsorted(documents[h["document_id"]].starts, h["start_char"])), h["score"])
                 for h in hits]
        spans = expand(seeds, documents, rule, None if query is None else query / (np.linalg.norm(query) or 1))
        base = {n.node.metadata["document_id"]: n.node.metadata for n in nodes}
        texts = engine.store.document_texts(tenant, {span.document_id for span in spans})
        out = []
        for span in spans:
            doc = documents[span.document_id]
            start, end = int(doc.starts[span.first]), int(doc.ends[span.last])
            text = texts[span.document_id][start:end]
            meta = {**base[span.document_id], "start_char": start, "end_char": end,
                    "sentences": int(span.last - span.first + 1)}
            node = TextNode(id_=f"{span.document_id}:{start}-{end}", text=text, metadata=meta,
                            excluded_embed_metadata_keys=list(meta), excluded_llm_metadata_keys=list(meta))
            out.append(NodeWithScore(node=node, score=span.score))
        return out
