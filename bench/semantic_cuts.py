"""Cut points chosen by semantic change between sentences, against size alone (issue 17, part 2).

    .venv/bin/python bench/semantic_cuts.py            # both datasets, about a minute with the cache warm

One of the ideas issue 17 named for chunks that generalise: cut where the text changes topic
rather than where the size says. Each chunk ends at the sentence end, between ``min_size`` and
``max_size`` characters from its start, where the two sentences before and the two after are
least alike (one minus the cosine of their mean vectors, all-MiniLM-L6-v2, the default
embedder); a variant adds 0.1 at paragraph ends. A Markdown heading always starts a chunk, as
ragloom's chunkers cut at sections. The same sentence splitter and vectors as the
sentence lift (``ragloom eval chunking``'s "+ sentence lift" rows).

Measured with ``ragloom eval chunking``'s own protocol and verdict (top 5 by cosine, recall and
IoU of the reference spans, "vs recursive" at equal IoU) on both datasets, beside ragloom's
``boundary`` chunker at the same sizes and LangChain's recursive splitter. Writes
``bench/results/semantic_cuts.json``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from common import chunking_variants, save
from ragloom.evaluate import chunking
from ragloom.evaluate.context import EvalContext
from ragloom.parse.sentences import sentence_spans

#: (label, min_size, max_size, bonus at a paragraph end): the sizes of the suite's boundary rows.
VARIANTS = (("250", 150, 400, 0.0), ("400", 250, 600, 0.0), ("800", 500, 1200, 0.0),
            ("400, paragraph ends +0.1", 250, 600, 0.1))
#: Sentences on each side whose mean vector is compared at a candidate cut.
WINDOW = 2


def semantic_config(ctx: EvalContext, label: str, min_size: int, max_size: int, paragraph_bonus: float) -> chunking.Config:
    sentences: dict[str, tuple[list[tuple[int, int]], np.ndarray]] = {}

    def split(corpus: str, text: str) -> list[tuple[int, int, str]]:
        if corpus not in sentences:
            found = sentence_spans(text, 0, len(text), max_chars=2000)
            sentences[corpus] = (found, ctx.embed([text[a:b] for a, b in found]))
        spans, vectors = sentences[corpus]
        change = np.zeros(len(spans))  # after sentence i
        for i in range(len(spans) - 1):
            left = vectors[max(0, i - WINDOW + 1) : i + 1].mean(axis=0)
            right = vectors[i + 1 : i + 1 + WINDOW].mean(axis=0)
            change[i] = 1.0 - float(left @ right) / (float(np.linalg.norm(left) * np.linalg.norm(right)) or 1.0)
            if paragraph_bonus and "\n\n" in text[spans[i][1] : spans[i + 1][0]]:
                change[i] += paragraph_bonus
        out: list[tuple[int, int, str]] = []
        i = 0
        while i < len(spans):
            start, j, best = spans[i][0], i, None
            while j < len(spans) and spans[j][1] - start <= max_size:
                if j > i and text.startswith("#", spans[j][0]):
                    best = j - 1  # a heading always starts a chunk, as the boundary chunker's sections do
                    break
                if spans[j][1] - start >= min_size and (best is None or change[j] > change[best]):
                    best = j
                j += 1
            if best is None:  # no sentence end within [min_size, max_size]: what fits, at least one sentence
                best = max(i, j - 1)
            out.append((start, spans[best][1], text[start : spans[best][1]]))
            i = best + 1
        return out

    return chunking.Config(f"semantic cuts {label}", "ragloom", split)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=list(chunking.DATASETS), choices=chunking.DATASETS)
    args = parser.parse_args()
    results: dict[str, Any] = {"window": WINDOW, "variants": [list(v) for v in VARIANTS]}
    for dataset in args.datasets:
        result, *_ = chunking_variants("semantic-cuts", dataset, lambda ctx: [semantic_config(ctx, *v) for v in VARIANTS])
        results[dataset] = result.rows
    print(f"wrote {save('semantic_cuts', results)}")


if __name__ == "__main__":
    main()
