"""Writing from the workspace: a cited answer to a question (``ask``), and the multi-lens
synthesis report of seed 000 (``generate``).

``generate``, step by step:

1. the sections: the workspace's themes (communities of its context graph, named by their own
   terms; :mod:`ragloom.graph.themes`), then the queries: the seed's six (product strategy and
   vision, roadmap priorities and timeline, technical architecture and dependencies, customer
   needs and outcomes, resource constraints and trade-offs, risks and concerns), or the
   user's, plus the user's context as one more;
2. for each, balanced retrieval across lenses, then graph expansion from its best results (a
   theme keeps to its own chunks); a chunk found by several goes to the one that ranked it best;
3. the contradictions among all the chunks chosen; the decisions log, the dated events and
   the open questions of the current documents (:mod:`ragloom.analyse`);
4. for each section, the optimised context grouped by lens in the authority order; the
   contradictions are told to the writer as warnings that quote both statements;
5. the decisions, the timeline of events, the writer's sections, the contradictions and
   supersessions with both sides, the open questions and the numbered sources, as Markdown
   and JSON in the workspace's ``reports/``.

The code numbers the sources, never the model, and every citation is checked after writing.
"""

from __future__ import annotations

import copy
import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ragloom.analyse.contradictions import Contradiction
from ragloom.errors import ConfigError, InvalidParameterError
from ragloom.query.request import Query
from ragloom.retrieve.base import unit
from ragloom.retrieve.sentences import sentence_index
from ragloom.synthesise import Answer, Report, Writer, build_report, number_report_sources, number_sources
from ragloom.synthesise.report import SectionInput
from ragloom.synthesise.writers import ExtractiveWriter, writer_from_settings
from ragloom.types import ScoredChunk

if TYPE_CHECKING:
    from ragloom.components import Components
    from ragloom.graph.themes import Theme
    from ragloom.graph.view import ContextGraph
    from ragloom.insights import Insights
    from ragloom.query import QueryResult, QueryService

#: Seed 000's queries for a comprehensive synthesis.
SEED_QUERIES = (
    "product strategy and vision",
    "roadmap priorities and timeline",
    "technical architecture and dependencies",
    "customer needs and outcomes",
    "resource constraints and trade-offs",
    "risks and concerns",
)
DEFAULT_TITLE = "Master roadmap: what every lens says"
#: A report's themes (its sections when no query is given), decisions and timeline events, at most.
MAX_THEMES, MAX_DECISIONS, MAX_EVENTS = 6, 15, 30
#: A report lists decisions that say what was decided ("No objections." alone does not).
MIN_DECISION_WORDS = 5
#: A theme's section keeps to the theme's own chunks when retrieval found at least this many.
MIN_THEME_SOURCES = 3
Progress = Callable[[str, int, int], None]  # (what, done, total)
OnText = Callable[[str], None]


@dataclass
class AskResult:
    """A cited answer, and the query that found its sources."""

    answer: Answer
    query: QueryResult
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        context = self.query.context
        return {
            **self.answer.to_dict(),
            "mode": self.query.mode,
            "tenant": self.query.tenant,
            "as_of": self.query.as_of.isoformat() if self.query.as_of else None,
            "context": {"tokens": context.total_tokens, "budget": context.budget, "strategy": context.strategy,
                        "candidates": len(self.query.results), "removed": len(context.removed)} if context else None,
            "notes": self.query.notes,
            "warnings": self.query.warnings,
            "timings": {k: round(v, 4) for k, v in self.query.timings.items()},
            "seconds": round(self.seconds, 4),
        }


@dataclass
class _Found:
    """What one query of a report retrieved, before de-duplication across queries."""

    query: str
    candidates: list[ScoredChunk]  # best first, on one relevance scale
    balanced: int
    expanded: int
    kept: list[ScoredChunk] = field(default_factory=list)


def read_queries(path: str | Path) -> list[str]:
    """Queries from a file: one per line; blank lines and lines starting with ``#`` are skipped."""
    file = Path(path)
    try:
        lines = file.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--queries {file}: cannot read it ({exc}); give a UTF-8 text file, one query per line") \
            from exc
    queries = [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]
    if not queries:
        raise ConfigError(f"--queries {file}: no queries in it; write one query per line")
    return queries


class Writing:
    """Answers and reports for one engine (see the module docstring)."""

    def __init__(self, components: Components, queries: QueryService, insights: Insights,
                 graph: Callable[[str], ContextGraph] | None = None) -> None:
        self.c = components
        self.queries = queries
        self.insights = insights
        #: The tenant's context graph (its themes name a report's sections when no query is given).
        self.graph = graph

    def writer(self, *, model: str | None = None, strongest: bool = False) -> Writer:
        """The configured writer (``[llm]``): a model's, or the offline extractive one."""
        return writer_from_settings(self.c.settings.llm, workspace=self.c.workspace.path, model=model,
                                    strongest=strongest)

    def _for(self, writer: Writer | None, tenant: str | None, as_of: datetime | str | None, *,
             cited_only: bool | None = None) -> Writer:
        """The writer to use; the extractive one also weighs sentence meaning, from the sentence
        index's vectors (current state only: an as-of report has no index in memory)."""
        writer = writer or self.writer()
        if isinstance(writer, ExtractiveWriter) and writer.closeness is None and as_of is None \
                and self.c.settings.sentences.enabled:
            return writer.with_closeness(self._closeness(self.c.tenant(tenant)), cited_only=cited_only)
        if isinstance(writer, ExtractiveWriter) and cited_only is not None and writer.cited_only != cited_only:
            other = copy.copy(writer)
            other.cited_only = cited_only
            return other
        return writer

    def _closeness(self, tenant: str) -> Callable[[str, Sequence[tuple[str, int, int]]], list[float | None]]:
        store, embedder = self.c.store, self.c.embedder
        asked: dict[str, np.ndarray] = {}

        def closeness(question: str, spans: Sequence[tuple[str, int, int]]) -> list[float | None]:
            index = sentence_index(store, tenant)
            if question not in asked:
                asked[question] = unit(embedder.embed_query(question))
            q = asked[question]
            out: list[float | None] = []
            for doc, start, end in spans:
                sentences = index.get(doc)
                i = int(np.searchsorted(sentences.starts, start, side="right")) - 1 if sentences is not None else -1
                if sentences is None or i < 0 or int(sentences.ends[i]) <= start:
                    out.append(None)
                    continue
                last = max(i, int(np.searchsorted(sentences.starts, end, side="left")) - 1)
                out.append(float(np.max(sentences.vectors[i : last + 1] @ q)))
            return out

        return closeness

    def ask(self, query: Query, *, writer: Writer | None = None, on_text: OnText | None = None) -> AskResult:
        """Retrieve, optimise into the budget, write an answer citing [n], check the citations."""
        started = time.perf_counter()
        question = query.text
        if isinstance(question, str) and not question.strip():
            raise InvalidParameterError("the question is empty: ask something, for example "
                                        "ragloom ask 'When does offline mode ship?'")
        request = self.queries.request(query, optimize=True)
        result = self.queries.run(request)
        chunks = list(result.context.chunks) if result.context is not None else []
        chosen = self._for(writer, query.tenant, query.as_of, cited_only=True)
        if isinstance(chosen, ExtractiveWriter):
            # No model's context window to fit: the offline writer reads every retrieved chunk
            # (the sentence that answers is often in one the budget leaves out) and lists the
            # ones it quotes.
            chunks = list(result.results)
        answer = chosen.answer(question, number_sources(chunks), on_text=on_text)
        return AskResult(answer, result, time.perf_counter() - started)

    def generate(self, *, context: str | None = "", queries: Sequence[str] | None = None, title: str = DEFAULT_TITLE,
                 tenant: str | None = None, lenses: Sequence[str] | None = None, as_of: datetime | str | None = None,
                 budget: int | None = None, writer: Writer | None = None, out: str | Path | None = None,
                 progress: Progress | None = None, on_text: OnText | None = None) -> Report:
        """The synthesis report (see the module docstring); saved under ``reports/`` and to ``out``."""
        started = time.perf_counter()
        self.queries.check_budget(budget)  # before the retrieval it would otherwise follow
        writer = self._for(writer, tenant, as_of)
        tenant = self.c.tenant(tenant)
        themes = self._themes(tenant, lenses)
        asked = list(queries) if queries else list(SEED_QUERIES)
        context = context or ""  # None, as from an API caller with no focus, is no context
        if context.strip():
            asked.append(" ".join(context.split()))
        timings: dict[str, float] = {}

        t0 = time.perf_counter()
        found = []
        topics = [t.label for t in themes] + asked
        for i, query in enumerate(topics):
            if progress is not None:
                progress(f"retrieving: {query}", i, len(topics))
            retrieved = self._retrieve(query, tenant=tenant, lenses=lenses, as_of=as_of)
            if i < len(themes):  # a theme's section quotes the theme's own chunks where retrieval found them
                members = set(themes[i].chunk_ids)
                inside = [c for c in retrieved.candidates if c.chunk_id in members]
                retrieved.candidates = inside if len(inside) >= MIN_THEME_SOURCES else retrieved.candidates
            found.append(retrieved)
        if progress is not None:
            progress("retrieving: done", len(topics), len(topics))
        _assign(found)
        timings["retrieve"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        chosen = [c.chunk_id for f in found for c in f.kept]
        contradictions = self.insights.contradictions(tenant=tenant, chunk_ids=chosen, limit=20) if chosen else []
        timings["contradictions"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        order = self._lens_order(tenant, lenses)
        optimised = [(f.query, self.queries.optimize(f.kept, f.query, budget=budget, organize="lens", tenant=tenant))
                     for f in found]
        per_query, sources = number_report_sources([(q, ctx.chunks) for q, ctx in optimised])
        numbers = {s.chunk_id: s.number for s in sources}
        timings["optimise"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        # What the documents record (current documents only: an as-of report has none of it).
        decisions = [] if as_of else [d for d in self.insights.decisions(tenant=tenant, lenses=lenses)
                                      if len(d.flat.split()) >= MIN_DECISION_WORDS][:MAX_DECISIONS]
        events = [] if as_of else self.insights.events(tenant=tenant, lenses=lenses, limit=MAX_EVENTS)
        still_open = [] if as_of else self.insights.open_items(tenant=tenant, lenses=lenses)
        timings["decisions_events"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        theme_inputs = [SectionInput(q, srcs) for q, srcs in per_query[:len(themes)]]
        report = build_report(
            title, per_query[len(themes):], contradictions, sources, order, writer, context=context,
            source_numbers=numbers, writer_context=_writer_context(context, contradictions),
            on_progress=(lambda done, total, query: progress(f"writing: {query}" if query else "assembling",
                                                             done, total)) if progress is not None else None,
            on_text=on_text, themes=theme_inputs, decisions=decisions, events=events, open_items=still_open,
            stats={"queries": [self._query_stats(f, ctx) for f, (_, ctx) in zip(found, optimised, strict=True)],
                   "themes": [t.to_dict() for t in themes], "decisions_found": len(decisions),
                   "events_found": len(events), "contradictions_found": len(contradictions), "tenant": tenant,
                   "as_of": str(as_of) if as_of else None, "embedder": self.c.embedder_name},
        )
        timings["write"] = time.perf_counter() - t0
        report = _with_timings(report, timings, time.perf_counter() - started)
        return replace(report, saved=tuple(self.save(report, out)))

    def _themes(self, tenant: str, lenses: Sequence[str] | None) -> list[Theme]:
        """The workspace's themes (none without a graph, or when only some lenses are asked
        for: a theme spans the whole workspace)."""
        if self.graph is None or not self.c.settings.graph.enabled or lenses:
            return []
        from ragloom.graph.themes import find_themes  # networkx: only a report needs it

        return find_themes(self.graph(tenant), limit=MAX_THEMES)

    def _retrieve(self, query: str, *, tenant: str, lenses: Sequence[str] | None,
                  as_of: datetime | str | None) -> _Found:
        """Balanced retrieval, then graph expansion from its results: seeds and neighbours are
        ranked together (relevance and lens diversity), all on one relevance scale."""
        request = self.queries.request(query, mode="balanced", tenant=tenant, lenses=lenses, as_of=as_of)
        # Every lens's chunks_per_lens, not the retrieval.k a query shows, and the graph's
        # final_limit after expansion.
        request = replace(request, k=None)
        balanced = self.queries.run(request).results
        if not self.c.settings.graph.enabled or not balanced:
            return _Found(query, balanced, len(balanced), 0)
        grown = self.queries.expand(request, balanced)
        return _Found(query, grown, len(balanced), sum(1 for r in grown if r.via is not None))

    def _lens_order(self, tenant: str, lenses: Sequence[str] | None) -> list[str]:
        """The workspace's lenses by authority (only the asked-for ones)."""
        return [lens for lens in self.c.lens_order(tenant) if lenses is None or lens in lenses]

    @staticmethod
    def _query_stats(found: _Found, context: Any) -> dict[str, Any]:  # noqa: ANN401 - an OptimizedContext
        reasons: dict[str, int] = {}
        for _, reason in context.removed:
            key = reason.split(" ", 1)[0]
            reasons[key] = reasons.get(key, 0) + 1
        return {"query": found.query, "balanced": found.balanced, "graph_expanded": found.expanded,
                "after_deduplication": len(found.kept), "in_context": len(context.chunks),
                "tokens": context.total_tokens, "budget": context.budget, "removed": reasons,
                "lenses": sorted({c.lens for c in context.chunks})}

    def save(self, report: Report, out: str | Path | None = None) -> list[Path]:
        """Markdown and JSON under ``<workspace>/reports/`` (and at ``out``); returns the paths."""
        stamp = report.generated_at.astimezone(UTC).strftime("%Y%m%d-%H%M%S")
        folder = self.c.workspace.path / "reports"
        stem = f"{stamp}-{_slug(report.title)}"
        for n in range(2, 1000):  # two reports of one title in one second keep both
            if not (folder / f"{stem}.md").exists():
                break
            stem = f"{stamp}-{_slug(report.title)}-{n}"
        paths = list(report.save(folder, stem))
        if out is not None:
            target = Path(out)
            paths += report.save(target.parent, target.stem if target.suffix in (".md", ".json") else target.name)
        return paths


def _assign(found: Sequence[_Found]) -> None:
    """Each chunk to the query that ranked it best (earlier queries win ties), so the report's
    sections do not repeat each other."""
    best: dict[str, tuple[float, int]] = {}
    for q, f in enumerate(found):
        for rank, chunk in enumerate(f.candidates):
            share = rank / max(len(f.candidates), 1)
            if chunk.chunk_id not in best or share < best[chunk.chunk_id][0]:
                best[chunk.chunk_id] = (share, q)
    for q, f in enumerate(found):
        f.kept = [c for c in f.candidates if best[c.chunk_id][1] == q]


def _writer_context(context: str, contradictions: Sequence[Contradiction]) -> str:
    """The user's context, and the contradictions as warnings quoting both statements."""
    parts = [context.strip()] if context.strip() else []
    if contradictions:
        lines = ["Contradictions between the sources (say so where they bear on this question):"]
        for c in contradictions[:10]:
            a, b = c.statements
            lines.append(f'- {c.topic} ({c.kind}): {a.lens} says "{" ".join(a.text.split())}" while {b.lens} says '
                         f'"{" ".join(b.text.split())}"')
        parts.append("\n".join(lines))
    return "\n\n".join(parts)


def _with_timings(report: Report, timings: dict[str, float], seconds: float) -> Report:
    stats = {**report.stats, "timings": {k: round(v, 3) for k, v in timings.items()}, "seconds": round(seconds, 3)}
    return replace(report, stats=stats)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:48] or "report"
