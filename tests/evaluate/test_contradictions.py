from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragloom.errors import InvalidParameterError
from ragloom.evaluate.contradictions import load_labels, reported_pair, score, statement_hash

from ..conftest import ROOT

LABELS = ROOT / "bench" / "labels" / "contradictions.jsonl"


def side(path: str, start: int, text: str, lens: str = "engineering", *, keep_text: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {"lens": lens, "path": path, "start": start, "end": start + len(text),
                           "sha256": statement_hash(text)}
    return out | ({"text": text} if keep_text else {})


def pair(pid: str, a: dict[str, Any], b: dict[str, Any], contradiction: bool, split: str = "materials") -> dict[str, Any]:
    return {"id": pid, "source": "materials" if split == "materials" else "doc-corpus", "split": split, "a": a, "b": b,
            "contradiction": contradiction, "reason": "because"}


def write(tmp_path: Path, *rows: dict[str, Any]) -> Path:
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def contradiction(root: Path, *statements: tuple[str, int, str], kind: str = "date") -> dict[str, Any]:
    return {"kind": kind, "topic": "t", "difference": "d",
            "statements": [{"source_path": str(root / p), "start": s, "end": s + len(t), "text": t, "lens": "x"}
                           for p, s, t in statements]}


def test_labels_load_and_score(tmp_path: Path) -> None:
    a, b, c = side("x.md", 0, "We ship in Q2."), side("y.md", 5, "It ships in Q3."), side("z.md", 9, "Q2 it is.")
    labels = load_labels(write(tmp_path, pair("p1", a, b, True), pair("p2", a, c, False), pair("p3", b, c, True)))
    assert [p.id for p in labels] == ["p1", "p2", "p3"] and labels[0].a.text == "We ship in Q2."
    found = [
        contradiction(tmp_path, ("y.md", 5, "It ships in Q3."), ("x.md", 0, "We ship in Q2.")),  # either order
        contradiction(tmp_path, ("x.md", 0, "We ship in Q2."), ("y.md", 5, "It ships in Q3."), kind="number"),  # again
        contradiction(tmp_path, ("x.md", 0, "We ship in Q2."), ("z.md", 9, "Q2 it is.")),
        contradiction(tmp_path, ("x.md", 0, "We ship in Q2."), ("w.md", 0, "Nothing.")),  # no label
    ]
    reported = [r for f in found if (r := reported_pair(f, tmp_path)) is not None]
    s = score(reported, labels, "materials")
    assert (s.reported, s.labelled, s.true_positives, s.false_positives, len(s.unlabelled), s.positives) == (
        3, 2, 1, 1, 1, 2)
    assert s.precision == 0.5 and s.recall == 0.5 and s.stale == 0
    assert score([], labels, "tune").to_dict()["precision"] is None


def test_a_label_that_no_longer_points_at_its_statement_is_stale(tmp_path: Path) -> None:
    a, b = side("x.md", 0, "We ship in Q2."), side("y.md", 5, "It ships in Q3.")
    labels = load_labels(write(tmp_path, pair("p1", a, b, True)))
    moved = contradiction(tmp_path, ("x.md", 0, "We ship in Q4."), ("y.md", 5, "It ships in Q3."))
    assert score([reported_pair(moved, tmp_path)], labels, "materials").stale == 1  # type: ignore[list-item]
    assert reported_pair(contradiction(Path("/elsewhere"), ("x.md", 0, "a"), ("y.md", 0, "b")), tmp_path) is None


@pytest.mark.parametrize(
    "mutate,message",
    [
        (lambda r: r["a"].update(sha256="0" * 64), "sha256"),
        (lambda r: r.update(split="train"), "split"),
        (lambda r: r["b"].pop("path"), "a statement needs"),
        (lambda r: r.pop("contradiction"), "not a labelled pair"),
        (lambda r: r["a"].update(start=9, end=3), "must be below end"),
    ],
)
def test_bad_labels_are_refused_by_line(tmp_path: Path, mutate: Any, message: str) -> None:
    row = pair("p1", side("x.md", 0, "We ship in Q2."), side("y.md", 5, "It ships in Q3."), True)
    mutate(row)
    with pytest.raises(InvalidParameterError, match=message) as e:
        load_labels(write(tmp_path, row))
    assert "labels.jsonl:1" in str(e.value)


def test_a_pair_is_labelled_once_whatever_its_order(tmp_path: Path) -> None:
    a, b = side("x.md", 0, "We ship in Q2."), side("y.md", 5, "It ships in Q3.")
    with pytest.raises(InvalidParameterError, match="labelled twice"):
        load_labels(write(tmp_path, pair("p1", a, b, True), pair("p2", b, a, False)))


def test_the_committed_labels() -> None:
    """bench/labels/contradictions.jsonl: at least 60 pairs from both sources, positives and
    negatives, and no third-party text (the documentation corpus is referenced, not copied)."""
    labels = load_labels(LABELS)
    assert len(labels) >= 60
    by_split = {s: [p for p in labels if p.split == s] for s in ("materials", "tune", "held-out")}
    assert all(len(v) >= 20 for v in by_split.values())
    assert {p.contradiction for p in by_split["materials"]} == {True, False}
    for p in labels:
        assert p.reason and p.a.lens != p.b.lens
        if p.source == "doc-corpus":
            assert p.a.text is None and p.b.text is None
    assert '"text":' not in "".join(line for line in LABELS.read_text(encoding="utf-8").splitlines()
                                 if '"doc-corpus"' in line)
