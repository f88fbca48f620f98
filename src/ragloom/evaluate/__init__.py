"""``ragloom eval``: measure each technique against its baseline on data others wrote.

Suites: ``chunking`` (Chroma's chunking evaluation), ``contextual`` (Anthropic's contextual
retrieval over code), ``ab`` (seed 001's A/B test on the sample materials), ``multihop``
(HotpotQA's two-paragraph questions, issue 17) and ``windows`` (seed 003's sentence-window
benchmark). Each writes JSON, a Markdown table and PNG charts.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ragloom.checks import shown
from ragloom.config import EmbeddingSettings, Settings
from ragloom.embed import Embedder
from ragloom.errors import InvalidParameterError, UnknownNameError
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.report import SuiteResult, write
from ragloom.ingest.report import Progress


def _suite(name: str) -> Callable[..., SuiteResult]:
    # Imported on demand: each suite pulls its own dependencies (LangChain, matplotlib).
    # Each suite's ``run`` takes the context and, optionally, keyword arguments of its own.
    if name == "chunking":
        from ragloom.evaluate import chunking

        return chunking.run
    if name == "contextual":
        from ragloom.evaluate import contextual

        return contextual.run
    if name == "ab":
        from ragloom.evaluate import ab

        return ab.run
    if name == "windows":
        from ragloom.evaluate import windows

        return windows.run
    if name == "multihop":
        from ragloom.evaluate import multihop

        return multihop.run
    raise UnknownNameError("evaluation suite", name, SUITES)


SUITES = ("ab", "chunking", "contextual", "multihop", "windows")
#: The suites that build workspaces from settings, which ``overrides`` change.
TAKES_SETTINGS = ("ab", "contextual", "multihop", "windows")


def suite_options(name: str) -> tuple[str, ...]:
    """The keyword options a suite's ``run`` takes besides the context, in its order."""
    parameters = inspect.signature(_suite(name)).parameters.values()
    return tuple(p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY)


def run_suite(name: str, *, data: Path, out: Path, cache: Path | None = None, limit: int | None = None,
              progress: Callable[[str], None] | None = None, tracker: Progress | None = None,
              embedder: Embedder | None = None,
              embedding: EmbeddingSettings | None = None,
              overrides: Mapping[str, Any] | None = None,
              options: Mapping[str, Any] | None = None) -> tuple[SuiteResult, dict[str, Path]]:
    """Run one suite and write its report under ``out`` (with ``embedder``, or the one the
    ``embedding`` settings name, by default the default settings' one). ``options`` are the
    suite's own keyword arguments (``contextual``: ``split="tune"``); one it does not take is an
    error that lists those it does."""
    run = _suite(name)
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InvalidParameterError(f"limit ({shown(limit)}) must be a whole number, 1 or more: the number of "
                                    "questions to use (leave it out for all)")
    if overrides:
        if name not in TAKES_SETTINGS:
            raise InvalidParameterError(f"the {name} suite measures configurations of its own, so settings "
                                        f"(--set) do not apply to it; they do to {', '.join(TAKES_SETTINGS)}")
        Settings.load(environ={}, overrides=overrides, overrides_from="--set")  # a bad key or value, said now
    given = dict(options or {})
    if given:
        accepted = suite_options(name)
        unknown = sorted(set(given) - set(accepted))
        if unknown:
            valid = ", ".join(accepted) if accepted else "none"
            raise InvalidParameterError(f"unknown option {', '.join(map(repr, unknown))} for the {name} suite; "
                                        f"its options: {valid}")
    kwargs = {"cache": cache} if cache is not None else {}
    ctx = EvalContext(data=data, out=out, limit=limit, embedder=embedder, progress=progress or (lambda m: None),
                      tracker=tracker or Progress(),
                      embedding=embedding, overrides=dict(overrides or {}), **kwargs)
    started = time.perf_counter()
    result = run(ctx, **given)
    result.seconds = time.perf_counter() - started
    return result, write(result, out)


__all__ = ["SUITES", "EvalContext", "SuiteResult", "run_suite", "suite_options"]
