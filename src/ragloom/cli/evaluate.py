"""``ragloom eval``: a technique measured against its baseline."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from ragloom.cli.common import (
    JsonOpt,
    console,
    mode_options,
    print_json,
    reported_errors,
    setting_value,
)
from ragloom.cli.progress import stage_progress
from ragloom.errors import ConfigError


def eval_(
    suite: Annotated[str, typer.Argument(help="chunking, contextual, multihop, ab or windows.")],
    out: Annotated[Path, typer.Option("--out", help="Where the JSON, Markdown and PNG files go.")] = Path("eval-out"),
    data: Annotated[Path | None, typer.Option("--data", help="The evaluation data (default: ../shared/data).")] = None,
    limit: Annotated[int | None, typer.Option("--limit", help="Use only the first N questions.")] = None,
    cache: Annotated[Path | None, typer.Option("--cache", help="Embedding cache folder.")] = None,
    provider: Annotated[str | None, typer.Option("--provider", help="Embedding provider to measure "
                                                 "(onnx, sentence-transformers, static, ...).")] = None,
    precision: Annotated[str | None, typer.Option("--precision", help="onnx: fp32 or int8.")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Embedding model (minilm-static, a folder).")] = None,
    setting: Annotated[list[str] | None, typer.Option("--set", help="A setting over the suite's own, "
                                                      "section.key=value (repeatable; every suite but chunking).")] = None,
    option: Annotated[list[str] | None, typer.Option("--option", help="The suite's own option, name=value "
                                                     "(repeatable): contextual split=tune, report, all or several, "
                                                     "comma-separated (default report,all).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Measure a technique against its baseline; embeddings are cached, so a second run takes seconds."""
    from ragloom.config import EmbeddingSettings
    from ragloom.evaluate import run_suite
    from ragloom.evaluate.context import STEPS
    from ragloom.evaluate.datasets import shared_data

    with reported_errors():
        root = shared_data(data)
        chosen = {k: v for k, v in {"provider": provider, "precision": precision, "model": model}.items() if v}
        embedding = EmbeddingSettings.model_validate(chosen) if chosen else None
        overrides = {}
        for item in setting or ():
            key, _, value = item.partition("=")
            if not value:
                raise ConfigError(f"--set {item!r}: write section.key=value, for example sentences.vectors=derived")
            overrides[key.strip()] = setting_value(value.strip())
        options = mode_options(option, "split=report")
        with stage_progress(not as_json) as bars:
            def say(message: str) -> None:
                if bars is not None:
                    bars.describe(STEPS, f"{suite}: {message}")

            result, paths = run_suite(suite, data=root, out=out, cache=cache, limit=limit, embedding=embedding,
                                      overrides=overrides, options=options, progress=say, tracker=bars)
    if as_json:
        print_json(result.to_dict())
        return
    sys.stdout.write(result.table() + "\n")
    for note in result.notes:
        console.print(f"- {escape(note)}")
    console.print(f"[dim]{result.seconds:.1f}s; wrote {', '.join(str(p) for p in paths.values())}"
                  f"{', ' + ', '.join(result.plots) if result.plots else ''}[/]")
