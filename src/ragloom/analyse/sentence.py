"""What the analyses find is a sentence of a document: its exact span, where it is, its lens."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Found:
    """A sentence an analysis found: ``text`` is the document's exact span ``[start, end)``."""

    text: str
    document_id: str
    source_path: str
    lens: str
    start: int
    end: int

    @property
    def flat(self) -> str:
        """The sentence on one line."""
        return " ".join(self.text.split())

    def where(self) -> dict[str, Any]:
        """Its place, for ``to_dict``: lens, source path, document id and offsets."""
        return {"lens": self.lens, "source_path": self.source_path, "document_id": self.document_id,
                "start": self.start, "end": self.end}


def place(row: Mapping[str, Any]) -> tuple[str, str, str, str, int, int]:
    """A sentence-index row's text and place, in the order :class:`Found` takes them."""
    return (row["text"], row["document_id"], row["source_path"], row["lens"], int(row["start_char"]),
            int(row["end_char"]))
