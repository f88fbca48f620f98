"""The LanceDB store: :class:`LanceStore`, made of the parts in this package (the only one importing lancedb).

The tables and their rows are described in :mod:`ragloom.store.schema`. The store decides how a
workspace is shared: any number of processes may read while one writes.

- **Writes** take the workspace's write lock (:meth:`LanceStore.writer`; a second writer waits,
  and gives up with a clear error after ``lock_timeout`` seconds). Each logical write (a batch
  of documents, a graph update, a deletion) leaves a *pending* marker, changes the tables, then
  records a *commit*: the version of every table. A write that fails is rolled back at once; a
  crash between the two leaves the marker, and the next writer rolls every table back to the
  commit before it writes. A rollback writes only manifests and the commit record, so that it
  works on a full disk (a local workspace sets 4 MiB aside for it). See :mod:`~ragloom.store.commits`.
- **Reads** see one commit and nothing after it: a read operation holds a *read view*
  (:meth:`LanceStore.reading`; :mod:`ragloom.store.views`), every table opened at the version
  the commit names (LanceDB's time travel), from its first read to its last, whoever commits
  meanwhile. Readers never wait for a writer. :meth:`LanceStore.snapshot` makes the newest
  commit the view new operations start from (one ``stat`` when nothing changed).
- What the store keeps in memory (:meth:`LanceStore.memo`, document texts) belongs to the view
  it was read from, and goes with it.
- Old table versions go once older than the last few commits (:data:`KEEP_COMMITS`) or
  ``version_retention``; a read elsewhere that loses them runs again on the newest commit.
"""

from __future__ import annotations

from ragloom.store.commits import GRAPH_STALE, KEEP_COMMITS, ORPHANS, Commits
from ragloom.store.edges import Edges
from ragloom.store.indexes import FTS_UNINDEXED_SHARE, AnnSettings
from ragloom.store.local import COMMIT, PENDING, RESERVE, RESERVE_BYTES, STATE_DIR
from ragloom.store.maintenance import Maintenance
from ragloom.store.reads import Reads, vector_matrix
from ragloom.store.schema import TABLES
from ragloom.store.stats import Stats

__all__ = ["COMMIT", "FTS_UNINDEXED_SHARE", "GRAPH_STALE", "KEEP_COMMITS", "ORPHANS", "PENDING", "RESERVE",
           "RESERVE_BYTES", "STATE_DIR", "TABLES", "AnnSettings", "LanceStore", "vector_matrix"]


class LanceStore(Maintenance, Edges, Stats, Reads, Commits):
    """LanceDB tables in ``<workspace>/lancedb`` (a folder, or a URI on object storage: see
    :mod:`ragloom.store.remote`), shared safely between processes.

    Its parts: :class:`~ragloom.store.connection.StoreCore` (connections, tables, read views),
    :class:`~ragloom.store.commits.Commits` (the write lock, commits, rollbacks, row writes),
    :class:`~ragloom.store.maintenance.Maintenance` (optimisation, bulk deletions),
    :class:`~ragloom.store.edges.Edges` (the graph's edges), :class:`~ragloom.store.reads.Reads`
    (documents, chunks, searches) and :class:`~ragloom.store.stats.Stats` (counts)."""
