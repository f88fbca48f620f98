"""No lens, tenant, path, topic, as-of or chunk id reads across tenants or breaks a filter.

One workspace with two tenants that speak of the same things (built once per module); every read
path gets arbitrary strings, SQL fragments, comment markers, quotes, backslashes, NUL, Unicode
look-alikes and 1 MB values, and must answer with the asking tenant's rows only, or with a
:class:`~ragloom.errors.RagloomError`. The slow test gives each path 1,000 cases; the quick one
runs the hand-picked values on every path.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ragloom.cli import app
from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError, RagloomError, UnknownChunkError
from ragloom.retrieve import mode_names
from tests.conftest import fast_settings

MEGABYTE = "a" * (1 << 20)
NASTY = [
    "alpha", "beta", "shared", "engineering", "team-structured", "default",
    "'", "''", "\\", "\\'", "alpha' OR '1'='1", "beta' --", "x'; DROP TABLE chunks; --", "/* beta */",
    "alpha\x00beta", "\x00", "alpha\n", " alpha", "ALPHA", "ａｌｐｈａ", "аlpha", "béta", "beta\u200b",
    "%", "_", "*", "tenant_id = 'beta'", ") OR (1=1", "NULL", "", " ", MEGABYTE, "b" * 65, "-",
]
values = st.one_of(st.sampled_from(NASTY), st.text(max_size=40))
as_of_values = st.one_of(
    st.none(), st.sampled_from(["1990-01-01", "2999-01-01T00:00:00Z", "yesterday", "2025-13-45", "", "\x00",
                                "2025-01-01'; --", MEGABYTE, "9999-12-31T23:59:59-05:00"]),
    st.datetimes(min_value=datetime(1, 1, 2), timezones=st.just(UTC)), st.text(max_size=30))
PROPERTY = settings(max_examples=1000, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])

DOCS = {
    "alpha": {
        "engineering": ("capacity.md", "# Capacity\n\nThe catalog integration with QuickBooks ships in June 2025. "
                                       "Dana Reyes leads the Mobile App team of 12 engineers.\n\n## Offline mode\n\n"
                                       "Offline mode for technicians is planned for Q3 2025.\n"),
        "shared": ("roadmap.md", "# Roadmap\n\nThe catalog integration with QuickBooks ships in September 2025. "
                                 "The Mobile App team has 18 engineers.\n"),
    },
    "beta": {
        "team-structured": ("plan.md", "# Plan\n\nThe catalog integration with QuickBooks ships in March 2026. "
                                       "Dana Reyes leads the Mobile App team of 40 engineers.\n\n## Offline mode\n\n"
                                       "Offline mode for technicians is planned for Q1 2026.\n"),
        "shared": ("roadmap.md", "# Roadmap\n\nThe catalog integration with QuickBooks ships in May 2026. "
                                 "The Mobile App team has 55 engineers.\n"),
    },
}


@dataclass
class Workspace:
    path: Path
    engine: Engine
    paths: dict[str, list[Path]]
    chunks: dict[str, set[str]]
    documents: dict[str, set[str]]
    sources: dict[str, set[str]]


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    root = tmp_path_factory.mktemp("tenants")
    engine = Engine(root / "ws", settings=fast_settings())
    paths: dict[str, list[Path]] = {}
    for tenant, lenses in DOCS.items():
        for lens, (name, text) in lenses.items():
            folder = root / tenant / lens
            folder.mkdir(parents=True)
            (folder / name).write_text(text, encoding="utf-8")
            assert engine.ingest(folder, lens=lens, tenant=tenant).ok
            paths.setdefault(tenant, []).append(folder / name)
    chunks = {t: {r["chunk_id"] for r in engine.store.chunks(t, columns=["chunk_id"])} for t in DOCS}
    documents = {t: {r["document_id"] for r in engine.store.documents(t)} for t in DOCS}
    sources = {t: {r["source_path"] for r in engine.store.documents(t)} for t in DOCS}
    assert all(chunks.values()) and not chunks["alpha"] & chunks["beta"]
    yield Workspace(root / "ws", engine, paths, chunks, documents, sources)


def answer(call: Callable[[], Any]) -> Any:  # noqa: ANN401 - whatever the read returns
    """The read's answer, or None when it refused with a clear error (anything else fails)."""
    try:
        return call()
    except RagloomError as exc:
        assert "Traceback" not in str(exc)
        return None


def own(ws: Workspace, tenant: Any) -> str:  # noqa: ANN401
    """The tenant a read ran for (it ran, so the name was valid; a tenant other than alpha and
    beta has nothing, and every check below then expects nothing)."""
    assert tenant is None or isinstance(tenant, str) and tenant.isascii() and "\n" not in tenant, repr(tenant)
    return tenant or "default"


# -- one function per read path: it asks, and checks that only the asking tenant answered ----------


def check_query(ws: Workspace, mode: str, text: str, tenant: Any, lens: Any, as_of: Any) -> bool:  # noqa: ANN401
    result = answer(lambda: ws.engine.query(text, mode=mode, tenant=tenant, lenses=[lens] if lens else None,
                                            as_of=as_of, k=10))
    if result is None:
        return False
    who = own(ws, tenant)
    for r in result:
        assert r.tenant == who and r.document_id in ws.documents.get(who, set())
        assert r.source_path in ws.sources.get(who, set())
        assert r.chunk_id in ws.chunks[who] or r.chunk_id.startswith(r.document_id + ":")  # a sentence window
        assert lens is None or lens == "" or r.lens == lens
    return True


def check_history(ws: Workspace, path: Any, tenant: Any) -> bool:  # noqa: ANN401
    if isinstance(path, str) and "\x00" in path:
        return False  # Engine.history resolves the path before any check: see test_history_path_with_nul
    rows = answer(lambda: ws.engine.history(path, tenant=tenant))
    if rows:
        who = own(ws, tenant)
        assert all(r["tenant_id"] == who and r["document_id"] in ws.documents.get(who, set()) for r in rows)
    return rows is not None


def check_entities(ws: Workspace, tenant: Any, lens: Any, kind: Any) -> bool:  # noqa: ANN401
    rows = answer(lambda: ws.engine.entities(tenant=tenant, lens=lens, type=kind))
    if rows:
        who = own(ws, tenant)
        lenses = set(DOCS.get(who, {}))
        assert lenses, who
        assert all(set(e["lenses"]) <= lenses for e in rows)
        assert lens in (None, "") or all(e["lenses"] == [lens] for e in rows)
    return rows is not None


def check_quality(ws: Workspace, tenant: Any, lens: Any) -> bool:  # noqa: ANN401
    report = answer(lambda: ws.engine.quality(tenant=tenant, lens=lens, worst=50))
    if report and report["scored"]:
        who = own(ws, tenant)
        assert report["chunks"] <= len(ws.chunks.get(who, set()))
        assert all(w["source_path"] in ws.sources[who] for w in report["worst"])
    return report is not None


def check_contradictions(ws: Workspace, topic: Any, tenant: Any, lens: Any) -> bool:  # noqa: ANN401
    found = answer(lambda: ws.engine.contradictions(topic=topic, tenant=tenant, lenses=[lens] if lens else None))
    if found:
        who = own(ws, tenant)
        assert all(s.source_path in ws.sources.get(who, set()) for c in found for s in c.statements)
    return found is not None


def check_back_references(ws: Workspace, chunk_id: Any, tenant: Any, as_of: Any) -> bool:  # noqa: ANN401
    if _outside_sql_years(as_of):
        return False  # see test_back_references_at_the_ends_of_the_calendar
    refs = answer(lambda: ws.engine.back_references(chunk_id, tenant=tenant, as_of=as_of))
    if refs is None:
        return False
    who = own(ws, tenant)
    assert chunk_id in ws.chunks.get(who, set()), "another tenant's chunk was found"
    assert all(r.chunk_id in ws.chunks[who] for r in refs)
    return True


def _outside_sql_years(as_of: Any) -> bool:  # noqa: ANN401
    """A time whose UTC form is before year 1000 or past year 9999."""
    if isinstance(as_of, str):
        try:
            as_of = datetime.fromisoformat(as_of.strip())
        except ValueError:
            return False
    if not isinstance(as_of, datetime):
        return False
    try:
        return (as_of if as_of.tzinfo else as_of.replace(tzinfo=UTC)).astimezone(UTC).year < 1000
    except OverflowError:
        return True


def check_graph_show(ws: Workspace, chunk_id: Any, tenant: Any) -> bool:  # noqa: ANN401
    node = answer(lambda: ws.engine.graph(tenant=tenant).show(chunk_id))
    if node is None:
        return False
    who = own(ws, tenant)
    assert chunk_id in ws.chunks.get(who, set()) and node["lens"] in DOCS[who]
    assert all(r["neighbour"] in ws.chunks[who] for r in node["relations"])
    return True


def check_stats(ws: Workspace, tenant: Any) -> bool:  # noqa: ANN401
    stats = answer(lambda: ws.engine.stats(tenant=tenant))
    if stats is not None:
        who = own(ws, tenant)
        assert stats["tenant"] == who and set(stats["lenses"]) <= set(DOCS.get(who, {}))
        assert stats["chunks"] == len(ws.chunks.get(who, set()))
    return stats is not None


# -- values: arbitrary, nasty, and the other tenant's real ids, paths and names -------------------


def chunk_ids(ws: Workspace) -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(sorted(ws.chunks["alpha"] | ws.chunks["beta"])), values)


def owned(ws: Workspace) -> int:
    """How many (tenant, chunk id) pairs a read can answer: each tenant's own chunks."""
    return sum(len(ids) for ids in ws.chunks.values())


def path_values(ws: Workspace) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from([str(p) for ps in ws.paths.values() for p in ps]), values)


def test_hand_picked_values_on_every_read_path(ws: Workspace) -> None:
    ids = sorted(ws.chunks["alpha"])[:2] + sorted(ws.chunks["beta"])[:2]
    for value in NASTY:
        for tenant in ("alpha", "beta", value):
            for mode in mode_names():
                check_query(ws, mode, "catalog integration ships", tenant, value, None)
            check_query(ws, "hybrid", value[:1000], tenant, None, value)
            check_history(ws, value, tenant)
            check_entities(ws, tenant, value, value)
            check_quality(ws, tenant, value)
            check_contradictions(ws, value[:1000] or None, tenant, value)
            check_stats(ws, tenant)
            for chunk_id in [*ids, value]:
                check_back_references(ws, chunk_id, tenant, None)
                check_graph_show(ws, chunk_id, tenant)
    for tenant in DOCS:
        for path in (p for ps in ws.paths.values() for p in ps):
            check_history(ws, path, tenant)


def test_history_path_with_nul_is_a_clear_error(ws: Workspace) -> None:
    with pytest.raises(RagloomError):
        ws.engine.history("notes\x00.md", tenant="alpha")


@pytest.mark.parametrize(("as_of", "error", "message"), [
    ("0999-01-01T00:00:00Z", UnknownChunkError, "no chunk '.*' in tenant 'alpha'"),  # before it was written
    ("9999-12-31T23:59:59-05:00", InvalidParameterError, "outside the calendar once converted to UTC; give an earlier"),
])
def test_back_references_at_the_ends_of_the_calendar(ws: Workspace, as_of: str, error: type[RagloomError],
                                                     message: str) -> None:
    chunk = sorted(ws.chunks["alpha"])[0]
    with pytest.raises(error, match=message):
        ws.engine.back_references(chunk, tenant="alpha", as_of=as_of)
    assert ws.engine.back_references(chunk, tenant="alpha", as_of="9999-12-30T00:00:00Z")  # far ahead, inside the calendar: as now


def test_another_tenants_chunk_is_not_found(ws: Workspace) -> None:
    beta = sorted(ws.chunks["beta"])[0]
    with pytest.raises(UnknownChunkError):
        ws.engine.back_references(beta, tenant="alpha")
    with pytest.raises(UnknownChunkError):
        ws.engine.graph(tenant="alpha").show(beta)
    assert ws.engine.graph(tenant="beta").show(beta)["id"] == beta
    runner = CliRunner()
    env = {"RAGLOOM_EMBEDDING__MODEL": "hashing", "RAGLOOM_EMBEDDING__CACHE": "false"}
    for command in (["backrefs", beta], ["graph", "show", beta]):
        result = runner.invoke(app, [*command, "--tenant", "alpha", "--workspace", str(ws.path)], env=env)
        assert result.exit_code == 2 and "no chunk" in result.stderr, result.output
        result = runner.invoke(app, [*command, "--tenant", "beta", "--json", "--workspace", str(ws.path)], env=env)
        assert result.exit_code == 0, result.output


_real_tenants = st.sampled_from(["alpha", "beta", None])
tenants = st.one_of(_real_tenants, values)
_real_lenses = st.sampled_from([None, "engineering", "team-structured", "shared"])
lenses = st.one_of(_real_lenses, values)
#: For reads that refuse a lens the tenant does not have: mostly the workspace's own lenses, so
#: that enough cases get an answer to check (a hostile value is still one case in three).
reads_lenses = st.one_of(_real_lenses, _real_lenses, values)
times = st.one_of(st.none(), st.datetimes(min_value=datetime(1000, 1, 1), timezones=st.just(UTC)), as_of_values)
#: Each read path sees this many cases: most for the two real tenants (every other value hostile),
#: the rest with a hostile tenant name; at least ``ANSWERED`` of them must get an answer, not a refusal.
REAL, HOSTILE, ANSWERED = 700, 300, 250
#: Reads that take a lens refuse one the tenant does not have (a hostile value, or the other
#: tenant's lens), so fewer of their cases are answered.
ANSWERED_WITH_LENS = 100
#: The entities read refuses a type no entity of the tenant has, too: a third filter (73 answered
#: of the 1,000 cases when it came in, against 175 before).
ANSWERED_WITH_LENS_AND_TYPE = 50
#: Hypothesis never repeats an input, so a read whose only arguments are a tenant and a lens has
#: few distinct answerable cases: each real tenant with no lens, "" or a lens of its own (ten), and
#: hostile tenant names without a lens.
ANSWERED_TENANT_AND_LENS = 10


def exercise(check: Callable[..., bool], *, real: int = REAL, hostile: int = HOSTILE, answered: int = ANSWERED,
             **strategies: st.SearchStrategy[Any]) -> None:
    """Run ``check`` on ``real + hostile`` generated cases; count them, and those that answered."""
    tally = {"cases": 0, "answered": 0}
    for tenant, cases in ((_real_tenants, real), (values, hostile)):

        @settings(PROPERTY, max_examples=cases)
        @given(tenant=tenant, **strategies)
        def prop(**kwargs: Any) -> None:  # noqa: ANN401
            tally["cases"] += 1
            tally["answered"] += bool(check(**kwargs))

        prop()
    assert tally["cases"] >= min(real, 3) + hostile and tally["answered"] >= answered, tally


@pytest.mark.slow
@pytest.mark.parametrize("mode", mode_names())
def test_query_property(ws: Workspace, mode: str) -> None:
    exercise(lambda **kw: check_query(ws, mode, **kw),
             text=st.one_of(st.sampled_from(["catalog integration", "offline mode", ""]), st.text(max_size=40)),
             lens=reads_lenses, as_of=times, answered=ANSWERED_WITH_LENS)


@pytest.mark.slow
def test_history_property(ws: Workspace) -> None:
    exercise(lambda **kw: check_history(ws, **kw), path=path_values(ws))


@pytest.mark.slow
def test_entities_property(ws: Workspace) -> None:
    # A type no entity of the tenant has is refused, as a lens is: the tenants' own types (their
    # documents mention products and dates) come up as often as no type and as hostile ones.
    kinds = st.one_of(st.none(), st.sampled_from(["product", "date"]), values)
    exercise(lambda **kw: check_entities(ws, **kw), lens=reads_lenses, kind=kinds, answered=ANSWERED_WITH_LENS_AND_TYPE)


@pytest.mark.slow
def test_quality_property(ws: Workspace) -> None:
    exercise(lambda **kw: check_quality(ws, **kw), lens=reads_lenses, answered=ANSWERED_TENANT_AND_LENS)


@pytest.mark.slow
def test_contradictions_property(ws: Workspace) -> None:
    exercise(lambda **kw: check_contradictions(ws, **kw),
             topic=st.one_of(st.sampled_from(["catalog integration", "engineers", None]), st.text(max_size=40)),
             lens=reads_lenses, answered=ANSWERED_WITH_LENS)


@pytest.mark.slow
def test_back_references_property(ws: Workspace) -> None:
    # answered: a tenant found one of its own chunks (the other tenant's are never found)
    exercise(lambda **kw: check_back_references(ws, **kw), answered=owned(ws), chunk_id=chunk_ids(ws), as_of=times)


@pytest.mark.slow
def test_graph_show_property(ws: Workspace) -> None:
    # answered: each real chunk shown to its own tenant once (an input is never repeated)
    exercise(lambda **kw: check_graph_show(ws, **kw), answered=owned(ws), chunk_id=chunk_ids(ws))


@pytest.mark.slow
def test_stats_property(ws: Workspace) -> None:
    # one argument: the real tenants are three cases, the other thousand are hostile names
    exercise(lambda **kw: check_stats(ws, **kw), real=3, hostile=1000, answered=3)
