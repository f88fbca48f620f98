"""Step 2: send no text twice.

Two things are removed here:

* **Overlapping spans of one document.** Chunkers overlap neighbouring chunks, and sentence
  windows grow into each other; two such spans become one whose text is exactly the
  document's text over the union (``a.text + b.text[a.end - b.start:]``), so the overlap is
  sent once and offsets stay exact.
* **Near-duplicates.** The same paragraph pasted into two documents, or lightly edited
  between them. Similarity is ``content_weight x content + entity_weight x entities``
  (weights normalised to sum to 1), where *entities* is the Jaccard index of the two entity
  id sets and *content* the Jaccard index of their 3-word shingle sets. Candidate pairs come
  from MinHash signatures with LSH banding tuned to the lowest content similarity that can
  still reach the threshold, so dissimilar pairs are never compared; candidates are then
  checked against the exact shingle sets. Alternatively the chunk vectors give the content
  similarity as a cosine (``method="vector"``).
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

import numpy as np

from ragloom.context._text import known_sentences
from ragloom.context.model import DedupResult
from ragloom.embed.base import normalize_rows
from ragloom.errors import InvalidParameterError, UnknownNameError
from ragloom.parse.words import words
from ragloom.types import ScoredChunk

SHINGLE_WORDS = 3
PERMUTATIONS = 64
#: LSH finds a pair at the lowest similarity that matters with at least this probability.
LSH_RECALL = 0.98

_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def _splitmix(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser: spreads every input bit over the whole word, so that the
    multiply-add "permutations" below order shingles at random."""
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        result: np.ndarray = x ^ (x >> np.uint64(31))
        return result


# A fixed seed: the same texts must give the same candidates in every process.
_seeded = np.random.default_rng(20250604)
_PERM_A = _seeded.integers(0, 2**63, size=PERMUTATIONS, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
_PERM_B = _seeded.integers(0, 2**63, size=PERMUTATIONS, dtype=np.uint64)
#: One odd multiplier per word position of a shingle (so "a b c" and "c b a" differ).
_SHINGLE_MULT = _seeded.integers(0, 2**63, size=16, dtype=np.uint64) * np.uint64(2) + np.uint64(1)


def shingle_hashes(texts: Sequence[str], *, k: int = SHINGLE_WORDS) -> tuple[np.ndarray, np.ndarray]:
    """64-bit hashes of the ``k``-word shingles of all texts, concatenated, and the bounds
    (``len(texts) + 1`` offsets) of each text's run. Repeats within a text are kept.

    Words get ids from one vocabulary shared by the call, which is deterministic (unlike
    ``hash``) and lets numpy hash every shingle of every text in one pass. A text shorter
    than ``k`` words is one shingle; a text without words has none.
    """
    if not 1 <= k <= len(_SHINGLE_MULT):
        raise InvalidParameterError(f"k ({k}) must be between 1 and {len(_SHINGLE_MULT)}")
    tokens = [words(t) for t in texts]
    lengths = np.fromiter(map(len, tokens), dtype=np.int64, count=len(tokens))
    vocab: defaultdict[str, int] = defaultdict(itertools.count(1).__next__)
    total = int(lengths.sum())
    ids = np.fromiter(map(vocab.__getitem__, itertools.chain.from_iterable(tokens)), dtype=np.uint64, count=total)
    first_word = np.cumsum(lengths) - lengths
    counts = np.where(lengths >= k, lengths - k + 1, np.minimum(lengths, 1))
    bounds = np.concatenate(([0], np.cumsum(counts)))
    hashes = np.zeros(int(bounds[-1]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        long = lengths >= k
        if total >= k and long.any():
            windows = np.zeros(total - k + 1, dtype=np.uint64)
            for offset in range(k):
                windows += ids[offset : total - k + 1 + offset] * _SHINGLE_MULT[offset]
            # Each long text's windows start at its first word; none crosses into the next text.
            owner = np.repeat(np.flatnonzero(long), counts[long])
            position = np.arange(len(owner)) - np.repeat(bounds[:-1][long], counts[long])
            hashes[np.repeat(bounds[:-1][long], counts[long]) + position] = windows[first_word[owner] + position]
        for i in np.flatnonzero(~long & (lengths > 0)).tolist():
            w = ids[first_word[i] : first_word[i] + lengths[i]]
            hashes[bounds[i]] = np.sum(w * _SHINGLE_MULT[: len(w)], dtype=np.uint64)
    return _splitmix(hashes), bounds


def shingle_sets(texts: Sequence[str], *, k: int = SHINGLE_WORDS) -> list[np.ndarray]:
    """Sorted unique shingle hashes of each text (see :func:`shingle_hashes`)."""
    hashes, bounds = shingle_hashes(texts, k=k)
    return [np.unique(hashes[a:b]) for a, b in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)]


#: Permutations hashed at once: small blocks keep the temporaries in cache, which is several
#: times faster than one (permutations x shingles) array.
_PERM_BLOCK = 4


def _signatures(hashes: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    n = len(bounds) - 1
    sig = np.full((n, PERMUTATIONS), _MASK64, dtype=np.uint64)
    nonempty = np.flatnonzero(bounds[1:] > bounds[:-1])
    if not len(nonempty) or not len(hashes):
        return sig
    # reduceat over only the non-empty runs: an empty run would yield a neighbour's value.
    starts = bounds[:-1][nonempty]
    block = np.empty((_PERM_BLOCK, len(hashes)), dtype=np.uint64)
    out = np.empty((PERMUTATIONS, len(nonempty)), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for b in range(0, PERMUTATIONS, _PERM_BLOCK):
            np.multiply(_PERM_A[b : b + _PERM_BLOCK, None], hashes[None, :], out=block)
            block += _PERM_B[b : b + _PERM_BLOCK, None]
            out[b : b + _PERM_BLOCK] = np.minimum.reduceat(block, starts, axis=1)
    sig[nonempty] = out.T
    return sig


def minhash_signatures(shingles: Sequence[np.ndarray]) -> np.ndarray:
    """``(len(shingles), PERMUTATIONS)`` MinHash signatures; an empty set gets all-max."""
    lengths = [len(s) for s in shingles]
    bounds = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
    flat = np.concatenate(list(shingles)) if shingles else np.zeros(0, dtype=np.uint64)
    return _signatures(flat.astype(np.uint64, copy=False), bounds)


def lsh_rows(min_similarity: float, *, permutations: int = PERMUTATIONS, recall: float = LSH_RECALL) -> int:
    """Rows per band: the most (fewest false candidates) that still find a pair of
    similarity ``min_similarity`` with probability ``recall``."""
    s = min(max(min_similarity, 0.05), 1.0)
    best = 1
    for rows in range(1, 9):
        bands = permutations // rows
        if 1.0 - (1.0 - s**rows) ** bands >= recall:
            best = rows
    return best


def lsh_candidates(signatures: np.ndarray, rows: int) -> set[tuple[int, int]]:
    """Pairs ``(i, j)``, ``i < j``, whose signatures agree on all rows of at least one band."""
    n, perms = signatures.shape
    pairs: set[tuple[int, int]] = set()
    if n < 2:
        return pairs
    for b in range(perms // rows):
        band = signatures[:, b * rows : (b + 1) * rows]
        keys = band[:, 0]
        with np.errstate(over="ignore"):
            for r in range(1, rows):
                keys = _splitmix(keys * _SHINGLE_MULT[0] + band[:, r])
        order = np.argsort(keys, kind="stable")
        sorted_keys = keys[order]
        same = sorted_keys[1:] == sorted_keys[:-1]
        if not same.any():
            continue
        # Runs of equal keys: a rising edge of ``same`` opens one, a falling edge closes it.
        edges = np.flatnonzero(np.diff(np.concatenate(([False], same, [False])).astype(np.int8)))
        # A 64-bit key collision only adds a candidate, which the exact check then rejects.
        for start, last in zip(edges[0::2].tolist(), edges[1::2].tolist(), strict=True):
            pairs.update(itertools.combinations(sorted(order[start : last + 1].tolist()), 2))
    return pairs


def jaccard_sorted(a: np.ndarray, b: np.ndarray) -> float:
    if len(a) == 0 and len(b) == 0:
        return 1.0
    inter = len(np.intersect1d(a, b, assume_unique=True))
    return inter / (len(a) + len(b) - inter)


def entity_jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    inter = len(a & b)
    return inter / (len(a) + len(b) - inter)


def _minhash_pairs(chunks: Sequence[ScoredChunk], min_content: float) -> dict[tuple[int, int], float]:
    hashes, bounds = shingle_hashes([c.text for c in chunks])
    sig = _signatures(hashes, bounds)
    sets: dict[int, np.ndarray] = {}

    def shingles(i: int) -> np.ndarray:
        if i not in sets:
            sets[i] = np.unique(hashes[bounds[i] : bounds[i + 1]])
        return sets[i]

    out = {}
    for i, j in lsh_candidates(sig, lsh_rows(min_content)):
        sim = jaccard_sorted(shingles(i), shingles(j))
        if sim >= min_content:
            out[(i, j)] = sim
    return out


def _vector_pairs(chunks: Sequence[ScoredChunk], min_content: float) -> dict[tuple[int, int], float]:
    if any(c.vector is None for c in chunks):
        # Vectors are all or nothing: mixing cosines and shingle overlaps would put two
        # different scales under one threshold.
        return _minhash_pairs(chunks, min_content)
    vectors = np.asarray([np.asarray(c.vector, dtype=np.float32) for c in chunks])
    vectors = normalize_rows(vectors)
    sims = np.clip(vectors @ vectors.T, 0.0, 1.0)
    rows, cols = np.nonzero(np.triu(sims >= min_content, 1))
    return {(int(i), int(j)): float(sims[i, j]) for i, j in zip(rows, cols, strict=True)}


#: How content similarity is measured, by name.
SIMILARITY_METHODS: Mapping[str, Callable[[Sequence[ScoredChunk], float], dict[tuple[int, int], float]]] = {
    "minhash": _minhash_pairs,
    "vector": _vector_pairs,
}


def _consistent(a: ScoredChunk, b: ScoredChunk) -> bool:
    """Whether ``b`` (starting inside or at the end of ``a``) can be glued onto ``a``."""
    if len(a.text) != a.end - a.start or len(b.text) != b.end - b.start:
        return False  # offsets that do not describe the text cannot be merged exactly
    overlap_end = min(a.end, b.end)
    if overlap_end <= b.start:
        return True
    # Retrieval reads one snapshot of a document, but two calls' results may be mixed:
    # spans that disagree on their shared text come from different versions.
    return a.text[b.start - a.start : overlap_end - a.start] == b.text[: overlap_end - b.start]


def _merged_sentences(a: ScoredChunk, b: ScoredChunk) -> list[tuple[int, int]]:
    """Both spans' sentences, or none: a partial list would misplace sentence bounds."""
    sa, sb = known_sentences(a), known_sentences(b)
    return sorted(set(sa) | set(sb)) if sa and sb else []


def _merge_two(a: ScoredChunk, b: ScoredChunk) -> ScoredChunk:
    text = a.text if b.end <= a.end else a.text + b.text[a.end - b.start :]
    best = a if a.score >= b.score else b
    scores = dict(a.scores)
    for key, value in b.scores.items():
        scores[key] = max(scores.get(key, value), value)
    total = len(a.text) + len(b.text)
    tokens = round((a.token_count + b.token_count) * len(text) / total) if total else 0
    return replace(
        a,
        text=text,
        end=max(a.end, b.end),
        score=max(a.score, b.score),
        scores=scores,
        retriever=best.retriever,
        via=best.via,
        vector=best.vector,
        token_count=tokens,
        chunk_index=min(a.chunk_index, b.chunk_index),
        key_terms=tuple(dict.fromkeys(a.key_terms + b.key_terms)),
        time_refs=tuple(dict.fromkeys(a.time_refs + b.time_refs)),
        entities=a.entities + b.entities,
        sentences=tuple(_merged_sentences(a, b)),
    )


def merge_spans(chunks: Sequence[ScoredChunk]
                ) -> tuple[list[ScoredChunk], list[tuple[str, str]], dict[str, tuple[str, ...]], int]:
    """Merge overlapping or touching spans (``a.end >= b.start``) of the same document.

    Chunks are grouped by tenant and document id only: a chunk's ``version_id`` is its own
    row's id, and a chunk kept unchanged by a re-ingest keeps its old ``as_of``, so neither
    tells whether two spans belong to one version; spans that overlap must agree on the
    shared text instead. The merged chunk keeps the earliest span's id and metadata, the
    highest score, and the best-scoring span's vector and provenance.

    Returns the chunks (each at the input position of its first member), ``(id, "merged into
    <id>")`` for every span merged away, the surviving id -> all merged ids (itself first),
    and the number of overlapping characters that were sent once instead of twice.
    """
    groups: defaultdict[tuple[str, str], list[int]] = defaultdict(list)
    for i, c in enumerate(chunks):
        groups[(c.tenant, c.document_id)].append(i)
    placed: list[tuple[int, ScoredChunk]] = []
    removed: list[tuple[str, str]] = []
    merged: dict[str, tuple[str, ...]] = {}
    duplicate_chars = 0
    for members in groups.values():
        if len(members) == 1:
            placed.append((members[0], chunks[members[0]]))
            continue
        members = sorted(members, key=lambda i: (chunks[i].start, -chunks[i].end, i))
        first, current = members[0], chunks[members[0]]
        ids = [current.chunk_id]
        for i in members[1:]:
            nxt = chunks[i]
            if nxt.start <= current.end and _consistent(current, nxt):
                duplicate_chars += min(current.end, nxt.end) - nxt.start
                current = _merge_two(current, nxt)
                ids.append(nxt.chunk_id)
                first = min(first, i)
                removed.append((nxt.chunk_id, f"merged into {current.chunk_id}"))
                continue
            placed.append((first, current))
            if len(ids) > 1:
                merged[current.chunk_id] = tuple(ids)
            first, current, ids = i, nxt, [nxt.chunk_id]
        placed.append((first, current))
        if len(ids) > 1:
            merged[current.chunk_id] = tuple(ids)
    placed.sort(key=lambda p: p[0])
    return [c for _, c in placed], removed, merged, duplicate_chars


def _normalised_weights(content_weight: float, entity_weight: float) -> tuple[float, float]:
    if content_weight < 0 or entity_weight < 0:
        raise InvalidParameterError(
            f"content_weight ({content_weight}) and entity_weight ({entity_weight}) must not be negative")
    total = content_weight + entity_weight
    if total <= 0:
        raise InvalidParameterError(
            f"content_weight ({content_weight}) + entity_weight ({entity_weight}) must be above 0")
    return content_weight / total, entity_weight / total


def combined_similarity(content: float, entities_a: frozenset[str], entities_b: frozenset[str], *,
                        content_weight: float, entity_weight: float) -> float:
    """The redundancy score of two chunks (weights already normalised).

    When neither chunk has entities the entity term says nothing, so content alone decides:
    otherwise two identical entity-less paragraphs would score only ``content_weight``.
    """
    if not entities_a and not entities_b:
        return content
    return content_weight * content + entity_weight * entity_jaccard(entities_a, entities_b)


def find_duplicates(chunks: Sequence[ScoredChunk], *, similarity_threshold: float = 0.7,
                    content_weight: float = 0.7, entity_weight: float = 0.3,
                    method: str = "minhash") -> dict[tuple[int, int], float]:
    """Pairs ``(i, j)``, ``i < j``, whose combined similarity reaches the threshold."""
    if not 0.0 <= similarity_threshold <= 1.0:
        raise InvalidParameterError(f"similarity_threshold ({similarity_threshold}) must be between 0 and 1")
    if method not in SIMILARITY_METHODS:
        raise UnknownNameError("similarity method", method, SIMILARITY_METHODS)
    cw, ew = _normalised_weights(content_weight, entity_weight)
    entity_sets = [frozenset(c.entities) for c in chunks]
    # The content similarity below which even identical entity sets cannot lift a pair to
    # the threshold: no pair under it needs looking at.
    min_content = (similarity_threshold - ew) / cw if cw > 0 else 0.0
    min_content = min(max(min_content, 0.0), similarity_threshold)
    content = SIMILARITY_METHODS[method](chunks, min_content) if cw > 0 else {}
    candidates = dict(content)
    if min_content <= 0.0:
        # Entities alone can make a duplicate: pairs that share one are candidates too.
        index: defaultdict[str, list[int]] = defaultdict(list)
        for i, ents in enumerate(entity_sets):
            for e in ents:
                index[e].append(i)
        for members in index.values():
            for pair in itertools.combinations(members, 2):
                candidates.setdefault(pair, 0.0)
    out = {}
    for (i, j), sim in candidates.items():
        score = combined_similarity(sim, entity_sets[i], entity_sets[j], content_weight=cw, entity_weight=ew)
        if score >= similarity_threshold:
            out[(i, j)] = score
    return out


def remove_redundancy(chunks: Sequence[ScoredChunk], *, similarity_threshold: float = 0.7,
                      content_weight: float = 0.7, entity_weight: float = 0.3,
                      method: str = "minhash", merge: bool = True) -> DedupResult:
    """Merge overlapping spans, then drop near-duplicates, keeping the most relevant of each.

    A chunk is dropped only as a duplicate of a chunk that is kept (chunks are visited best
    score first), so a chain A~B~C never removes C for resembling a B that was itself
    removed. Kept chunks stay in their input order.
    """
    if merge:
        spans, removed, merged, duplicate_chars = merge_spans(chunks)
    else:
        spans, removed, merged, duplicate_chars = list(chunks), [], {}, 0
    pairs = find_duplicates(spans, similarity_threshold=similarity_threshold, content_weight=content_weight,
                            entity_weight=entity_weight, method=method)
    neighbours: defaultdict[int, list[tuple[int, float]]] = defaultdict(list)
    for (i, j), sim in pairs.items():
        neighbours[i].append((j, sim))
        neighbours[j].append((i, sim))
    order = sorted(range(len(spans)), key=lambda i: (-spans[i].score, i))
    rank = {i: r for r, i in enumerate(order)}
    kept: set[int] = set()
    absorbed: set[int] = set()
    near_removed = 0
    for i in order:
        partners = [(j, sim) for j, sim in neighbours.get(i, ()) if j in kept]
        if not partners:
            kept.add(i)
            continue
        j, _ = max(partners, key=lambda p: (p[1], -rank[p[0]]))
        removed.append((spans[i].chunk_id, f"duplicate of {spans[j].chunk_id}"))
        duplicate_chars += len(spans[i].text)
        absorbed.add(j)
        near_removed += 1
    unique = tuple(c for i, c in enumerate(spans) if i in kept)
    groups = len(absorbed | {i for i, c in enumerate(spans) if i in kept and c.chunk_id in merged})
    stats = {
        "original_count": len(chunks),
        "unique_count": len(unique),
        "removed_count": near_removed,
        "merged_count": len(chunks) - len(spans),
        "groups": groups,
        "duplicate_characters": duplicate_chars,
    }
    return DedupResult(unique, tuple(removed), merged, stats)
