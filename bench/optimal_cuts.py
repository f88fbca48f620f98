"""Cut points chosen for a whole section at once, against ``boundary``'s one at a time (issue 17, part 2).

    .venv/bin/python bench/optimal_cuts.py            # both datasets, about half a minute with the cache warm

``boundary`` walks a section from its start and takes, in each window of ``min_size`` to
``max_size`` characters, the best kind of cut there (a paragraph end, else a sentence end, ...).
Once it cuts inside a paragraph, the next window starts there too, so one early cut can cost the
paragraph ends after it. Here the cuts of a section are chosen together, as a line breaker
chooses line ends for a whole paragraph: among paragraph, sentence, line and word ends, the
sequence that minimises the sum over its chunks of ``((length - target) / (max - min))²`` plus
``KIND_COST`` for each cut's kind, every chunk within ``[min_size, max_size]`` (overlap
included). A section with no such sequence is cut as ``boundary`` cuts it. The costs were fixed
before the first measurement; that run had no word ends, so the chat logs (one long line, with
stretches of no sentence end) fell back to ``boundary`` at 250–400, and word ends were added at
the next step of the scale. Nothing else changed after it.

Measured with ``ragloom eval chunking``'s protocol and verdict on both datasets, beside
``boundary`` at the same sizes and LangChain's recursive splitter, with each size's paired
difference per part (a 95% bootstrap interval over the questions) and how many reference spans
lie wholly inside one chunk; then what the change would cost: speed, and how many chunks an early
edit leaves unchanged, on the documentation corpus. Writes ``bench/results/optimal_cuts.json``.
"""

from __future__ import annotations

import argparse
import bisect
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from common import BOUNDARY_ROWS, chunking_variants, doc_corpus, save
from ragloom.chunk import get_chunker
from ragloom.chunk.base import Chunker, Protected, Span, trim
from ragloom.chunk.boundary import BoundaryChunker, _line_cuts, _word_cuts
from ragloom.evaluate import chunking
from ragloom.evaluate.context import EvalContext
from ragloom.evaluate.datasets import ChunkingEval
from ragloom.evaluate.report import SuiteResult
from ragloom.parse.sentences import paragraph_ends, sentence_ends

#: (target_size, min_size, max_size, overlap): the suite's three boundary rows and one between.
SIZES = ((800, 500, 1200, 100), (400, 250, 600, 50), (300, 150, 450, 0), (250, 150, 400, 0))
#: What a cut costs by kind: a paragraph end, a sentence end, a line end, a word end.
KIND_COST = (0.0, 0.5, 1.0, 2.0)


class OptimalCuts(BoundaryChunker):
    """``boundary``'s sizes and kinds of cut, the cuts of each section chosen together."""

    def split_section(self, text: str, start: int, end: int, protected: Protected) -> list[Span]:
        start, end = trim(text, start, end)
        if end - start <= self.max_size:
            return super().split_section(text, start, end, protected)
        kind: dict[int, int] = dict.fromkeys(_word_cuts(text, start + 1, end), 3)
        kind |= dict.fromkeys(_line_cuts(text, start + 1, end), 2)
        kind |= dict.fromkeys(sentence_ends(text, start, end), 1)
        kind |= dict.fromkeys(paragraph_ends(text, start, end), 0)
        points = [start, *sorted(c for c in kind if start < c < end and (not protected or protected.allows(c))), end]
        spread = self.max_size - self.min_size
        cost = [0.0] + [np.inf] * (len(points) - 1)
        before = [-1] * len(points)
        for j in range(1, len(points)):
            last = j == len(points) - 1
            cut_cost = 0.0 if last else KIND_COST[kind[points[j]]]
            for i in range(bisect.bisect_left(points, points[j] - self.max_size), j):
                length = points[j] - points[i] + (self.overlap if i else 0)
                if cost[i] == np.inf or not self.min_size <= length <= self.max_size:
                    continue
                c = cost[i] + ((length - self.target_size) / spread) ** 2 + cut_cost
                if c < cost[j]:
                    cost[j], before[j] = c, i
        if cost[-1] == np.inf:
            return super().split_section(text, start, end, protected)
        cuts, j = [], len(points) - 1
        while j > 0:
            cuts.append(points[j])
            j = before[j]
        spans: list[Span] = []
        pos = start
        for cut in reversed(cuts):
            _, stop = trim(text, pos, cut)
            spans.append((pos, stop, self.tokenizer.count(text[pos:stop]), ()))
            if cut < end:
                nxt = self._next_start(text, pos, cut, protected)
                pos = nxt if nxt > pos else cut
        return spans


def contained(data: ChunkingEval, config: chunking.Config) -> dict[str, int]:
    """Per corpus, how many questions' reference spans lie wholly inside one of the config's chunks."""
    out: dict[str, int] = {}
    for name, text in data.corpora.items():
        chunks = [(a, b) for a, b, _ in config.split(name, text)]
        for q in (q for q in data.questions if q.corpus == name):
            lo, hi = min(a for a, _ in q.references), max(b for _, b in q.references)
            out[name] = out.get(name, 0) + any(a <= lo and hi <= b for a, b in chunks)
    return out


def whole(name: str, chunker: Chunker) -> chunking.Config:
    """A configuration of ``chunker``'s chunks, each corpus chunked once: the suite and
    :func:`contained` both ask for them, and the dynamic programme is the slow part."""
    done: dict[str, list[tuple[int, int, str]]] = {}

    def split(corpus: str, text: str) -> list[tuple[int, int, str]]:
        if corpus not in done:
            done[corpus] = [(c.start, c.end, c.text) for c in chunker.chunk(text)]
        return done[corpus]

    return chunking.Config(name, "ragloom", split)


def configs(_ctx: EvalContext) -> list[chunking.Config]:
    out = []
    for target, low, high, overlap in SIZES:
        params = {"target_size": target, "min_size": low, "max_size": high, "overlap": overlap}
        out.append(whole(f"optimal cuts {target}", OptimalCuts(**params)))
        if f"ragloom boundary {target}" not in BOUNDARY_ROWS:
            out.append(whole(f"ragloom boundary {target}", get_chunker("boundary", **params)))
    return out


def paired(result: SuiteResult, data: ChunkingEval, part_of: Callable[[str], str],
           by_name: dict[str, chunking.Config]) -> list[dict[str, Any]]:
    """Each size's optimal cuts minus boundary, per part: recall difference and containment."""
    rows = []
    rng = np.random.default_rng(17)
    for target, *_ in SIZES:
        mine, theirs = f"optimal cuts {target}", f"ragloom boundary {target}"
        inside = {name: contained(data, by_name[name]) for name in (mine, theirs)}
        recall = {name: [s["recall"] for s in result.details[name]["per_question"]] for name in (mine, theirs)}
        for part in sorted({part_of(q.corpus) for q in data.questions}):
            idx = [i for i, q in enumerate(data.questions) if part_of(q.corpus) == part]
            diff = 100 * np.array([recall[mine][i] - recall[theirs][i] for i in idx])
            boots = [diff[rng.integers(0, len(diff), len(diff))].mean() for _ in range(2000)]
            corpora = {q.corpus for q in data.questions if part_of(q.corpus) == part}
            rows.append({"size": target, "part": part, "questions": len(idx),
                         "recall difference": round(float(diff.mean()), 1),
                         "95% interval": [round(float(np.percentile(boots, p)), 1) for p in (2.5, 97.5)],
                         "contained, boundary": sum(inside[theirs].get(c, 0) for c in corpora),
                         "contained, optimal cuts": sum(inside[mine].get(c, 0) for c in corpora)})
    return rows


def cost(sizes: tuple[tuple[int, int, int, int], ...] = (SIZES[0], SIZES[-1])) -> list[dict[str, Any]]:
    """Speed and edit stability on every seventh documentation file (at most 300): MB/s, and
    after a sentence is inserted at the first paragraph end past 200 characters of each file of
    3,000 or more, the share of chunks starting 1,500 or more characters later that keep their text."""
    texts = [f.read_text(encoding="utf-8", errors="replace") for f in doc_corpus()[::7][:300]]
    megabytes = sum(map(len, texts)) / 1e6
    rows = []
    for target, low, high, overlap in sizes:
        params = {"target_size": target, "min_size": low, "max_size": high, "overlap": overlap}
        for name, chunker in (("boundary", get_chunker("boundary", **params)), ("optimal cuts", OptimalCuts(**params))):
            started = time.perf_counter()
            chunks = [chunker.chunk(text) for text in texts]
            seconds = time.perf_counter() - started
            kept = later = 0
            for text, before in zip(texts, chunks, strict=True):
                at = text.find("\n\n", 200)
                if at < 0 or len(text) < 3000:
                    continue
                after = {c.text for c in chunker.chunk(text[:at] + " This sentence was added by an edit." + text[at:])}
                moved = [c.text for c in before if c.start > at + 1500]
                kept += sum(t in after for t in moved)
                later += len(moved)
            rows.append({"size": target, "chunker": name, "files": len(texts), "MB": round(megabytes, 2),
                         "MB/s": round(megabytes / seconds, 2), "chunks after the edit": later,
                         "kept %": round(100 * kept / max(later, 1), 1)})
            print(f"  {target:4d} {name:14s} {rows[-1]['MB/s']:6.2f} MB/s over {megabytes:.1f} MB; "
                  f"{rows[-1]['kept %']}% of {later} chunks after an early edit kept")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=list(chunking.DATASETS), choices=chunking.DATASETS)
    args = parser.parse_args()
    results: dict[str, Any] = {"sizes": [list(s) for s in SIZES], "kind_cost": list(KIND_COST)}
    for dataset in args.datasets:
        result, data, part_of, by_name = chunking_variants("optimal-cuts", dataset, configs)
        results[dataset] = {"rows": result.rows, "paired": paired(result, data, part_of, by_name)}
        print("  optimal cuts minus boundary, recall (95% interval); references inside one chunk:")
        for row in results[dataset]["paired"]:
            print(f"  {row['size']:4d} {row['part']:20s} {row['recall difference']:+5.1f} {row['95% interval']}  "
                  f"{row['contained, boundary']} -> {row['contained, optimal cuts']} of {row['questions']}")
    print("\nspeed and edit stability (documentation corpus):")
    results["cost"] = cost()
    print(f"wrote {save('optimal_cuts', results)}")


if __name__ == "__main__":
    main()
