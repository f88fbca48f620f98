"""What every retriever shares: the search request, typed options, the registry of modes.

A mode is a function from a :class:`SearchRequest` to scored chunks, registered with the
options it accepts (a frozen dataclass whose defaults come from the settings). An option that
a mode does not have is an error naming the ones it has, never silently ignored::

    @mode("recent", options=RecentOptions)
    def recent(req: SearchRequest) -> list[ScoredChunk]: ...

Other packages add modes through the ``ragloom.modes`` entry point group.
"""

from __future__ import annotations

import threading
import time
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, dataclass, field, fields, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from pydantic import ValidationError

from ragloom.checks import check_known, shown
from ragloom.config import Settings
from ragloom.embed.base import Embedder, normalize_rows
from ragloom.errors import InvalidParameterError
from ragloom.plugins import Registry
from ragloom.store.filters import DateRange
from ragloom.store.lance import LanceStore
from ragloom.store.schema import to_scored as to_scored
from ragloom.types import AGE_FACTOR_KEY, ScoredChunk

_TIMINGS_LOCK = threading.Lock()

if TYPE_CHECKING:
    from ragloom.graph.view import ContextGraph

OptionsT = TypeVar("OptionsT", bound="ModeOptions")


@dataclass(frozen=True, slots=True)
class ModeOptions:
    """A mode's options. Subclasses add fields, and name in :attr:`SETTINGS` those whose default
    is a setting: :meth:`defaults` reads them, and a value given for one must lie in the
    setting's range."""

    #: Option name -> the setting it defaults to (``"sentences.threshold"``); a subclass's
    #: entries add to its bases'.
    SETTINGS: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def setting_keys(cls) -> dict[str, str]:
        """:attr:`SETTINGS` of the class and its bases."""
        keys: dict[str, str] = {}
        for klass in reversed(cls.__mro__):
            keys.update(vars(klass).get("SETTINGS", {}))
        return keys

    @classmethod
    def defaults(cls, settings: Settings) -> dict[str, Any]:
        """Values from the settings for the fields that have a setting (a list setting as the
        comma-separated text its option takes: ``graph.follow``)."""
        out = {}
        for name, key in cls.setting_keys().items():
            section, field_name = key.split(".")
            value = getattr(getattr(settings, section), field_name)
            out[name] = ",".join(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def build(cls: type[OptionsT], settings: Settings, given: Mapping[str, Any], *, mode: str = "") -> OptionsT:
        """The options with ``given`` over the settings' defaults, each checked by type, and
        those given for a setting checked against its range."""
        what = mode or cls.__name__
        check_known(given, [f.name for f in fields(cls)], "option", f"retrieval mode {what!r}")
        values = {**cls.defaults(settings), **given}
        hints = typing.get_type_hints(cls)
        for f in fields(cls):
            if f.name in values:
                values[f.name] = _coerce(values[f.name], hints[f.name], f"{what} option {f.name}")
            elif f.default is MISSING and f.default_factory is MISSING:
                raise InvalidParameterError(f"retrieval mode {mode!r} needs the option {f.name!r}")
        keys = cls.setting_keys()
        for name in given:
            if name in keys:
                _check_range(settings, keys[name], values[name], f"{what} option {name}")
        return cls(**values)


def _check_range(settings: Settings, key: str, value: Any, what: str) -> None:  # noqa: ANN401
    """Raise unless ``value`` is one the setting ``key`` could hold (a list setting's text is
    checked where it is read)."""
    section_name, field_name = key.split(".")
    section = getattr(settings, section_name)
    if isinstance(getattr(section, field_name), tuple):
        return
    try:
        type(section).model_validate({**section.model_dump(), field_name: value})
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"]
        raise InvalidParameterError(f"{what} ({shown(value)}): {reason[:1].lower()}{reason[1:]}, as for the "
                                    f"setting {key}") from None


def _coerce(value: Any, hint: Any, what: str) -> Any:  # noqa: ANN401 - checked against the hint
    """``value`` as the type ``hint`` names (int, float, bool, str, optional, mapping), or an error."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, what)
            except InvalidParameterError:
                continue
        raise InvalidParameterError(f"{what} must be {hint}, not {value!r}")
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise InvalidParameterError(f"{what} must be true or false, not {value!r}")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise InvalidParameterError(f"{what} must be a whole number, not {value!r}")
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise InvalidParameterError(f"{what} must be a number, not {value!r}")
    if hint is str:
        if isinstance(value, str):
            return value
        raise InvalidParameterError(f"{what} must be a string, not {value!r}")
    if origin is not None and isinstance(origin, type) and issubclass(origin, Mapping):
        if isinstance(value, Mapping):
            return dict(value)
        raise InvalidParameterError(f"{what} must be a mapping, not {value!r}")
    return value


@dataclass
class SearchRequest:
    """One query against one tenant's store."""

    text: str
    store: LanceStore
    embedder: Embedder
    tenant: str
    settings: Settings = field(default_factory=Settings)
    options: ModeOptions = field(default_factory=ModeOptions)
    k: int | None = None  # None: the mode's own default
    lenses: Sequence[str] | None = None
    as_of: datetime | None = None
    #: Only documents dated in this range (their ``document_date``), when given.
    dated: DateRange | None = None
    #: The sentence lift also searches the sentence index for chunks to add (off for the many
    #: narrow searches of one balanced query, which re-score their candidates only).
    sentence_hits: bool = True
    #: The tenant's context graph, loaded when a mode asks for it.
    graph: Callable[[], ContextGraph] | None = None
    #: Filled by the retriever: notes for the user (a lens with no chunks, for example).
    notes: list[str] = field(default_factory=list)
    query_vector: np.ndarray | None = None
    #: Filled by the retriever: seconds spent per stage ("embed query", "vector search", ...).
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def vector(self) -> np.ndarray:
        """The query's embedding, computed once and carried by copies of the request."""
        if self.query_vector is None:
            with self.timed("embed query"):
                self.query_vector = self.embedder.embed_query(self.text)
        return self.query_vector

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the time the block takes to ``timings[stage]``."""
        started = time.perf_counter()
        try:
            yield
        finally:
            with _TIMINGS_LOCK:  # sub-searches of one query run in several threads
                self.timings[stage] = self.timings.get(stage, 0.0) + time.perf_counter() - started

    @property
    def limit(self) -> int:
        return self.k if self.k is not None else self.settings.retrieval.k

    @property
    def candidates(self) -> int:
        return self.settings.retrieval.candidates

    def options_as(self, cls: type[OptionsT]) -> OptionsT:
        """The options when they are of ``cls`` (or a subclass), else ``cls``'s defaults: a
        mode that runs another (graph runs hybrid) reads the other's options this way."""
        return self.options if isinstance(self.options, cls) else cls.build(self.settings, {})

    def narrowed(self, **changes: Any) -> SearchRequest:  # noqa: ANN401
        """A copy for a sub-search that shares the query vector and reports notes and timings to this one."""
        return replace(self, **changes, notes=self.notes, timings=self.timings)


Retriever = Callable[[SearchRequest], list[ScoredChunk]]


@dataclass(frozen=True)
class Mode:
    """A retrieval mode: its name, its function, the options it accepts, and what its scores
    are (``"cosine"``: a similarity in [-1, 1]; ``"share"``: any positive score, shown as a
    share of the best; see :func:`with_relevance`)."""

    name: str
    run: Retriever
    options: type[ModeOptions] = ModeOptions
    scale: str = "share"

    def __call__(self, req: SearchRequest) -> list[ScoredChunk]:
        return self.run(req)


def _builtin_modes() -> dict[str, Any]:
    from ragloom.retrieve import basic, graph, lens, window

    builtins = (basic.VECTOR, basic.BM25, basic.HYBRID, lens.BALANCED, graph.GRAPH, window.WINDOW, window.DYNAMIC)
    return {m.name: m for m in builtins}


#: Retrieval modes by name: the built-ins, then the ``ragloom.modes`` entry points (a
#: :class:`Mode`, or a function with an optional ``options`` attribute).
MODES: Registry[Any] = Registry("retrieval mode", "ragloom.modes", _builtin_modes)


def define(name: str, *, options: type[ModeOptions] = ModeOptions,
           scale: str = "share") -> Callable[[Retriever], Mode]:
    """A mode made from a function (register it with :func:`register_mode` or an entry point)."""

    def make(fn: Retriever) -> Mode:
        return Mode(name, fn, options, scale)

    return make


def register_mode(mode: Mode) -> Mode:
    """Add a mode to the registry (for code that defines one without a package)."""
    return MODES.register(mode.name, mode)  # type: ignore[no-any-return]


def mode_names() -> list[str]:
    return MODES.names()


def get_mode(name: str) -> Mode:
    item = MODES.get(name)
    if isinstance(item, Mode):
        return item
    return Mode(name, item, getattr(item, "options", ModeOptions), getattr(item, "scale", "share"))


SCALES = ("cosine", "share")


def with_relevance(results: Sequence[ScoredChunk], scale: str) -> list[ScoredChunk]:
    """``results`` with :attr:`~ragloom.types.ScoredChunk.relevance` set, best first.

    ``"cosine"``: the score itself, below 0 shown as 0; ``"share"``: the score as a share of
    the best one (the first result is 1.0). Either way the order is the order of the
    relevance shown.
    """
    if scale not in SCALES:
        raise InvalidParameterError(f"score scale {scale!r} is not one of {', '.join(SCALES)}")
    if not results:
        return []
    if scale == "cosine":
        out = [replace(r, relevance=min(1.0, max(0.0, float(r.score)))) for r in results]
    else:
        best = max(float(r.score) for r in results)
        out = [replace(r, relevance=max(0.0, float(r.score)) / best if best > 0 else 0.0) for r in results]
    return sorted(out, key=lambda r: -r.relevance)


def unit(vector: Any) -> np.ndarray:  # noqa: ANN401 - any array-like
    """``vector`` as float32 with length 1 (a zero vector stays zero), by the same arithmetic as
    :func:`~ragloom.embed.base.normalize_rows`, so a vector and its row in a matrix agree."""
    result: np.ndarray = normalize_rows(np.asarray(vector, dtype=np.float32).reshape(1, -1))[0]
    return result


def reciprocal_rank_fusion(rankings: Mapping[str, Sequence[Mapping[str, Any]]], *, k: int = 60,
                           weights: Mapping[str, float] | None = None) -> list[tuple[Mapping[str, Any], float, dict[str, float]]]:
    """Fuse ranked row lists: score = sum over lists of weight / (k + rank), rank from 1.

    Returns (row, fused score, per-list raw scores) best first; ties keep first-seen order.
    """
    fused: dict[str, float] = {}
    rows: dict[str, Mapping[str, Any]] = {}
    parts: dict[str, dict[str, float]] = {}
    for name, ranked in rankings.items():
        weight = 1.0 if weights is None else weights.get(name, 1.0)
        for rank, row in enumerate(ranked, start=1):
            key = row["chunk_id"]
            rows.setdefault(key, row)
            fused[key] = fused.get(key, 0.0) + weight / (k + rank)
            parts.setdefault(key, {})[name] = float(row.get("_score", 0.0))
    order = sorted(fused, key=lambda key: -fused[key])
    return [(rows[key], fused[key], parts[key]) for key in order]


def age_decay(results: Sequence[ScoredChunk], now: datetime, *, per_year: float, floor: float) -> list[ScoredChunk]:
    """Scores (and relevance) multiplied by ``max(floor, 1 - per_year * age in years)``, best first again.

    A chunk's age runs from its document's date, or from when it was ingested if the document
    has none, to ``now`` (the as-of moment of the query, or the present).
    """
    out = []
    for r in results:
        born = r.document_date or (r.as_of.date() if r.as_of else None)
        if born is None:
            out.append(r)
            continue
        years = max(0.0, (now.date() - born).days / 365.25)
        factor = max(floor, 1.0 - per_year * years)
        out.append(replace(r, score=r.score * factor, relevance=r.relevance * factor,
                           scores={**r.scores, AGE_FACTOR_KEY: round(factor, 4)}))
    return sorted(out, key=lambda r: -r.score)
