"""The evaluation datasets: loaded from where they live, never copied into the project."""

from __future__ import annotations

import csv
import json
import os
import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ragloom.errors import ConfigError


def shared_data(explicit: str | Path | None = None) -> Path:
    """``explicit``, else ``$RAGLOOM_SHARED_DATA``, else ``../shared/data`` beside the checkout.
    An explicit file is returned as is (a suite that reads one file, ``multihop``, takes it); an
    explicit path that does not exist is an error, never a fall back to the shared data."""
    if explicit:
        if not Path(explicit).exists():
            raise ConfigError(f"--data {explicit} does not exist; pass the shared data folder, a dataset's folder "
                              "or its question file")
        if Path(explicit).is_file():
            return Path(explicit)
    candidates = [Path(explicit)] if explicit else []
    if os.environ.get("RAGLOOM_SHARED_DATA"):
        candidates.append(Path(os.environ["RAGLOOM_SHARED_DATA"]))
    candidates += [Path.cwd().parent / "shared" / "data", Path(__file__).resolve().parents[4] / "shared" / "data"]
    for c in candidates:
        if c.is_dir():
            return c
    raise ConfigError("evaluation data not found (looked in " + ", ".join(map(str, candidates))
                      + "); pass --data DIR or set RAGLOOM_SHARED_DATA")


@dataclass(frozen=True)
class SpanQuestion:
    question: str
    corpus: str
    references: tuple[tuple[int, int], ...]


@dataclass(frozen=True)
class ChunkingEval:
    """Chroma's chunking evaluation: corpora and questions with reference character spans."""

    corpora: dict[str, str]
    questions: tuple[SpanQuestion, ...]


#: The names of the question file: the shared folder's, and Chroma's own (``general_evaluation_data``).
CHUNKING_QUESTIONS = ("questions.csv", "questions_df.csv")


def dataset_folder(root: Path, name: str, layouts: Sequence[Sequence[str]], source: str) -> tuple[Path, Sequence[str]]:
    """The folder of a dataset and the layout it has: ``root/name`` (``root`` being the shared
    data folder) or ``root`` itself (the dataset's own folder, as its ``source`` publishes it),
    whichever holds every entry of one of ``layouts``, tried in order."""
    for folder in (root / name, root):
        for entries in layouts:
            if all((folder / entry).exists() for entry in entries):
                return folder, entries
    wanted = " or ".join(" and ".join(entries) for entries in layouts)
    raise ConfigError(f"no {name} data at {root}: looked for {wanted} in {root / name} and in {root}; "
                      f"pass --data with the shared data folder or a folder of that layout ({source})")


def chunking_files(root: Path) -> tuple[Path, Path]:
    """(corpora folder, question file) of a chunking evaluation: ``root`` is the shared data
    folder (its ``chunking-eval``), such a folder itself, Chroma's ``general_evaluation_data``
    (``corpora/`` and ``questions_df.csv``), or a question file with ``corpora/`` beside it."""
    if root.is_file():
        return root.parent / "corpora", root
    folder, (corpora, questions) = dataset_folder(root, "chunking-eval", [("corpora", q) for q in CHUNKING_QUESTIONS],
                                                  "Chroma's general_evaluation_data is one; or its question file")
    return folder / corpora, folder / questions


def load_chunking_eval(root: Path, *, limit: int | None = None) -> ChunkingEval:
    """Corpora (``*.md``, by file stem) and questions with reference spans, in Chroma's format:
    ``question``, ``references`` (a JSON list of ``{content, start_index, end_index}``) and
    ``corpus_id``; see :func:`chunking_files` for where they may lie."""
    folder, path = chunking_files(root)
    corpora = {p.stem: p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.md"))}
    questions = []
    try:
        with open(path, encoding="utf-8", newline="") as f:
            for row in csv.DictReader(f):
                refs = json.loads(row["references"])
                spans = tuple((int(r["start_index"]), int(r["end_index"])) for r in refs)
                questions.append(SpanQuestion(row["question"], row["corpus_id"], spans))
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"cannot read the chunking questions {path} ({type(exc).__name__}: {exc}); it needs the "
                          "columns question, references (JSON spans) and corpus_id, as Chroma's questions_df.csv") from exc
    missing = sorted({q.corpus for q in questions} - set(corpora))
    if missing:
        raise ConfigError(f"the questions in {path} ask about corpora that {folder} does not hold: "
                          f"{', '.join(m + '.md' for m in missing)}; put them there or pass --data with the folder "
                          "that has them")
    if limit is not None:
        questions = questions[:limit]
    return ChunkingEval(corpora, tuple(questions))


def find_spans(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Where each piece occurs, searching from just after the previous one (pieces overlap).

    A piece found nowhere in ``text`` (a splitter that changed the text) is left out.
    """
    spans, position = [], 0
    for piece in pieces:
        start = text.find(piece, position)
        if start < 0:
            start = text.find(piece)
        if start < 0:
            continue
        spans.append((start, start + len(piece)))
        position = start + 1
    return spans


@dataclass(frozen=True)
class CodeDocument:
    uuid: str
    doc_id: str
    path: str  # "repo/relative/path" when the evaluation set names it, else the doc id
    text: str
    chunks: tuple[tuple[int, int], ...]  # the dataset's own chunks, as spans of text


@dataclass(frozen=True)
class CodeQuery:
    query: str
    golden: tuple[tuple[str, int], ...]  # (document uuid, chunk index)


@dataclass(frozen=True)
class ContextualEval:
    """Anthropic's contextual-retrieval codebase: documents, their chunks and the queries."""

    documents: tuple[CodeDocument, ...]
    queries: tuple[CodeQuery, ...]


def load_contextual(root: Path, *, limit: int | None = None) -> ContextualEval:
    """Anthropic's contextual-retrieval code set: ``root`` is the shared data folder (its
    ``contextual``) or a folder with ``codebase_chunks.json`` and ``evaluation_set.jsonl``, as
    the data folder of Anthropic's contextual-embeddings guide has them."""
    folder, _ = dataset_folder(root, "contextual", [("codebase_chunks.json", "evaluation_set.jsonl")],
                               "the data folder of Anthropic's contextual-embeddings guide is one")
    raw = json.loads((folder / "codebase_chunks.json").read_text(encoding="utf-8"))
    queries, paths = [], {}
    with open(folder / "evaluation_set.jsonl", encoding="utf-8") as f:
        for line in f:
            item = json.loads(line)
            for doc in item.get("golden_documents", []):
                meta = doc.get("meta", {})
                if meta.get("relative_path"):
                    paths[doc["uuid"]] = f"{meta.get('repo_name', '')}{meta['relative_path']}"
            queries.append(CodeQuery(item["query"], tuple((u, int(i)) for u, i in item["golden_chunk_uuids"])))
    documents = []
    for doc in raw:
        text = doc["content"]
        # Every chunk of the dataset is found in its document, so spans keep the chunk indexes.
        spans = find_spans(text, [c["content"] for c in sorted(doc["chunks"], key=lambda c: c["original_index"])])
        documents.append(CodeDocument(doc["original_uuid"], doc["doc_id"], paths.get(doc["original_uuid"], doc["doc_id"]),
                                      text, tuple(spans)))
    if limit is not None:
        keep = queries[:limit]
        wanted = {u for q in keep for u, _ in q.golden}
        # A slice keeps the documents its queries need plus a few others to search among.
        extra = [d.uuid for d in documents if d.uuid not in wanted][: max(5, limit)]
        documents = [d for d in documents if d.uuid in wanted or d.uuid in extra]
        queries = keep
    return ContextualEval(tuple(documents), tuple(queries))


@dataclass(frozen=True)
class SectionQuery:
    query: str
    category: str  # cross-section | document-specific | single-section
    expected: tuple[tuple[str, str], ...]  # (file name, section path suffix)


@dataclass
class AbSet:
    queries: list[SectionQuery] = field(default_factory=list)


def load_ab(path: Path) -> AbSet:
    """Queries for the sample materials, with the sections they should find (examples/ab_queries.toml)."""
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    queries: list[SectionQuery] = []
    for q in data["query"]:
        expected = tuple(_section(e) for e in q["expected"])
        queries.append(SectionQuery(q["text"], q["category"], expected))
    return AbSet(queries)


def _section(expected: str) -> tuple[str, str]:
    """``"file.md#Section"`` -> ``("file.md", "Section")``; ``"file.md"`` -> ``("file.md", "")``."""
    name, _, section = expected.partition("#")
    return name, section



#: Words a keyword query leaves out: they say nothing about which passage is meant.
STOPWORDS = frozenset(
    "a about above after again against all also an and any are as at be because been before being below between both "
    "but by can could did do does doing down during each either else few for from further had has have having he her "
    "here hers him his how however if in into is it its itself just may might more most must my no nor not now of "
    "off on once one only or other our out over own same shall she should so some such than that the their them then "
    "there these they this those through to too under until up upon us use used uses using very was we were what "
    "when where whether which while who whom why will with within without would yet you your".split())
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*[A-Za-z]")


def keyword_query(sentence: str, document_frequency: Mapping[str, int], *, words: int = 8) -> str:
    """A question made of a sentence's own words: its ``words`` rarest content words (by
    document frequency, ties by position), in the order the sentence has them. No paraphrase,
    so the reference span is the sentence itself."""
    seen: dict[str, int] = {}
    for i, m in enumerate(_WORD.finditer(sentence)):
        w = m.group(0).lower()
        if len(w) >= 3 and w not in STOPWORDS and w not in seen:
            seen[w] = i
    chosen = sorted(seen, key=lambda w: (document_frequency.get(w, 0), seen[w]))[:words]
    return " ".join(sorted(chosen, key=seen.__getitem__))


def load_doc_questions(corpus: Path, *, documents: int = 80, seed: int = 17, min_chars: int = 2_000,
                       max_chars: int = 40_000, per_document: int = 2, limit: int | None = None) -> ChunkingEval:
    """Chroma's protocol on the documentation corpus (``get_doc_corpus.sh``), with questions
    derived mechanically: ``documents`` files drawn with ``seed`` (between ``min_chars`` and
    ``max_chars``), half from each top folder (``python/``, ``linux/``), ``per_document`` passages
    of two consecutive prose sentences drawn from each, the passage's rarest content words as the
    query and the passage as the reference span (as long as Chroma's references, about 270
    characters, and more than one sentence, so that no chunk size is favoured by construction). Corpora are named by their path under the corpus (``python/...``,
    ``linux/...``), so results can be split by part: tune on one, report on the other."""
    import random

    from ragloom.parse.sentences import fenced_blocks, sentence_spans

    if not corpus.is_dir():
        raise ConfigError(f"the documentation corpus is not at {corpus}; build it with "
                          f"'bash ../shared/data/get_doc_corpus.sh {corpus.parent}' or pass --data")
    rng = random.Random(seed)
    parts = sorted(p for p in corpus.iterdir() if p.is_dir())
    chosen = []
    for part in parts:
        files = sorted(p for p in part.rglob("*.md") if min_chars <= p.stat().st_size <= max_chars)
        chosen += sorted(rng.sample(files, min(documents // max(1, len(parts)), len(files))))
    corpora = {p.relative_to(corpus).as_posix(): p.read_text(encoding="utf-8") for p in chosen}
    frequency: dict[str, int] = {}
    for text in corpora.values():
        for w in {m.group(0).lower() for m in _WORD.finditer(text)}:
            frequency[w] = frequency.get(w, 0) + 1
    questions = []
    for name, text in corpora.items():
        code = fenced_blocks(text, 0, len(text))
        candidates = []
        for a, b in sentence_spans(text, 0, len(text), max_chars=2000):
            sentence = text[a:b]
            if any(x <= a < y for x, y in code) or not 30 <= len(sentence) <= 400:
                continue  # prose only: outside code
            if sentence.lstrip().startswith(("#", "..", ":", "|", ">>>", "$", "-", "*")) or "\n\n" in sentence:
                continue
            if "\t" in sentence or "\n " in sentence or "  " in sentence:
                continue  # a list, a table or a definition, not a wrapped paragraph
            letters = sum(c.isalpha() for c in sentence)
            if letters < 0.7 * len(sentence) or len(_WORD.findall(sentence)) < 5:
                continue
            candidates.append((a, b))
        # Two sentences of one paragraph, one after the other.
        pairs = [(a, d) for (a, b), (c, d) in zip(candidates, candidates[1:], strict=False)
                 if not text[b:c].strip() and "\n\n" not in text[b:c] and len(_WORD.findall(text[a:d])) >= 14]
        for a, b in sorted(rng.sample(pairs, min(per_document, len(pairs)))):
            query = keyword_query(text[a:b], frequency)
            if len(query.split()) >= 4:
                questions.append(SpanQuestion(query, name, ((a, b),)))
    if limit is not None:
        questions = questions[:limit]
    return ChunkingEval(corpora, tuple(questions))
