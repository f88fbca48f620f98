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

from ragloom.checks import shown
from ragloom.errors import InvalidParameterError
from ragloom.retrieve.base import SearchRequest, to_scored, unit
from ragloom.retrieve.window import Expansion, grow_hits


def _node(result: Any) -> NodeWithScore:  # noqa: ANN401 - a ScoredChunk
    metadata = {
        "document_id": result.document_id, "source_path": result.source_path, "lens": result.lens,
        "tenant": result.tenant, "section_path": result.section_path_str, "start_char": result.start,
        "end_char": result.end, "position": result.chunk_index,
    }
    node = TextNode(id_=result.chunk_id, text=result.text, metadata=metadata,
                    excluded_embed_metadata_keys=list(metadata), excluded_llm_metadata_keys=list(metadata))
    return NodeWithScore(node=node, score=result.score)


class SentenceRetriever(BaseRetriever):
    """Retrieves single sentences from a ragloom workspace's sentence index."""

    def __init__(self, engine: Any, *, top_k: int = 10, tenant: str | None = None,  # noqa: ANN401
                 lenses: list[str] | None = None) -> None:
        super().__init__()
        if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
            raise InvalidParameterError(f"top_k ({shown(top_k)}) must be a whole number, 1 or more: the sentences "
                                        "to retrieve")
        self._engine, self._top_k, self._tenant, self._lenses = engine, top_k, tenant, lenses

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        engine = self._engine
        tenant = engine.components.tenant(self._tenant)
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
    threshold: float = Field(0.75, ge=-1, le=1)
    max_expand: int = Field(5, ge=0)
    cross_sections: bool = False
    query_floor: float | None = Field(None, ge=-1, le=1)
    adaptive_quantile: float | None = Field(None, gt=0, lt=1)
    tenant: str | None = None

    @classmethod
    def class_name(cls) -> str:
        return "RagloomDynamicWindowPostprocessor"

    def _postprocess_nodes(self, nodes: list[NodeWithScore], query_bundle: QueryBundle | None = None) -> list[NodeWithScore]:
        if not nodes:
            return []
        engine = self.engine
        tenant = engine.components.tenant(self.tenant)
        rule = Expansion(self.threshold, self.max_expand, self.cross_sections, self.query_floor,
                         self.adaptive_quantile)
        hits = [{"document_id": n.node.metadata["document_id"], "chunk_index": int(n.node.metadata["position"]),
                 "start_char": int(n.node.metadata["start_char"]), "_score": float(n.score or 0.0)} for n in nodes]
        request = SearchRequest(text=query_bundle.query_str if query_bundle else "", store=engine.store,
                                embedder=engine.embedder, tenant=tenant, settings=engine.settings)
        query = unit(request.vector) if query_bundle is not None else None
        base = {n.node.metadata["document_id"]: n.node.metadata for n in nodes}
        out = []
        for w in grow_hits(request, hits, rule, query):
            meta = {**base[w.span.document_id], "start_char": w.start, "end_char": w.end,
                    "sentences": len(w.sentences)}
            node = TextNode(id_=f"{w.span.document_id}:{w.start}-{w.end}", text=w.text, metadata=meta,
                            excluded_embed_metadata_keys=list(meta), excluded_llm_metadata_keys=list(meta))
            out.append(NodeWithScore(node=node, score=w.span.score))
        return out
