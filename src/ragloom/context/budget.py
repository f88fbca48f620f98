"""Step 5: fit the chunks into the token budget, counting with the real tokenizer.

What is counted is what is sent: each chunk's naked text plus its source header and
separator, the "Related to" line at its longest, and the context header with the largest
numbers it can show. The greedy pass takes chunks in priority order; a chunk that does not
fit is cut to its longest prefix of whole sentences that does (or dropped), and smaller
chunks further down still get their chance. The optimiser then counts the formatted text
itself and drops chunks until it fits, so the budget holds even where token counts of
pieces do not add up exactly.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ragloom.context._text import known_sentences
from ragloom.context.format import MAX_RELATED, SOURCE_SEPARATOR, context_header, source_block
from ragloom.context.model import BudgetResult, Prioritized, Relationship
from ragloom.context.organize import STRATEGIES
from ragloom.errors import InvalidParameterError
from ragloom.parse import sentence_spans
from ragloom.tokens import TokenCounter
from ragloom.types import ScoredChunk

OVER_BUDGET = "over budget"
#: Below this many free tokens no sentence is worth trying to squeeze in.
MIN_TRIM_TOKENS = 8
#: Trims tried per call: each costs a sentence split and a few counts, and past the edge of
#: the budget, where the first one happens, they seldom succeed.
MAX_TRIM_ATTEMPTS = 3
#: Sentences are looked for within ``tokens x this`` characters of a chunk's start: a longer
#: prefix cannot fit in ordinary text, and splitting all of a long chunk would cost more than
#: the trim is worth.
MAX_CHARS_PER_TOKEN = 32
#: Added per source for tokens that merge or split where pieces meet.
JOIN_SLACK = 2


def trimmed_reason(sentences: int) -> str:
    return f"trimmed to {sentences} sentences"


def trim_to_sentences(chunk: ScoredChunk, max_tokens: int, tokenizer: TokenCounter
                      ) -> tuple[ScoredChunk, int, int] | None:
    """The longest prefix of whole sentences of ``chunk`` within ``max_tokens``.

    Returns ``(trimmed chunk, sentences kept, tokens)`` or None when not even the first
    sentence fits. The trimmed text is ``chunk.text[:k]`` for a sentence end ``k`` and its
    ``end`` is ``start + k``, so offsets stay exact.
    """
    if max_tokens <= 0:
        return None
    text = chunk.text
    own = known_sentences(chunk)
    if own:
        # The retriever's own sentence bounds, where it gave them, are the ones it reasoned with.
        ends = sorted({e - chunk.start for _, e in own if 0 < e - chunk.start < len(text)})
    else:
        window = min(len(text), max_tokens * MAX_CHARS_PER_TOKEN)
        spans = sentence_spans(text, 0, window)
        if window < len(text) and spans:
            spans = spans[:-1]  # the window may have cut the last one short
        ends = [end for _, end in spans if end < len(text)]
    if not ends:
        return None
    lo, hi, best, best_tokens = 0, len(ends) - 1, -1, 0
    while lo <= hi:  # token counts grow with the prefix: binary search for the last that fits
        mid = (lo + hi) // 2
        n = tokenizer.count_within(text[: ends[mid]], max_tokens)
        if n is not None:
            best, best_tokens, lo = mid, n, mid + 1
        else:
            hi = mid - 1
    if best < 0:
        return None
    k = ends[best]
    end = chunk.start + k
    kept = [(s, e) for s, e in own if e <= end]
    trimmed = replace(chunk, text=text[:k], end=end, token_count=best_tokens,
                      sentences=tuple(kept) if own else chunk.sentences)
    return trimmed, len(kept) if own else best + 1, best_tokens


def _worst_related(types_by_other: dict[str, set[str]], number: int) -> list[tuple[int, tuple[str, ...]]]:
    """The longest "Related to" line the chunk could get, whichever sources end up chosen."""
    options = {tuple(sorted(types)) for types in types_by_other.values()}
    longest = heapq.nlargest(MAX_RELATED, options, key=lambda t: (sum(map(len, t)) + 2 * len(t), t))
    return [(number, types) for types in longest]


def header_tokens(query: str, count: int, budget: int, tokenizer: TokenCounter, strategies: Iterable[str]) -> int:
    """Tokens of the context header at its largest: longest strategy name, largest numbers."""
    return max(tokenizer.count(context_header(query, s, count, max(budget, 0))) for s in strategies)


def fit_budget(items: Sequence[Prioritized], budget: int, *, tokenizer: TokenCounter,
               relationships: Iterable[Relationship] = (), query: str = "",
               trim: bool = True, strategies: Iterable[str] = tuple(STRATEGIES)) -> BudgetResult:
    """Choose, in priority order, the chunks whose formatted size fits ``budget`` tokens.

    ``relationships`` and ``query`` size the "Related to" lines and the header;
    ``strategies`` are the names the header may show. Selected chunks get their real
    ``token_count``; a trimmed one its cut text and end.
    """
    if budget < 0:
        raise InvalidParameterError(f"budget ({budget}) must be at least 0")
    n_max = max(len(items), 1)
    types_by_pair: defaultdict[str, defaultdict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for r in relationships:
        types_by_pair[r.source_id][r.target_id].add(r.type)
        types_by_pair[r.target_id][r.source_id].add(r.type)
    remaining = budget - header_tokens(query, n_max, budget, tokenizer, strategies)
    selected: list[Prioritized] = []
    removed: list[tuple[str, str]] = []
    trims = 0
    # No source costs less than its heading; once the room is below that, counting stops.
    floor = tokenizer.count(f"{SOURCE_SEPARATOR}## Source {n_max}: ")
    for item in items:
        chunk = item.chunk
        if remaining <= floor:
            removed.append((chunk.chunk_id, OVER_BUDGET))
            continue
        related = _worst_related(types_by_pair.get(chunk.chunk_id, {}), n_max)
        overhead = tokenizer.count(source_block(n_max, chunk, related, text="")) + JOIN_SLACK
        room = remaining - overhead
        if room <= 0:
            removed.append((chunk.chunk_id, OVER_BUDGET))
            continue
        n = tokenizer.count_within(chunk.text, room)
        if n is not None:
            selected.append(replace(item, chunk=replace(chunk, token_count=n)))
            remaining -= overhead + n
            continue
        cut = None
        if trim and room >= MIN_TRIM_TOKENS and trims < MAX_TRIM_ATTEMPTS:
            trims += 1
            cut = trim_to_sentences(chunk, room, tokenizer)
        if cut is None:
            removed.append((chunk.chunk_id, OVER_BUDGET))
            continue
        trimmed, sentences, n = cut
        selected.append(replace(item, chunk=trimmed))
        removed.append((chunk.chunk_id, trimmed_reason(sentences)))
        remaining -= overhead + n
    return BudgetResult(tuple(selected), tuple(removed), budget - remaining)
