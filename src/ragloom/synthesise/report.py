"""The multi-lens synthesis report: the decisions log, a timeline of dated events, the themes of
the workspace, a section per question, contradictions and supersessions, open questions and the
numbered sources, as Markdown and as JSON.

:func:`build_report` runs the writer once per theme and once per question and assembles the
rest from what the code found (decisions, events, open questions, contradictions), so those
parts and the source list are the same whichever writer wrote the sections. Every statement
in the report is a verbatim quote with its source number, or (for a model's sections) a
sentence whose citations are checked.
"""

from __future__ import annotations

import calendar
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ragloom.analyse.contradictions import SUPERSEDED, Contradiction, Statement
from ragloom.analyse.decisions import Decision
from ragloom.analyse.events import Event
from ragloom.analyse.questions import OpenItem
from ragloom.errors import InvalidParameterError
from ragloom.parse.timeref import TimeRef, extract_time_refs
from ragloom.synthesise.citations import Citations, check_citations
from ragloom.synthesise.extract import candidates
from ragloom.synthesise.sources import (
    Quote,
    Source,
    add_span_sources,
    add_statement_sources,
    check_numbering,
    one_line,
    statement_number,
)
from ragloom.synthesise.writers import OnText, Section, Writer, quoted, statement_line

EXTRACTIVE_LABEL = "Extractive report (no language model configured)"
#: Time references of these kinds are precise enough to place a plain source sentence on the
#: timeline; a bare year ("in 2025") only counts in a statement the report quotes anyway.
TIMELINE_KINDS = frozenset({"quarter", "half", "month", "date"})


@dataclass(frozen=True, slots=True)
class SectionInput:
    """One query of the report and the sources retrieved for it (numbered for the report)."""

    query: str
    sources: tuple[Source, ...]


@dataclass(frozen=True, slots=True)
class TimelineEntry:
    """A dated statement: the periods it names and the sentence that names them.

    It sits on the timeline at its most precise period (a day before a month before a
    quarter), so "cannot ship before Q3 2025; the earliest GA is August 2025" is placed in
    August 2025, and "an estimate for Q2 and Q3 by February 25" on February 25.
    """

    period: str  # for the reader: "Q3 2025 · August 2025"
    periods: tuple[str, ...]  # canonical forms, in the order the sentence names them
    start: date  # of the most precise period
    end: date
    mention: str  # the references as written ("Q3 2025; August 2025")
    quote: Quote
    said: date | None = None  # the date of the document that says it

    @property
    def sort_key(self) -> str:
        return f"{self.start.isoformat()}/{self.end.isoformat()}"

    @property
    def number(self) -> int:
        return self.quote.number

    def to_dict(self) -> dict[str, Any]:
        return {"period": self.period, "periods": list(self.periods), "sort_key": self.sort_key,
                "start": self.start.isoformat(), "end": self.end.isoformat(), "mention": self.mention,
                "said": self.said.isoformat() if self.said else None, "source": self.number,
                "quote": self.quote.to_dict()}


@dataclass(frozen=True, slots=True)
class ReportDecision:
    """A recorded decision, quoted with its source number and dated by its document."""

    date: date | None
    kind: str  # decision | vote | approval | commitment
    section: str
    quote: Quote

    def to_dict(self) -> dict[str, Any]:
        return {"date": self.date.isoformat() if self.date else None, "kind": self.kind, "section": self.section,
                "lens": self.quote.lens, "source": self.quote.number, "quote": self.quote.to_dict()}


@dataclass(frozen=True, slots=True)
class ReportContradiction:
    """Two statements that disagree, each quoted with its source number."""

    topic: str
    kind: str  # date | number | negation
    type: str
    difference: str
    note: str
    certainty: float
    first: Quote
    second: Quote

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "kind": self.kind, "type": self.type, "difference": self.difference,
                "note": self.note, "certainty": self.certainty, "first": self.first.to_dict(),
                "second": self.second.to_dict()}


@dataclass(frozen=True, slots=True)
class OpenQuestion:
    """Something still open: a question the documents ask that nothing later answers, an action
    item nobody owns (both quoted), a query with thin evidence, or a silent lens (notes)."""

    kind: str  # unanswered | unowned_action | thin_evidence | silent_lens
    text: str
    query: str = ""
    lens: str = ""
    quote: Quote | None = None
    date: date | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "text": self.text, "query": self.query, "lens": self.lens,
                "date": self.date.isoformat() if self.date else None,
                "source": self.quote.number if self.quote else None,
                "quote": self.quote.to_dict() if self.quote else None}


def _jsonable(value: Any) -> Any:
    """``value`` with dates, tuples, sets and numpy scalars made JSON-serialisable."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_jsonable(v) for v in value), key=str)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value is None or isinstance(value, str | int | float | bool):
        return value
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars, without importing numpy
    if callable(tolist):
        return _jsonable(tolist())
    return str(value)


@dataclass(frozen=True)
class Report:
    """A synthesis report; see :func:`build_report`."""

    title: str
    generated_at: datetime
    writer: str
    model: str
    extractive: bool
    context: str
    lenses: tuple[str, ...]
    sections: tuple[Section, ...]
    timeline: tuple[TimelineEntry, ...]
    contradictions: tuple[ReportContradiction, ...]
    open_questions: tuple[OpenQuestion, ...]
    sources: tuple[Source, ...]
    stats: Mapping[str, Any] = field(default_factory=dict)
    citations: Citations = field(default_factory=Citations)
    #: where :meth:`ragloom.Engine.generate` wrote it (Markdown and JSON, each place); not in the files
    saved: tuple[Path, ...] = ()
    #: The decisions log, newest first (none when the builder was given none).
    decisions: tuple[ReportDecision, ...] = ()
    #: The workspace's themes, each a section named by its distinctive terms.
    themes: tuple[Section, ...] = ()
    #: The period the report's dated documents span, when it has dated documents.
    span: tuple[date, date] | None = None

    def to_markdown(self) -> str:
        """The report as Markdown: label, title, context, decisions, timeline, themes, a section
        per question, contradictions and supersessions, open questions, sources, statistics."""
        cited = f"{len(self.citations.valid)} of {len(self.sources)} sources cited"
        if self.extractive:
            top = f"*{EXTRACTIVE_LABEL}: every statement is quoted verbatim from its source; {cited}.*"
        else:
            by = f"{self.writer} ({self.model})" if self.model else self.writer
            top = f"*Written by {by} from the numbered sources below; {cited}, citations checked.*"
        spanned = f" · dated documents from {self.span[0]} to {self.span[1]}" if self.span else ""
        parts = [top, f"# {one_line(self.title)}",
                 f"*Generated {self.generated_at.isoformat(timespec='seconds')} · {len(self.sections)} questions · "
                 f"{len(self.themes)} themes{spanned} · lenses in order of authority: {', '.join(self.lenses) or 'none'}*"]
        if self.context.strip():
            quoted_context = "\n".join(f"> {line}".rstrip() for line in self.context.strip().splitlines())
            parts.append("## Context\n\n" + quoted_context)
        parts.append(_claims_markdown(self.sections, self.timeline, self.contradictions, self.sources,
                                      decisions=self.decisions, themes=self.themes, open_questions=self.open_questions))
        parts.append(_sources_markdown(self.sources))
        if self.stats:
            parts.append("## Statistics\n\n```json\n" + json.dumps(_jsonable(self.stats), indent=2, sort_keys=True)
                         + "\n```")
        if not self.citations.ok:
            parts.append("## Citation check\n\n" + _citation_notes(self.citations))
        return "\n\n".join(p.rstrip() for p in parts if p.strip()) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """The same structure as the Markdown, JSON-serialisable."""
        return {
            "title": self.title,
            "generated_at": self.generated_at.isoformat(),
            "writer": self.writer,
            "model": self.model,
            "extractive": self.extractive,
            "label": EXTRACTIVE_LABEL if self.extractive else "",
            "context": self.context,
            "lenses": list(self.lenses),
            "span": [self.span[0].isoformat(), self.span[1].isoformat()] if self.span else None,
            "decisions": [d.to_dict() for d in self.decisions],
            "themes": [t.to_dict() for t in self.themes],
            "sections": [s.to_dict() for s in self.sections],
            "timeline": [t.to_dict() for t in self.timeline],
            "contradictions": [c.to_dict() for c in self.contradictions],
            "open_questions": [q.to_dict() for q in self.open_questions],
            "sources": [s.to_dict() for s in self.sources],
            "stats": _jsonable(self.stats),
            "citations": self.citations.to_dict(),
            **({"saved": [str(p) for p in self.saved]} if self.saved else {}),  # not in the saved files
        }

    def save(self, folder: str | Path, stem: str) -> tuple[Path, Path]:
        """Write ``<folder>/<stem>.md`` and ``<folder>/<stem>.json``; return both paths."""
        if not stem or Path(stem).name != stem or stem in (".", ".."):
            raise InvalidParameterError(f"stem ({stem!r}) must be a plain file name without folders or suffix")
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        md, js = out / f"{stem}.md", out / f"{stem}.json"
        md.write_text(self.to_markdown(), encoding="utf-8")
        js.write_text(json.dumps(self.to_dict(), indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        return md, js


def _citation_notes(citations: Citations) -> str:
    lines = []
    if citations.invalid:
        lines.append("- *Cited numbers that match no source: " + ", ".join(f"{n}" for n in citations.invalid) + ".*")
    for sentence in citations.uncited_sentences:
        lines.append(f"- *Uncited: {sentence}*")
    for bad in citations.bad_quotes:
        lines.append(f"- *Quote {bad['reason']}: {bad['quote']}*")
    return "\n".join(lines)


def _sections_markdown(sections: Sequence[Section], *, level: int = 2) -> str:
    parts = []
    for s in sections:
        head = f"{'#' * level} {one_line(s.query)}"
        thin = f"\n\n*Thin evidence: {s.thin_reason}.*" if s.thin else ""
        parts.append(f"{head}{thin}\n\n{s.text.strip()}")
    return "\n\n".join(parts)


def _themes_markdown(themes: Sequence[Section]) -> str:
    if not themes:
        return ""
    return ("## Themes\n\n*What the workspace's documents are about: communities of the context graph, each named "
            "by the terms most particular to it, with what each lens says.*\n\n" + _sections_markdown(themes, level=3))


def _decisions_markdown(decisions: Sequence[ReportDecision]) -> str:
    if not decisions:
        return ""
    lines = [f"- **{d.date.isoformat() if d.date else 'undated'}** ({d.quote.lens or 'no lens'}, {d.kind}): "
             f"{statement_line(d.quote)}" for d in decisions]
    return "## Decisions\n\n" + "\n".join(lines)


def _timeline_markdown(timeline: Sequence[TimelineEntry]) -> str:
    if not timeline:
        return ""
    lines = [f"- **{t.period}**" + (f" (said {t.said.isoformat()})" if t.said else "") + f": {statement_line(t.quote)}"
             for t in timeline]
    return "## Timeline\n\n" + "\n".join(lines)


def _side(quote: Quote, sources: Mapping[int, Source]) -> str:
    source = sources.get(quote.number)
    where = f"{quote.lens or 'no lens'} · {source.source_name if source else 'unknown document'}"
    return f"> {quoted(quote.display)} [{quote.number}]\n>\n> *— {where}*"


def _contradictions_markdown(contradictions: Sequence[ReportContradiction], sources: Mapping[int, Source]) -> str:
    if not contradictions:
        return ""
    blocks = []
    for i, c in enumerate(contradictions, 1):
        note = f" {c.note.rstrip('.')}." if c.note else ""
        kind = f"{c.kind}, superseded" if c.type == SUPERSEDED else c.kind
        blocks.append(f"### {i}. {one_line(c.topic)} ({kind})\n\n*{c.difference}.{note}*\n\n"
                      f"{_side(c.first, sources)}\n\n{_side(c.second, sources)}")
    return "## Contradictions and supersessions\n\n" + "\n\n".join(blocks)


def _claims_markdown(sections: Sequence[Section], timeline: Sequence[TimelineEntry],
                     contradictions: Sequence[ReportContradiction], sources: Sequence[Source] = (), *,
                     decisions: Sequence[ReportDecision] = (), themes: Sequence[Section] = (),
                     open_questions: Sequence[OpenQuestion] = ()) -> str:
    """The parts of the report that state things, and so must cite: what the check reads."""
    by_number = {s.number: s for section in (*sections, *themes) for s in section.sources}
    by_number.update({s.number: s for s in sources})
    parts = [_decisions_markdown(decisions), _timeline_markdown(timeline), _themes_markdown(themes),
             _sections_markdown(sections), _contradictions_markdown(contradictions, by_number),
             _open_questions_markdown(open_questions)]
    return "\n\n".join(p for p in parts if p)


def _open_questions_markdown(questions: Sequence[OpenQuestion]) -> str:
    if not questions:
        return ""
    lines = []
    for q in questions:
        if q.quote is not None:
            when = f"**{q.date.isoformat()}** " if q.date else ""
            what = "asked, and nothing later answers it" if q.kind == "unanswered" else "an action item nobody owns"
            lines.append(f"- {when}({q.quote.lens or 'no lens'}, {what}): {statement_line(q.quote)}")
        else:
            lines.append(f"- *{q.text}*")
    return "## Open questions\n\n" + "\n".join(lines)


def _sources_markdown(sources: Sequence[Source]) -> str:
    if not sources:
        return "## Sources\n\n*No sources.*"
    lines = []
    for s in sources:
        where = s.source_path + (f" › {one_line(s.section_path)}" if s.section_path else "")
        lines.append(f"- **[{s.number}]** {where} ({s.lens or 'no lens'}, chars {s.start}–{s.end})")
    return "## Sources\n\n" + "\n".join(lines)


def period_label(ref: TimeRef) -> str:
    """A period as a reader writes it: "Q3 2025", "H1 2025", "August 2025", "2025-06-30"."""
    if ref.kind == "month" and ref.period_start is not None:
        return f"{calendar.month_name[ref.period_start.month]} {ref.period_start.year}"
    return ref.canonical


def _dated(quote: Quote, reference: date | None, kinds: frozenset[str] | None) -> TimelineEntry | None:
    """The timeline entry of one sentence, or None when it names no resolved period (or is a
    question: asking about a date is not dating anything)."""
    if quote.display.rstrip("*_ ").endswith("?"):
        return None
    refs: dict[str, tuple[TimeRef, date, date]] = {}
    for ref in extract_time_refs(quote.text, reference=reference):
        if not ref.resolved or ref.period_start is None or ref.period_end is None:
            continue  # "in Q2" of an undated document: no place on a timeline
        if kinds is None or ref.kind in kinds:
            refs.setdefault(ref.canonical, (ref, ref.period_start, ref.period_end))
    if not refs:
        return None
    # The most precise period places the sentence; ties go to the earlier one.
    _, start, end = min(refs.values(), key=lambda r: (r[2] - r[1], r[1]))
    named = [r for r, _, _ in refs.values()]
    return TimelineEntry(" · ".join(period_label(r) for r in named), tuple(refs), start, end,
                         "; ".join(one_line(r.text) for r in named), quote)


def build_timeline(quotes: Sequence[Quote], sources: Sequence[Source], *, from_sources: bool = True,
                   limit: int = 40) -> list[TimelineEntry]:
    """Dated statements in chronological order (by their most precise period's start, then
    its end, then source number).

    ``quotes`` (the statements the report quotes) come first; with ``from_sources`` every
    other source sentence naming a quarter, half, month or day joins them, up to ``limit``
    entries in all. References are resolved against the source's document date; unresolved
    ones are left out.
    """
    by_number = {s.number: s for s in sources}
    entries: list[TimelineEntry] = []
    seen: set[tuple[str, int, int]] = set()

    def add(entry: TimelineEntry | None) -> None:
        if entry is None:
            return
        key = (entry.quote.document_id, entry.quote.start, entry.quote.end)
        if key not in seen and len(entries) < limit:
            seen.add(key)
            entries.append(entry)

    for q in quotes:
        source = by_number.get(q.number)
        add(_dated(q, source.document_date if source else None, None))
    if from_sources:
        for c in candidates(sources):
            add(_dated(c.quote(), c.source.document_date, TIMELINE_KINDS))
    return sorted(entries, key=lambda t: (t.start, t.end, t.number, t.quote.start))


def _statement_quote(statement: Statement, number: int) -> Quote:
    return Quote(number, statement.text, statement.start, statement.end, statement.lens, statement.document_id)


def report_contradictions(contradictions: Sequence[Contradiction], sources: Sequence[Source],
                          numbers: Mapping[str, int] | None = None) -> list[ReportContradiction]:
    """The contradictions with both statements quoted and numbered. A statement that no
    source holds is an error here: add its source first (:func:`add_statement_sources`)."""
    out = []
    for c in contradictions:
        quotes = []
        for st in c.statements:
            n = statement_number(st, sources, numbers)
            if n is None:
                raise InvalidParameterError(
                    f"the statement {one_line(st.text)[:60]!r} of {st.source_path} is in no source; "
                    "add it with add_statement_sources before building the report")
            quotes.append(_statement_quote(st, n))
        out.append(ReportContradiction(c.topic, c.kind, c.type, c.difference, c.note, c.certainty,
                                       quotes[0], quotes[1]))
    return out


def _thin_reason(section: Section, min_sources: int, min_statements: int) -> str:
    reasons = []
    if len(section.sources) < min_sources:
        n = len(section.sources)
        reasons.append(f"{n} source{'s' if n != 1 else ''}, fewer than {min_sources}")
    if section.statements < min_statements:
        n = section.statements
        reasons.append(f"{n} statement{'s' if n != 1 else ''}, fewer than {min_statements}")
    return "; ".join(reasons)


def open_questions(sections: Sequence[Section], lenses: Sequence[str]) -> list[OpenQuestion]:
    """Queries with thin evidence, then expected lenses that no section heard from."""
    out = [OpenQuestion("thin_evidence", f"“{one_line(s.query)}” has thin evidence ({s.thin_reason}); add material "
                        "or widen the retrieval", query=s.query) for s in sections if s.thin]
    heard = {lens for s in sections for lens in s.lenses_heard}
    retrieved = {src.lens for s in sections for src in s.sources}
    for lens in lenses:
        if lens in heard:
            continue
        why = ("its sources were retrieved but say nothing quotable on these queries" if lens in retrieved
               else "no source of this lens was retrieved for any query")
        out.append(OpenQuestion("silent_lens", f"The {lens} lens is silent: {why}", lens=lens))
    return out


def _as_input(item: SectionInput | tuple[str, Sequence[Source]]) -> SectionInput:
    return item if isinstance(item, SectionInput) else SectionInput(item[0], tuple(item[1]))


def build_report(
    title: str,
    sections: Sequence[SectionInput | tuple[str, Sequence[Source]]],
    contradictions: Sequence[Contradiction],
    sources: Sequence[Source],
    lenses: Sequence[str],
    writer: Writer,
    *,
    context: str = "",
    stats: Mapping[str, Any] | None = None,
    source_numbers: Mapping[str, int] | None = None,
    min_sources: int = 2,
    min_statements: int = 2,
    timeline_limit: int = 40,
    on_progress: Callable[[int, int, str], None] | None = None,
    on_text: OnText | None = None,
    now: datetime | None = None,
    writer_context: str | None = None,
    themes: Sequence[SectionInput] = (),
    decisions: Sequence[Decision] = (),
    events: Sequence[Event] = (),
    open_items: Sequence[OpenItem] = (),
) -> Report:
    """Write one section per query with ``writer`` and assemble the report.

    ``sources`` is the report's numbered source list (:func:`number_report_sources` makes it
    with each query's share); every section's sources must be among them. Contradiction
    statements are matched to the source that holds them (``source_numbers`` maps chunk ids
    to numbers; the span is checked); one that no source holds is added as a new source.
    ``lenses`` is the expected lens list in authority order. ``on_progress(done, total,
    query)`` is called before each section, and ``on_text`` receives the text as it is
    written. A section is thin below ``min_sources`` sources or ``min_statements`` statements.
    ``writer_context``, when given, is what the writer is told instead of ``context`` (the
    user's context plus warnings the code found, such as contradictions).

    ``themes`` are written like the queries, before them, under "Themes". ``decisions``,
    ``events`` (the timeline, in place of the dated sentences of the sources) and
    ``open_items`` are quoted as they are; a sentence that no source holds becomes a source.
    """
    if min_sources < 0 or min_statements < 0:
        raise InvalidParameterError(f"min_sources ({min_sources}) and min_statements ({min_statements}) "
                                    "must be 0 or more")
    check_numbering(sources)
    numbers = dict(source_numbers) if source_numbers else None
    spans = {kind: [_as_statement(item) for item in items]
             for kind, items in (("decisions", decisions), ("events", events), ("open", open_items))}
    all_sources = add_span_sources(add_statement_sources(sources, contradictions, numbers),
                                   [st for found in spans.values() for st in found], numbers)
    known = {s.number: s for s in all_sources}
    inputs = [_as_input(item) for item in sections]
    for item in (*themes, *inputs):
        for s in item.sources:
            if known.get(s.number) != s:
                raise InvalidParameterError(
                    f"source [{s.number}] of the query {item.query!r} is not the report's source [{s.number}]; "
                    "number all sections' sources together with number_report_sources")
    written: list[Section] = []
    everything = [*themes, *inputs]
    for i, item in enumerate(everything):
        if on_progress is not None:
            on_progress(i, len(everything), item.query)
        told = context if writer_context is None else writer_context
        section = writer.section(item.query, item.sources, lenses=lenses, on_text=on_text, context=told, title=title)
        reason = _thin_reason(section, min_sources, min_statements)
        written.append(replace(section, thin=bool(reason), thin_reason=reason))
    if on_progress is not None:
        on_progress(len(everything), len(everything), "")
    theme_sections, written = written[:len(themes)], written[len(themes):]

    def quote(st: Statement) -> Quote:
        n = statement_number(st, all_sources, numbers)
        assert n is not None  # add_span_sources made one for every statement
        return _statement_quote(st, n)

    logged = [ReportDecision(d.date, d.kind, d.section, quote(st)) for d, st in zip(decisions, spans["decisions"],
                                                                                   strict=True)]
    paired = report_contradictions(contradictions, all_sources, numbers)
    if events:
        timeline = [TimelineEntry(_period_name(e.period), (e.period,), e.begins, e.ends, e.mention, quote(st), e.said)
                    for e, st in zip(events, spans["events"], strict=True)][:timeline_limit]
    else:
        quotes = [q for s in (*theme_sections, *written) for q in s.quotes] + \
            [q for c in paired for q in (c.first, c.second)]
        timeline = build_timeline(quotes, all_sources, limit=timeline_limit)
    still_open = [OpenQuestion(item.kind, item.flat, lens=item.lens, quote=quote(st), date=item.date)
                  for item, st in zip(open_items, spans["open"], strict=True)]
    still_open += open_questions([*theme_sections, *written], lenses)
    claims = _claims_markdown(written, timeline, paired, all_sources, decisions=logged, themes=theme_sections,
                              open_questions=still_open)
    days = [s.document_date for s in all_sources if s.document_date is not None]
    return Report(
        title=title,
        generated_at=now or datetime.now(UTC),
        writer=writer.name,
        model=writer.model,
        extractive=writer.extractive,
        context=context,
        lenses=tuple(lenses),
        sections=tuple(written),
        timeline=tuple(timeline),
        contradictions=tuple(paired),
        open_questions=tuple(still_open),
        sources=tuple(all_sources),
        stats=dict(stats or {}),
        citations=check_citations(claims, all_sources),
        decisions=tuple(logged),
        themes=tuple(theme_sections),
        span=(min(days), max(days)) if days else None,
    )


def _as_statement(item: Decision | Event | OpenItem) -> Statement:
    """A decision, an event or an open item as the statement it quotes (the exact span)."""
    day = item.said if isinstance(item, Event) else item.date
    section = item.section if isinstance(item, Decision) else ""
    return Statement("", item.document_id, item.lens, item.source_path, section, item.start, item.end, item.text, day)


def _period_name(canonical: str) -> str:
    """"2025-10" as "October 2025"; days, quarters and halves as written."""
    year, _, month = canonical.partition("-")
    if year.isdigit() and month.isdigit() and len(month) == 2:
        return f"{calendar.month_name[int(month)]} {year}"
    return canonical
