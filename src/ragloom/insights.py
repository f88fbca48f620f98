"""What a workspace can tell about itself: contradictions between lenses, the decisions it
records, its dated events, the questions it leaves open, back-references through entities, the
entities mentioned, and the quality of its chunks."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ragloom.analyse.contradictions import Contradiction, detect_contradictions, sentences_with_claims
from ragloom.analyse.decisions import DECISION_WORDS, Decision, find_decisions
from ragloom.analyse.events import EVENT_WORDS, Event, find_events
from ragloom.analyse.questions import OpenItem, open_items
from ragloom.checks import check_count, shown
from ragloom.embed.base import normalize_rows
from ragloom.enrich.backrefs import BackReference, back_references
from ragloom.enrich.census import Census, take_census
from ragloom.enrich.keyterms import repeated_terms
from ragloom.errors import InvalidParameterError, UnknownChunkError
from ragloom.graph.build import posting_cap
from ragloom.ids import is_prefix, pick
from ragloom.query.result import as_of_moment, parse_day
from ragloom.store.filters import sql_str

if TYPE_CHECKING:
    from ragloom.components import Components
    from ragloom.query.service import QueryService


_SENTENCE_COLUMNS = ["document_id", "source_path", "lens", "start_char", "end_char", "text", "document_date",
                     "section_path"]


#: A key term is a subject lenses can disagree on when chunks of this many lenses hold it.
SHARED_BY_LENSES = 2


def subjects(key_terms: Sequence[str] | None, text: str | None, top_n: int) -> list[str]:
    """What a chunk speaks about: its key terms, their free places (of ``top_n``) filled with the
    content words it repeats twice (a key term needs more repeats to link chunks in the graph:
    ``keyterms.MIN_REPEATS``; a subject a claim is about needs fewer)."""
    found = list(key_terms or ())
    fill = [t for t in repeated_terms(text or "", top_n + len(found)) if t not in found]
    return found + fill[:top_n - len(found)]


class Insights:
    """Reads that analyse the workspace rather than answer a query."""

    def __init__(self, components: Components, queries: QueryService) -> None:
        self.c = components
        self.queries = queries

    def contradictions(self, *, topic: str | None = None, tenant: str | None = None, limit: int | None = 20,
                       lenses: Sequence[str] | None = None, chunk_ids: Sequence[str] | None = None) -> list[Contradiction]:
        """Concrete conflicts between lenses: among ``chunk_ids``, the chunks about ``topic``,
        or the whole workspace."""
        check_count("limit", limit, "how many contradictions to list (None: all)")
        tenant = self.c.tenant(tenant)
        self.c.check_lenses(tenant, lenses)
        store = self.c.store
        columns = ["chunk_id", "document_id", "lens", "start_char", "end_char", "key_terms"]
        if chunk_ids is not None:
            chunks = store.chunks(tenant, chunk_ids=chunk_ids, lenses=lenses, columns=columns)
        elif topic:
            hits = self.queries.run(self.queries.request(topic, mode="hybrid", k=60, tenant=tenant, lenses=lenses))
            chunks = store.chunks(tenant, chunk_ids=[h.chunk_id for h in hits], columns=columns)
        else:
            chunks = store.chunks(tenant, lenses=lenses, columns=columns)
        # Every current chunk's subjects are counted once per commit; a chunk the count did not see
        # (none, within one commit) keeps its key terms.
        about = self.chunk_subjects(tenant)
        chunks = [{**c, "key_terms": about.get(c["chunk_id"], c["key_terms"])} for c in chunks]
        documents = {c["document_id"] for c in chunks}
        sentences = store.chunks(tenant, table="sentences", document_ids=documents,
                                 columns=["document_id", "lens", "source_path", "section_path", "start_char",
                                          "end_char", "text", "document_date"])
        mentions = store.mentions(tenant, document_ids=documents)
        aliases = {m["text"].lower(): m["canonical"].lower() for m in mentions
                   if m["text"].lower() != m["canonical"].lower()}
        # The documents' texts show which sentences sit in code and literal blocks.
        shared = self.shared_terms(tenant)
        claims = sentences_with_claims(sentences, chunks, generic=self.generic_terms(tenant), aliases=aliases,
                                       vocabulary=shared,
                                       texts=store.document_texts(tenant, documents),
                                       entities={m["canonical"].lower() for m in mentions
                                                 if m["source"] in ("gazetteer", "model")})
        return detect_contradictions(claims, authority=self.c.lens_order(tenant), limit=limit,
                                     topic=topic.lower() if topic and len(topic.split()) <= 3 else None)

    def resolve(self, chunk_id: str, *, tenant: str, as_of: datetime | None = None) -> str:
        """The whole id of a chunk given by a short id (an unambiguous prefix); a whole id as is."""
        if not is_prefix(chunk_id):
            return chunk_id
        return pick(chunk_id, self.c.store.chunk_ids_starting(tenant, chunk_id, as_of=as_of), f"tenant {tenant!r}")

    def back_references(self, chunk_id: str, *, tenant: str | None = None, as_of: datetime | str | None = None,
                        limit: int | None = None) -> list[BackReference]:
        """For each entity the chunk mentions, up to ``limit`` other chunks that mention it."""
        check_count("limit", limit, "how many other chunks to list for each entity (None: entities.back_references)")
        tenant = self.c.tenant(tenant)
        moment = as_of_moment(as_of)
        store = self.c.store
        chunk_id = self.resolve(chunk_id, tenant=tenant, as_of=moment)
        found = store.chunks(tenant, chunk_ids=[chunk_id], with_vectors=True, as_of=moment)
        if not found:
            raise UnknownChunkError(chunk_id, f"tenant {tenant!r}")
        chunk = found[0]
        ids = set(chunk.get("entities") or ())
        if not ids:
            return []
        candidates = store.chunks(tenant, entity_ids=ids, with_vectors=True, as_of=moment)
        names: dict[str, tuple[str, str, set[str]]] = {}
        for m in store.mentions(tenant, entity_ids=ids, as_of=moment):
            entry = names.setdefault(m["entity_id"], (m["type"], m["canonical"], {m["canonical"]}))
            entry[2].add(m["text"])
        entities = {k: (t, c, sorted(n)) for k, (t, c, n) in names.items()}
        return back_references(chunk, candidates, entities,
                               limit=self.c.settings.entities.back_references if limit is None else limit)

    def entities(self, *, tenant: str | None = None, lens: str | None = None, type: str | None = None,  # noqa: A002
                 as_of: datetime | None = None) -> list[dict[str, Any]]:
        """Every entity mentioned in the tenant's current documents, most mentioned first: each
        known entity counted wherever its name is written, variants merged (see
        :mod:`ragloom.enrich.census`)."""
        tenant = self.c.tenant(tenant)
        self.c.check_lenses(tenant, [lens] if lens else None, as_of=as_of)
        census, documents = self.census(tenant, as_of=as_of)
        table: dict[str, dict[str, Any]] = {}
        for m in census.mentions:
            lens_of, path = documents.get(m.document_id, (None, None))
            entity = census.entities[m.entity_id]
            if lens_of is None or lens is not None and lens_of != lens or type is not None and entity.type != type:
                continue
            entry = table.setdefault(m.entity_id, {"entity_id": m.entity_id, "name": entity.name, "type": entity.type,
                                                   "mentions": 0, "documents": set(), "aliases": set(), "lenses": set()})
            entry["mentions"] += 1
            entry["documents"].add(path)
            entry["lenses"].add(lens_of)
            written = " ".join(m.text.split())  # a name wrapped at a line break is the same alias
            if written != entity.name:
                entry["aliases"].add(written)
        if type is not None and not table:
            # A type no entity of the tenant has (in any lens) is a misspelling to report, as a lens is.
            types = sorted({e.type for e in census.entities.values()})
            if types and type not in types:
                raise InvalidParameterError(f"no entities of type {shown(type)} in the workspace {self.c.workspace} "
                                            f"(tenant {tenant!r}); its types are: {', '.join(types)}")
        rows = [{**e, "documents": len(e["documents"]), "aliases": sorted(e["aliases"]), "lenses": sorted(e["lenses"])}
                for e in table.values()]
        return sorted(rows, key=lambda e: (-e["mentions"], e["name"]))

    def census(self, tenant: str, *, as_of: datetime | None = None) -> tuple[Census, dict[str, tuple[str, str]]]:
        """The tenant's entity census (:func:`ragloom.enrich.census.take_census`) and each
        document's lens and path, by document id; the current one is taken once per commit."""
        def take() -> tuple[Census, dict[str, tuple[str, str]]]:
            store = self.c.store
            documents = {d["document_id"]: (d["lens"], d["source_path"]) for d in store.documents(tenant, as_of=as_of)}
            texts = store.document_texts(tenant, documents, as_of=as_of)
            return take_census(store.mentions(tenant, as_of=as_of), texts), documents

        if as_of is not None:
            return take()
        found: tuple[Census, dict[str, tuple[str, str]]] = self.c.store.memo(("entity census", tenant), take)
        return found

    def generic_terms(self, tenant: str) -> set[str]:
        """Key terms too general to tell subjects apart: the settings' domain terms, and those
        in more chunks than a term may be to link them in the graph (learned per commit)."""
        def count() -> set[str]:
            table = self.c.store.current_columns(tenant, ["key_terms"])
            if table is None:
                return set()
            df: Counter[str] = Counter()
            for terms in table["key_terms"].to_pylist():
                df.update(set(terms or ()))
            cap = posting_cap(self.c.settings.graph, table.num_rows)
            return {t for t, n in df.items() if n > cap}

        common: set[str] = self.c.store.memo(("generic terms", tenant), count)
        return common | set(self.c.settings.graph.domain_terms)

    def shared_terms(self, tenant: str) -> set[str]:
        """Subjects that chunks of several lenses speak about (a key term, or a content word the
        chunk repeats): the workspace's own vocabulary of what its lenses can disagree on (what
        ``graph.domain_terms`` adds to by hand). Counted apart from the key terms, which need
        more repeats to link chunks in the graph (``keyterms.MIN_REPEATS``)."""
        def count() -> set[str]:
            table = self.c.store.current_columns(tenant, ["chunk_id", "lens"])
            if table is None:
                return set()
            about = self.chunk_subjects(tenant)
            lenses: dict[str, set[str]] = {}
            for chunk_id, lens in zip(table["chunk_id"].to_pylist(), table["lens"].to_pylist(), strict=True):
                for t in about.get(chunk_id, ()):
                    lenses.setdefault(t, set()).add(lens)
            return {t for t, seen in lenses.items() if len(seen) >= SHARED_BY_LENSES}

        shared: set[str] = self.c.store.memo(("shared terms", tenant), count)
        return shared

    def chunk_subjects(self, tenant: str) -> dict[str, list[str]]:
        """What each current chunk speaks about (:func:`subjects`), by chunk id, once per commit."""
        def count() -> dict[str, list[str]]:
            table = self.c.store.current_columns(tenant, ["chunk_id", "key_terms", "text"])
            if table is None:
                return {}
            top_n = self.c.settings.graph.key_terms
            return {chunk_id: subjects(terms, text, top_n) for chunk_id, terms, text in
                    zip(table["chunk_id"].to_pylist(), table["key_terms"].to_pylist(), table["text"].to_pylist(),
                        strict=True)}

        about: dict[str, list[str]] = self.c.store.memo(("chunk subjects", tenant), count)
        return about

    def decisions(self, *, since: date | str | None = None, tenant: str | None = None,
                  lenses: Sequence[str] | None = None, limit: int | None = None) -> list[Decision]:
        """Decisions, votes, approvals and commitments recorded in the tenant's current
        documents, newest first (see :mod:`ragloom.analyse.decisions`)."""
        check_count("limit", limit, "how many decisions to list (None: all)")
        tenant = self.c.tenant(tenant)
        self.c.check_lenses(tenant, lenses)
        day = parse_day(since, "since")
        # Only sentences that could record one are read: a regular expression in the query.
        rows = self._sentences(tenant, lenses, f"regexp_like(text, {sql_str(DECISION_WORDS)})")
        found = find_decisions(rows, since=day)
        return found if limit is None else found[:limit]

    def _sentences(self, tenant: str, lenses: Sequence[str] | None, *where: str,
                   with_vectors: bool = False) -> list[dict[str, Any]]:
        return self.c.store.chunks(tenant, table="sentences", lenses=lenses, where=list(where), with_vectors=with_vectors,
                                   columns=None if with_vectors else _SENTENCE_COLUMNS)

    def events(self, *, tenant: str | None = None, lenses: Sequence[str] | None = None,
               limit: int | None = 40) -> list[Event]:
        """What the dated documents say happens on a day or in a month, quarter or half, the
        ``limit`` best in the order of the periods they name (see :mod:`ragloom.analyse.events`)."""
        check_count("limit", limit, "how many events to list (None: all)")
        tenant = self.c.tenant(tenant)
        self.c.check_lenses(tenant, lenses)
        rows = self._sentences(tenant, lenses, "document_date IS NOT NULL",
                               f"regexp_like(text, {sql_str(EVENT_WORDS)})")
        texts = self.c.store.document_texts(tenant, {r["document_id"] for r in rows})
        return find_events(rows, texts=texts, limit=limit)

    def open_items(self, *, tenant: str | None = None, lenses: Sequence[str] | None = None,
                   limit: int = 10) -> list[OpenItem]:
        """Questions the dated documents ask that no later one answers, and action items
        nobody owns, newest first (see :mod:`ragloom.analyse.questions`)."""
        check_count("limit", limit, "how many open questions and unowned actions to list")
        tenant = self.c.tenant(tenant)
        self.c.check_lenses(tenant, lenses)
        rows = self._sentences(tenant, lenses, "document_date IS NOT NULL", with_vectors=True)
        if not rows:
            return []
        vectors = normalize_rows(np.asarray([r["vector"] for r in rows], dtype=np.float32))
        decided = [(d.document_id, d.start) for d in self.decisions(tenant=tenant, lenses=lenses)]
        return open_items(rows, vectors, decided=decided, limit=limit)

    def quality(self, *, tenant: str | None = None, lens: str | None = None, worst: int = 10) -> dict[str, Any]:
        """The distribution of chunk quality scores and the worst chunks with their issues."""
        check_count("worst", worst, "how many of the lowest-scored chunks to list")
        tenant = self.c.tenant(tenant)
        self.c.check_lenses(tenant, [lens] if lens else None)
        rows = self.c.store.chunks(tenant, lenses=[lens] if lens else None,
                                   columns=["chunk_id", "lens", "source_path", "section_path", "start_char",
                                            "end_char", "text", "quality_score", "quality_json"])
        scored = [r for r in rows if r["quality_score"] is not None]
        scores = np.array([r["quality_score"] for r in scored], dtype=np.float64)
        buckets = {f"{lo / 10:.1f}-{(lo + 1) / 10:.1f}": 0 for lo in range(10)}
        issues: dict[str, dict[str, int]] = {}
        for r in scored:
            bucket = min(int(r["quality_score"] * 10), 9)
            buckets[f"{bucket / 10:.1f}-{(bucket + 1) / 10:.1f}"] += 1
            for issue in json.loads(r["quality_json"] or "{}").get("issues", []):
                issues.setdefault(issue["kind"], {}).setdefault(issue["severity"], 0)
                issues[issue["kind"]][issue["severity"]] += 1
        worst_rows = sorted(scored, key=lambda r: r["quality_score"])[:worst]
        return {
            "chunks": len(rows),
            "scored": len(scored),
            "mean": float(scores.mean()) if len(scores) else None,
            "median": float(np.median(scores)) if len(scores) else None,
            "p10": float(np.percentile(scores, 10)) if len(scores) else None,
            "histogram": buckets,
            "issues": issues,
            "worst": [{"chunk_id": r["chunk_id"], "lens": r["lens"], "source_path": r["source_path"],
                       "section_path": r["section_path"], "start": r["start_char"], "end": r["end_char"],
                       "preview": " ".join(r["text"].split())[:160], **json.loads(r["quality_json"] or "{}")}
                      for r in worst_rows],
        }
