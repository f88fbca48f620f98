"""Hand-labelled contradiction pairs, and how a detector's output scores against them (issue 16).

A label file is JSON Lines, one candidate pair a line::

    {"id": "m01", "source": "materials", "split": "materials",
     "a": {"lens": "your-voice", "path": "your-voice/2025-01-06-product-vision-2025.md",
           "start": 1155, "end": 1203, "sha256": "…", "text": "We will ship the catalog integration in Q2 2025."},
     "b": {…}, "contradiction": true, "unsure": false, "origin": ["before", "after"],
     "reason": "the vision ships it in Q2; the capacity plan says August"}

``path`` is relative to the source's root (``examples/materials``, or the documentation
corpus's ``corpus`` folder); ``start`` and ``end`` are offsets into the document's text as
ragloom normalises it, and ``sha256`` is the hash of that slice, so a label that no longer
points at its statement is caught. Statements of third-party text (the documentation corpus)
carry no ``text``: only where it is and its hash. A pair is the same whichever statement comes
first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragloom.errors import InvalidParameterError

#: The statement's document, start and end.
Place = tuple[str, int, int]
PairKey = frozenset[Place]
SOURCES = ("materials", "doc-corpus")
SPLITS = ("materials", "tune", "held-out")


def statement_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class LabelledStatement:
    lens: str
    path: str
    start: int
    end: int
    sha256: str
    text: str | None = None  # only where the project wrote the text

    @property
    def place(self) -> Place:
        return (self.path, self.start, self.end)


@dataclass(frozen=True, slots=True)
class LabelledPair:
    id: str
    source: str
    split: str
    a: LabelledStatement
    b: LabelledStatement
    contradiction: bool
    reason: str
    unsure: bool = False
    origin: tuple[str, ...] = ()

    @property
    def key(self) -> PairKey:
        return frozenset((self.a.place, self.b.place))


def _statement(raw: Mapping[str, Any], where: str) -> LabelledStatement:
    try:
        statement = LabelledStatement(str(raw["lens"]), str(raw["path"]), int(raw["start"]), int(raw["end"]),
                                      str(raw["sha256"]), raw.get("text"))
    except (KeyError, TypeError, ValueError) as e:
        raise InvalidParameterError(f"{where}: a statement needs lens, path, start, end and sha256 ({e})") from e
    if statement.text is not None and statement_hash(statement.text) != statement.sha256:
        raise InvalidParameterError(f"{where}: sha256 is not the hash of the statement's text; recompute it")
    if not 0 <= statement.start < statement.end:
        raise InvalidParameterError(f"{where}: start ({statement.start}) must be below end ({statement.end})")
    return statement


def load_labels(path: Path) -> list[LabelledPair]:
    """Every labelled pair of a JSON Lines file, checked: known sources and splits, unique ids
    and pairs, hashes that match the stored text."""
    pairs: list[LabelledPair] = []
    ids: set[str] = set()
    keys: set[PairKey] = set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path}:{n}"
        try:
            raw = json.loads(line)
            pair = LabelledPair(str(raw["id"]), str(raw["source"]), str(raw["split"]), _statement(raw["a"], where),
                                _statement(raw["b"], where), bool(raw["contradiction"]), str(raw["reason"]),
                                bool(raw.get("unsure", False)), tuple(raw.get("origin", ())))
        except (KeyError, TypeError, json.JSONDecodeError) as e:
            raise InvalidParameterError(f"{where}: not a labelled pair ({e}); see ragloom.evaluate.contradictions") from e
        if pair.source not in SOURCES or pair.split not in SPLITS:
            raise InvalidParameterError(f"{where}: source {pair.source!r} / split {pair.split!r} must be one of "
                                        f"{', '.join(SOURCES)} / {', '.join(SPLITS)}")
        if pair.id in ids or pair.key in keys:
            raise InvalidParameterError(f"{where}: pair {pair.id!r} is labelled twice; keep one line per pair")
        ids.add(pair.id)
        keys.add(pair.key)
        pairs.append(pair)
    return pairs


@dataclass(frozen=True, slots=True)
class ReportedPair:
    """One contradiction a detector reported, as places in the source's tree."""

    kind: str
    topic: str
    difference: str
    key: PairKey
    hashes: Mapping[Place, str]
    lenses: tuple[str, str]


def reported_pair(contradiction: Mapping[str, Any], root: Path) -> ReportedPair | None:
    """A detector's contradiction (``Contradiction.to_dict()``) as places under ``root``; None
    when a statement lies outside ``root``."""
    places = []
    hashes = {}
    for st in contradiction["statements"]:
        try:
            path = Path(st["source_path"]).resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return None
        place = (path, int(st["start"]), int(st["end"]))
        places.append(place)
        hashes[place] = statement_hash(st["text"])
    first, second = contradiction["statements"]
    return ReportedPair(contradiction["kind"], contradiction["topic"], contradiction["difference"],
                        frozenset(places), hashes, (first["lens"], second["lens"]))


@dataclass
class Score:
    """How one detector run fares against the labels of one split."""

    reported: int = 0  # distinct pairs reported
    labelled: int = 0  # of those, how many carry a label
    true_positives: int = 0
    false_positives: int = 0
    positives: int = 0  # pairs labelled a contradiction in the split
    stale: int = 0  # reported pairs whose statements no longer hash to the label's
    unlabelled: list[ReportedPair] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        judged = self.true_positives + self.false_positives
        return self.true_positives / judged if judged else None

    @property
    def recall(self) -> float | None:
        return self.true_positives / self.positives if self.positives else None

    def to_dict(self) -> dict[str, Any]:
        return {"reported": self.reported, "labelled": self.labelled, "true_positives": self.true_positives,
                "false_positives": self.false_positives, "unlabelled": len(self.unlabelled),
                "positives": self.positives, "stale": self.stale,
                "precision": None if self.precision is None else round(self.precision, 4),
                "recall": None if self.recall is None else round(self.recall, 4)}


def score(reported: Iterable[ReportedPair], labels: Sequence[LabelledPair], split: str) -> Score:
    """Precision over the reported pairs that carry a label, recall over the split's pairs
    labelled a contradiction. A pair reported under several kinds counts once."""
    by_key = {p.key: p for p in labels if p.split == split}
    result = Score(positives=sum(p.contradiction for p in by_key.values()))
    seen: set[PairKey] = set()
    for r in reported:
        if r.key in seen:
            continue
        seen.add(r.key)
        result.reported += 1
        label = by_key.get(r.key)
        if label is None:
            result.unlabelled.append(r)
            continue
        if any(r.hashes[s.place] != s.sha256 for s in (label.a, label.b)):
            result.stale += 1
        result.labelled += 1
        if label.contradiction:
            result.true_positives += 1
        else:
            result.false_positives += 1
    return result
