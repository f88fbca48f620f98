"""Writers: turn numbered sources into an answer or a report section, with checked citations.

- :class:`LLMWriter` asks a language model (streaming through ``on_text`` when given).
- :class:`ExtractiveWriter` is the offline default: it writes nothing of its own, it quotes
  the sources' best sentences verbatim, each with its citation, so every citation is valid by
  construction and every quote is an exact document span.

Whatever wrote the text, its citations are checked afterwards against the sources it was
given (:func:`~ragloom.synthesise.citations.check_citations`).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from ragloom.config import LLMSettings
from ragloom.errors import InvalidParameterError, LLMError
from ragloom.plugins import Registry
from ragloom.synthesise.answering import Ranked, answers, rank
from ragloom.synthesise.citations import Citations, check_citations, located_quotes
from ragloom.synthesise.extract import Candidate, candidates, centrality, select, terms
from ragloom.synthesise.llm import LLM, llm_from_settings
from ragloom.synthesise.prompts import Prompts, render
from ragloom.synthesise.sources import Quote, Source, check_numbering, format_sources

OnText = Callable[[str], None]
#: ``(question, [(document id, start, end), ...]) -> [cosine or None, ...]`` for sentence spans.
Closeness = Callable[[str, Sequence[tuple[str, int, int]]], Sequence[float | None]]

#: The first line of an extractive answer: a reader must know no model wrote it.
ANSWER_LABEL = ("*Extractive answer (no language model configured): the statements below are quoted verbatim "
                "from the sources.*")
NO_ANSWER = "The sources do not answer this question."
NOTHING_ANSWERS = "Nothing in the sources answers this question; the closest statements are:"
#: An answer may quote sentences this short; report sections keep the writer's ``min_words``.
ANSWER_MIN_WORDS = 2
NO_SOURCES = "The sources do not answer this question: no source was found for it."
#: A report section quotes a lens's closest sentence without the query's words only this close.
SECTION_MIN_COSINE = 0.45


@dataclass(frozen=True)
class Answer:
    """A written answer, its sources and the check of its citations."""

    question: str
    text: str
    sources: tuple[Source, ...]
    citations: Citations
    quotes: tuple[Quote, ...] = ()
    writer: str = ""
    model: str = ""
    extractive: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"question": self.question, "text": self.text, "sources": [s.to_dict() for s in self.sources],
                "citations": self.citations.to_dict(), "quotes": [q.to_dict() for q in self.quotes],
                "writer": self.writer, "model": self.model, "extractive": self.extractive}


@dataclass(frozen=True)
class Section:
    """One section of a report: what the sources say about one query, lens by lens."""

    query: str
    text: str
    sources: tuple[Source, ...]
    citations: Citations
    quotes: tuple[Quote, ...] = ()
    lenses: tuple[str, ...] = ()
    writer: str = ""
    model: str = ""
    extractive: bool = False
    thin: bool = False
    thin_reason: str = ""
    #: Lenses the section quotes (extractive) or cites (a model), in the order of ``lenses``.
    lenses_heard: tuple[str, ...] = field(default=())

    @property
    def statements(self) -> int:
        """How many statements carry the section: quotes, else sentences with a valid citation."""
        return len(self.quotes) if self.extractive else self.citations.cited_sentences

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "text": self.text, "sources": [s.number for s in self.sources],
                "citations": self.citations.to_dict(), "quotes": [q.to_dict() for q in self.quotes],
                "lenses": list(self.lenses), "lenses_heard": list(self.lenses_heard), "writer": self.writer,
                "model": self.model, "extractive": self.extractive, "statements": self.statements,
                "thin": self.thin, "thin_reason": self.thin_reason}


@runtime_checkable
class Writer(Protocol):
    """Writes answers and report sections from numbered sources."""

    @property
    def name(self) -> str: ...

    @property
    def model(self) -> str: ...

    @property
    def extractive(self) -> bool: ...

    def answer(self, question: str, sources: Sequence[Source], *, on_text: OnText | None = None) -> Answer: ...

    def section(self, query: str, sources: Sequence[Source], *, lenses: Sequence[str], on_text: OnText | None = None,
                context: str = "", title: str = "") -> Section: ...


def _lens_order(lenses: Sequence[str], sources: Sequence[Source]) -> list[str]:
    """The given lenses (the authority order), then any other lens the sources hold."""
    return list(dict.fromkeys([*lenses, *(s.lens for s in sources)]))


def _heard(order: Sequence[str], lenses: set[str]) -> tuple[str, ...]:
    return tuple(lens for lens in order if lens in lenses)


class LLMWriter:
    """Writes with a language model, from the prompts in :mod:`ragloom.synthesise.prompts`."""

    extractive = False

    def __init__(self, llm: LLM, prompts: Prompts | None = None, *, max_tokens: int = 2000) -> None:
        if max_tokens < 1:
            raise InvalidParameterError(f"max_tokens ({max_tokens}) must be at least 1; set llm.max_tokens")
        self.llm = llm
        self.prompts = prompts if prompts is not None else Prompts.load()
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:
        return self.llm.name

    @property
    def model(self) -> str:
        return self.llm.model

    def _write(self, prompt: str, on_text: OnText | None) -> str:
        if on_text is None:
            return self.llm.complete(self.prompts.system, prompt, max_tokens=self.max_tokens)
        parts = []
        for delta in self.llm.stream(self.prompts.system, prompt, max_tokens=self.max_tokens):
            parts.append(delta)
            on_text(delta)
        text = "".join(parts)
        if not text.strip():
            raise LLMError(f"{self.llm.name}: the model {self.llm.model!r} streamed no text; raise llm.max_tokens or "
                           "check the prompt", provider=self.llm.name, reason="empty")
        return text

    def answer(self, question: str, sources: Sequence[Source], *, on_text: OnText | None = None) -> Answer:
        check_numbering(sources)
        if not sources:  # nothing to write from: asking a model would only invite a guess
            if on_text is not None:
                on_text(NO_SOURCES)
            return Answer(question, NO_SOURCES, (), check_citations(NO_SOURCES, ()), (), self.name, self.model, False)
        prompt = render(self.prompts.answer, question=question, sources=format_sources(sources))
        text = self._write(prompt, on_text)
        return Answer(question, text, tuple(sources), check_citations(text, sources),
                      tuple(located_quotes(text, sources)), self.name, self.model, False)

    def section(self, query: str, sources: Sequence[Source], *, lenses: Sequence[str], on_text: OnText | None = None,
                context: str = "", title: str = "") -> Section:
        check_numbering(sources)
        order = _lens_order(lenses, sources)
        if not sources:
            if on_text is not None:
                on_text(NO_SOURCES)
            return Section(query, NO_SOURCES, (), check_citations(NO_SOURCES, ()), (), tuple(order), self.name,
                           self.model, False)
        prompt = render(self.prompts.report_section, query=query, sources=format_sources(sources),
                        lenses=", ".join(order), context=context.strip() or "(none)", title=title or "Report")
        text = self._write(prompt, on_text)
        citations = check_citations(text, sources)
        by_number = {s.number: s for s in sources}
        heard = _heard(order, {by_number[n].lens for n in citations.valid})
        return Section(query, text, tuple(sources), citations, tuple(located_quotes(text, sources)), tuple(order),
                       self.name, self.model, False, lenses_heard=heard)


def quoted(text: str) -> str:
    """``text`` in quotation marks that it does not itself contain (so the quote checker can
    find where it ends); unquoted when it holds both kinds."""
    if "“" not in text and "”" not in text:
        return f"“{text}”"
    if '"' not in text:
        return f'"{text}"'
    return text


def statement_line(quote: Quote) -> str:
    return f"{quoted(quote.display)} [{quote.number}]"


class ExtractiveWriter:
    """The offline writer: the sources' best sentences, quoted verbatim with their citations.

    ``max_statements`` bounds an answer, ``per_lens`` each lens of a report section;
    ``style`` writes the statements as a bullet list or as one paragraph. Sentences shorter
    than ``min_words`` or longer than ``max_words`` are not quoted.
    """

    name = "extractive"
    model = ""
    extractive = True

    def __init__(self, *, max_statements: int = 3, per_lens: int = 3,
                 style: Literal["bullets", "paragraph"] = "bullets", min_words: int = 5, max_words: int = 80,
                 closeness: Closeness | None = None, cited_only: bool = False) -> None:
        if max_statements < 1:
            raise InvalidParameterError(f"max_statements ({max_statements}) must be at least 1")
        if per_lens < 1:
            raise InvalidParameterError(f"per_lens ({per_lens}) must be at least 1")
        if style not in ("bullets", "paragraph"):
            raise InvalidParameterError(f"style ({style!r}) must be 'bullets' or 'paragraph'")
        if not 1 <= min_words <= max_words:
            raise InvalidParameterError(
                f"min_words ({min_words}) must be at least 1 and at most max_words ({max_words})")
        self.max_statements = max_statements
        self.per_lens = per_lens
        self.style = style
        self.min_words = min_words
        self.max_words = max_words
        #: ``closeness(question, spans) -> cosines``: sentence vectors, when the caller has them.
        self.closeness = closeness
        #: An answer lists only the sources it quotes, renumbered (ask gives it every retrieved chunk).
        self.cited_only = cited_only

    def _candidates(self, sources: Sequence[Source]) -> list[Candidate]:
        return candidates(sources, min_words=self.min_words, max_words=self.max_words)

    def with_closeness(self, closeness: Closeness, *, cited_only: bool | None = None) -> ExtractiveWriter:
        """A copy of this writer that also weighs how close each sentence is to the question
        (and, given ``cited_only``, lists only the sources an answer quotes)."""
        other = copy.copy(self)
        other.closeness = closeness
        if cited_only is not None:
            other.cited_only = cited_only
        return other

    def _closeness(self, question: str, pool: Sequence[Candidate]) -> dict[tuple[int, int], float] | None:
        if self.closeness is None or not pool:
            return None
        spans = [(c.source.document_id, c.source.start + c.start, c.source.start + c.end) for c in pool]
        found = self.closeness(question, spans)
        return {(c.rank, c.start): v for c, v in zip(pool, found, strict=True) if v is not None}

    def _body(self, quotes: Sequence[Quote]) -> str:
        lines = [statement_line(q) for q in quotes]
        return "\n".join(f"- {line}" for line in lines) if self.style == "bullets" else " ".join(lines)

    def ranked(self, question: str, sources: Sequence[Source]) -> list[Ranked]:
        """Every candidate sentence of ``sources`` scored for ``question``, best first (what
        :meth:`answer` quotes from; see :mod:`ragloom.synthesise.answering`)."""
        pool = candidates(sources, min_words=min(self.min_words, ANSWER_MIN_WORDS), max_words=self.max_words)
        return rank(question, pool, sources=len(sources), closeness=self._closeness(question, pool))

    def answer(self, question: str, sources: Sequence[Source], *, on_text: OnText | None = None) -> Answer:
        """The sentences that answer ``question`` best (what it asks for, in meaning and words),
        quoted; when none does, the closest, saying so."""
        check_numbering(sources)
        # Short statements answer too ("2 year term", "Target: 300,000 USD").
        pool = candidates(sources, min_words=min(self.min_words, ANSWER_MIN_WORDS), max_words=self.max_words)
        picks, answered = answers(question, pool, sources=len(sources), limit=self.max_statements,
                                  closeness=self._closeness(question, pool))
        parts = [ANSWER_LABEL, ""]
        if picks and not answered:
            picks = picks[:2]
            parts.append(NOTHING_ANSWERS)
        if self.cited_only and picks:
            # The sources it quotes, numbered in the order quoted: the others were read, not used.
            numbers: dict[int, Source] = {}
            for r in picks:
                numbers.setdefault(r.candidate.source.number,
                                   replace(r.candidate.source, number=len(numbers) + 1))
            sources = list(numbers.values())
            quotes = tuple(Quote.from_source(numbers[r.candidate.source.number], r.candidate.start, r.candidate.end)
                           for r in picks)
        else:
            quotes = tuple(r.candidate.quote() for r in picks)
        parts.append(self._body(quotes) if quotes else (NO_SOURCES if not sources else NO_ANSWER))
        text = "\n".join(parts) + "\n"
        if on_text is not None:
            on_text(text)
        return Answer(question, text, tuple(sources), check_citations(text, sources), quotes, self.name, "", True)

    def section(self, query: str, sources: Sequence[Source], *, lenses: Sequence[str], on_text: OnText | None = None,
                context: str = "", title: str = "") -> Section:
        """The key statements per lens, lenses in the order given (the authority order), then
        any other lens the sources hold. A lens is quoted only where it speaks to the query: a
        sentence that names the query's words, or (with sentence vectors) one at least
        :data:`SECTION_MIN_COSINE` close to it in meaning; a lens with neither stays silent
        rather than padding the section with an off-topic quote."""
        check_numbering(sources)
        order = _lens_order(lenses, sources)
        pool = self._candidates(sources)
        wanted = terms(query)
        central = centrality(pool)
        close = self._closeness(query, pool)
        blocks: list[str] = []
        quotes: list[Quote] = []
        for lens in order:
            mine = [c for c in pool if c.source.lens == lens]
            picks = select(mine, wanted, limit=self.per_lens, sources=len(sources), lens_bonus=False, central=central,
                           closeness=close)
            if not picks and close:
                # No sentence names the query's words: the closest in meaning, if it is close.
                best = max(mine, key=lambda c: close.get((c.rank, c.start), -1.0), default=None)
                if best is not None and close.get((best.rank, best.start), -1.0) >= SECTION_MIN_COSINE:
                    picks = [best]
            if picks:
                mine_quotes = [c.quote() for c in picks]
                quotes.extend(mine_quotes)
                blocks.append(f"**{lens}**\n\n{self._body(mine_quotes)}")
        text = ("\n\n".join(blocks) if blocks else (NO_SOURCES if not sources else NO_ANSWER)) + "\n"
        if on_text is not None:
            on_text(text)
        return Section(query, text, tuple(sources), check_citations(text, sources), tuple(quotes), tuple(order),
                       self.name, "", True, lenses_heard=_heard(order, {q.lens for q in quotes}))


class WriterFactory(Protocol):
    """Builds a writer from the ``[llm]`` settings (what a ``ragloom.writers`` entry point names)."""

    def __call__(self, settings: LLMSettings, *, workspace: Path | None, model: str | None, strongest: bool,
                 environ: Mapping[str, str]) -> Writer: ...


def _model_writer(settings: LLMSettings, *, workspace: Path | None, model: str | None, strongest: bool,
                  environ: Mapping[str, str]) -> Writer:
    llm = llm_from_settings(settings, model=model, strongest=strongest, environ=environ)
    if llm is None:
        return ExtractiveWriter()
    return LLMWriter(llm, Prompts.load(workspace), max_tokens=settings.max_tokens)


def _builtin_writers() -> dict[str, WriterFactory]:
    return {"none": _model_writer, "anthropic": _model_writer, "openai": _model_writer}


#: Writers by ``llm.provider``: the built-ins, then the ``ragloom.writers`` entry points.
WRITERS: Registry[WriterFactory] = Registry("writer", "ragloom.writers", _builtin_writers)


def writer_from_settings(
    settings: LLMSettings, *, workspace: Path | None = None, model: str | None = None, strongest: bool = False,
    environ: Mapping[str, str] = os.environ,
) -> Writer:
    """The writer ``[llm]`` describes: a model's, the extractive writer for ``provider = "none"``,
    or an installed writer plugin's. Prompts come from ``<workspace>/prompts/`` where the user
    put their own."""
    factory = WRITERS.get(settings.provider)
    return factory(settings, workspace=workspace, model=model, strongest=strongest, environ=environ)
