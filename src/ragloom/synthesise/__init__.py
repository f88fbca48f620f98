"""The writing step: numbered sources, checked citations, LLM providers, prompts in files, the
offline extractive writer, and the multi-lens report.

>>> from ragloom.synthesise import ExtractiveWriter, number_sources
>>> answer = ExtractiveWriter().answer("When does the catalog ship?", number_sources(chunks))  # doctest: +SKIP
>>> answer.citations.ok                                                                        # doctest: +SKIP
True

No language model SDK is imported until a provider is built (``pip install 'ragloom[llm]'``).
"""

from ragloom.config import LLMSettings
from ragloom.synthesise.citations import (
    Citations,
    check_citations,
    cited_numbers,
    find_citations,
    locate_quote,
    located_quotes,
    parse_numbers,
)
from ragloom.synthesise.llm import LLM, AnthropicLLM, OpenAICompatibleLLM, llm_from_settings
from ragloom.synthesise.prompts import PROMPT_NAMES, Prompts, load_prompt, render
from ragloom.synthesise.report import (
    EXTRACTIVE_LABEL,
    OpenQuestion,
    Report,
    ReportContradiction,
    SectionInput,
    TimelineEntry,
    build_report,
    build_timeline,
    open_questions,
    report_contradictions,
)
from ragloom.synthesise.sources import (
    Quote,
    Source,
    add_statement_sources,
    format_sources,
    number_report_sources,
    number_sources,
    statement_number,
)
from ragloom.synthesise.writers import (
    ANSWER_LABEL,
    Answer,
    ExtractiveWriter,
    LLMWriter,
    Section,
    Writer,
    writer_from_settings,
)

__all__ = [
    "ANSWER_LABEL",
    "EXTRACTIVE_LABEL",
    "LLM",
    "PROMPT_NAMES",
    "AnthropicLLM",
    "Answer",
    "Citations",
    "ExtractiveWriter",
    "LLMSettings",
    "LLMWriter",
    "OpenAICompatibleLLM",
    "OpenQuestion",
    "Prompts",
    "Quote",
    "Report",
    "ReportContradiction",
    "Section",
    "SectionInput",
    "Source",
    "TimelineEntry",
    "Writer",
    "add_statement_sources",
    "build_report",
    "build_timeline",
    "check_citations",
    "cited_numbers",
    "find_citations",
    "format_sources",
    "llm_from_settings",
    "load_prompt",
    "locate_quote",
    "located_quotes",
    "number_report_sources",
    "number_sources",
    "open_questions",
    "parse_numbers",
    "render",
    "report_contradictions",
    "statement_number",
    "writer_from_settings",
]
