"""Key terms of a chunk: proper-noun phrases, domain terms and the entities it mentions, ranked.

A term's rank is its count in the chunk, with multi-word proper-noun phrases and known
entities counted double: they say more about what a chunk is about than a single common noun.
Terms are lower-cased so that "Catalog" and "catalog" are one term.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ragloom.enrich.entities import COMMON, capitalised_candidates

#: The seed's business vocabulary (seed 000), the default ``graph.domain_terms``.
DEFAULT_DOMAIN_TERMS = (
    "roadmap", "priority", "integration", "platform", "api", "customer", "revenue", "churn", "acquisition",
    "catalog", "experience", "engineering", "architecture", "dependency", "milestone",
)


@lru_cache(maxsize=32)
def _domain_pattern(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    if not terms:
        return None
    alternatives = sorted({re.escape(t.lower()) for t in terms if t.strip()}, key=len, reverse=True)
    # Plurals count as the term: "customers" is about customers.
    return re.compile(r"(?<!\w)(" + "|".join(alternatives) + r")(?:s|es)?(?!\w)", re.IGNORECASE)


def extract_key_terms(text: str, *, domain_terms: Sequence[str] = DEFAULT_DOMAIN_TERMS,
                      entities: Iterable[str] = (), top_n: int = 10) -> list[str]:
    """The ``top_n`` key terms of ``text``, best first (ties by first appearance)."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}

    def add(term: str, weight: int, position: int) -> None:
        term = " ".join(term.lower().split())
        if len(term) < 2 or term in _STOP:
            return
        counts[term] += weight
        first.setdefault(term, position)

    for m in capitalised_candidates(text):
        add(m.text, 2 if " " in m.text else 1, m.start)
    pattern = _domain_pattern(tuple(domain_terms))
    if pattern is not None:
        for found in pattern.finditer(text):
            add(found.group(1), 1, found.start())
    for i, name in enumerate(entities):
        add(name, 2, -len(text) + i)  # entities rank first among equals
    ranked = sorted(counts, key=lambda t: (-counts[t], first[t]))
    return ranked[:top_n]


_STOP = frozenset(w.lower() for w in COMMON)
