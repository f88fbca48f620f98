"""Sentence-index rows made from real meeting minutes (the Rust Leadership Council's, under
``../shared/data/rust-council``), as the store gives them to the analyses."""

from __future__ import annotations

import hashlib
from datetime import date
from pathlib import Path
from typing import Any

from ragloom.parse.sentences import sentence_spans

from ..conftest import shared_data


def minutes() -> list[Path]:
    return sorted((shared_data() / "rust-council" / "minutes" / "sync-meeting").glob("20*.md"))


def rows_of(path: Path, text: str | None = None, *, day: date | None = None, lens: str = "meetings") -> list[dict[str, Any]]:
    """One row per sentence of the file (or of ``text``), dated by its name unless ``day``."""
    text = path.read_text(encoding="utf-8") if text is None else text
    try:
        said: date | None = day if day is not None else date.fromisoformat(path.stem[:10])
    except ValueError:
        said = None  # a file not named by its date is undated
    doc = hashlib.sha1(str(path).encode()).hexdigest()[:20]
    return [{"text": text[s:e], "document_id": doc, "source_path": str(path), "lens": lens, "start_char": s,
             "end_char": e, "document_date": said, "section_path": ""} for s, e in sentence_spans(text)]
