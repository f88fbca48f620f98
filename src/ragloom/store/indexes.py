"""Index policy: which indexes a table gets (BM25, ANN, bitmaps), and when an optimisation is due."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: Each write adds a fragment; compacting them costs more than it saves until there are this many.
SMALL_FRAGMENTS_BEFORE_COMPACTION = 16
UNINDEXED_ROWS_BEFORE_INDEXING = 5000
#: The BM25 index keeps the statistics of the rows it holds (document count, term frequencies,
#: mean length); rows added since are searched too, but ranked with those statistics. Once the
#: unindexed rows pass this share of the indexed ones they are folded in, so that a workspace
#: never ranks with the statistics of its first batch.
FTS_UNINDEXED_SHARE = 0.05
#: Versions older than those before a table is optimised for their sake alone (LanceDB's
#: optimisation also compacts and folds new rows into the indexes, 1-4 s at 100,000 chunks, so
#: it does not run for every few versions).
OLD_VERSIONS_BEFORE_CLEANUP = 24


@dataclass(frozen=True)
class AnnSettings:
    """When the vector tables get an approximate-nearest-neighbour index, and how it is searched
    (``[retrieval] ann_*``)."""

    min_rows: int = 50_000
    #: IVF_SQ: at a million sentences IVF_HNSW_SQ found none of the ten nearest for 5 of 40
    #: queries, at any probes or ``ef`` (recall@10 0.75-0.88), and took 10x longer to build;
    #: IVF_SQ found all of them in 8-9 ms (docs/benchmarks.md, issue 31).
    index: str = "IVF_SQ"
    nprobes: int = 32
    refine_factor: int = 4


def optimize_due(table: Any, old_versions: int) -> bool:  # noqa: ANN401 - a LanceDB table
    """Whether ``table`` is worth optimising: enough small fragments to compact, unindexed rows to
    fold in (the BM25 index's past :data:`FTS_UNINDEXED_SHARE`), or ``old_versions`` to clean up."""
    small = table.stats()["fragment_stats"]["num_small_fragments"]
    counts = [(ix.index_type, table.index_stats(ix.name)) for ix in table.list_indices()]
    unindexed = sum(stats.num_unindexed_rows for _, stats in counts)
    stale_fts = any(kind == "FTS" and stats.num_unindexed_rows > FTS_UNINDEXED_SHARE * stats.num_indexed_rows
                    for kind, stats in counts)
    return (stale_fts or old_versions >= OLD_VERSIONS_BEFORE_CLEANUP
            or small >= SMALL_FRAGMENTS_BEFORE_COMPACTION or unindexed >= UNINDEXED_ROWS_BEFORE_INDEXING)


def ensure_fts(table: Any, column: str) -> None:  # noqa: ANN401
    """A BM25 index on ``column`` unless the table has one."""
    if any(getattr(ix, "index_type", "") == "FTS" for ix in table.list_indices()):
        return
    from lancedb.index import FTS

    table.create_index(
        column,
        config=FTS(with_position=False, stem=True, remove_stop_words=True, lower_case=True, ascii_folding=True),
        replace=True,
    )


def ensure_ann(table: Any, ann: AnnSettings) -> bool:  # noqa: ANN401
    """An ANN index on the vectors once the table has ``ann.min_rows`` rows, and bitmap
    indexes on the columns every read filters by; True when one was built."""
    present = vector_index(table)
    if present is not None and same_kind(present.index_type, ann.index) or int(table.count_rows()) < ann.min_rows:
        return False
    rows = int(table.count_rows())
    dim = int(table.schema.field("vector").type.list_size)
    options: dict[str, Any] = {"num_partitions": max(1, int(math.sqrt(rows) / 2))}
    if ann.index == "IVF_PQ":
        options["num_sub_vectors"] = max(1, dim // 16)
    table.create_index(metric="cosine", vector_column_name="vector", index_type=ann.index, replace=True, **options)
    present = {ix.columns[0] for ix in table.list_indices() if getattr(ix, "columns", None)}
    for column in ("tenant_id", "lens"):
        if column not in present:
            table.create_scalar_index(column, index_type="BITMAP")
    return True


def same_kind(built: str, named: str) -> bool:
    """Whether an index LanceDB lists as ``built`` ("IvfHnswSq") is of the kind ``named`` ("IVF_HNSW_SQ")."""
    return built.replace("_", "").lower() == named.replace("_", "").lower()


def vector_index(table: Any) -> Any:  # noqa: ANN401
    """The table's index on its vectors, or None."""
    return next((ix for ix in table.list_indices() if "vector" in (getattr(ix, "columns", None) or [])), None)
