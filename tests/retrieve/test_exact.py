"""Exact terms of a query (identifiers, versions, codes, paths) and the fusion list they make."""

from __future__ import annotations

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.engine import Engine
from ragloom.retrieve.exact import exact_ranking, exact_terms, holds

from ..conftest import fast_settings


@pytest.mark.parametrize(("question", "terms"), [
    ("Which OpenSSL version does Node.js 18 ship with?", ["OpenSSL", "Node.js", "18"]),
    ("With asyncio.gather(..., return_exceptions=True), how are exceptions reported?",
     ["asyncio.gather", "return_exceptions"]),
    ("Which PYTHONHASHSEED value turns hash randomization off?", ["PYTHONHASHSEED"]),
    ("Does /proc/sys/kernel/sysrq restrict /proc/sysrq-trigger?", ["/proc/sys/kernel/sysrq", "/proc/sysrq-trigger"]),
    ("How does round() resolve halfway values?", ["round"]),
    ("What does error E0502 mean in Rust 1.75.0?", ["E0502", "1.75.0"]),
    ("How many characters of the SHA-1 should a tag quote?", ["SHA-1"]),
    ("What does `git rebase -i` do?", ["git rebase -i"]),
    ("Who leads the council, e.g. the chair, and when does it meet?", []),
    ("What is the plan for next year?", []),
])
def test_exact_terms_of_real_questions(question: str, terms: list[str]) -> None:
    assert exact_terms(question) == terms


@pytest.mark.parametrize(("text", "term", "found"), [
    ("Node.js version 18.x ships OpenSSL 3.0", "18", True),
    ("Node.js 18.2.0 was released", "18", True),
    ("the 118 tests and release 1.18", "18", False),
    ("see asyncio.gather() for details", "asyncio.gather", True),
    ("asyncio.gathering is not it", "asyncio.gather", False),
    ("set return_exceptions to True", "return_exceptions", True),
    ("set return_exceptions_now", "return_exceptions", False),
    ("a DeprecationWarning is shown", "DeprecationWarnings", True),
    ("PYTHONHASHSEED=0 turns it off", "PYTHONHASHSEED", True),
    ("pythonhashseed in lower case", "PYTHONHASHSEED", False),
    ("the XML parsers", "xml", True),
])
def test_a_term_is_held_as_a_whole_token(text: str, term: str, found: bool) -> None:
    assert holds(text, term) is found


identifiers = st.from_regex(r"[a-z]{2,8}(?:\.[a-z_]{2,8}|_[a-z]{2,8})", fullmatch=True)
prose = st.lists(st.sampled_from(["the", "council", "meets", "on", "Tuesday", "and", "votes", "a", "plan"]),
                 min_size=1, max_size=12).map(" ".join)


@given(name=identifiers, before=prose, after=prose)
def test_an_identifier_in_a_question_is_found_and_held_where_it_stands(name: str, before: str, after: str) -> None:
    assert name in exact_terms(f"{before} {name} {after}?")
    assert holds(f"{after} {name}. {before}", name)
    assert not holds(f"{after} {name}x {before}", name)


@given(number=st.integers(0, 10_000), minor=st.integers(0, 99), digit=st.integers(0, 9))
def test_a_number_matches_its_versions_and_never_inside_another_number(number: int, minor: int, digit: int) -> None:
    n = str(number)
    assert holds(f"version {n}.x", n) and holds(f"v{n}.{minor}.0 ships", f"v{n}")
    assert not holds(f"build {n}{digit} done", n)
    assume(not f"{digit}.{n}".startswith(n))  # "0.0" is a version of 0
    assert not holds(f"release {digit}.{n} done", n)


@given(prose)
def test_plain_prose_has_no_exact_terms(text: str) -> None:
    assert exact_terms(text) == []


def test_the_ranking_puts_the_most_terms_first_and_keeps_order_on_ties() -> None:
    rows = [{"chunk_id": "a", "text": "Node.js 20.x ships OpenSSL 3.0"},
            {"chunk_id": "b", "text": "nothing here"},
            {"chunk_id": "c", "text": "Node.js version 18.x ships OpenSSL 1.1.1"},
            {"chunk_id": "d", "text": "OpenSSL only", "section_path": ("Node.js",)}]
    ranked = exact_ranking(rows, ["OpenSSL", "Node.js", "18"])
    assert [r["chunk_id"] for r in ranked] == ["c", "a", "d"]
    assert [r["_score"] for r in ranked] == [3.0, 2.0, 2.0]
    assert "_score" not in rows[0]  # copies: the rows themselves are untouched


RELEASES = """# Node.js releases

## Node.js version 16.x

Node.js 16 bundles OpenSSL 1.1.1 and reached its end of life early, in September 2023, because
the OpenSSL release it depends on stopped receiving security fixes.

## Node.js version 18.x

Version 18 ships OpenSSL 3.0 with QUIC support disabled, and a global fetch built on undici.

## Node.js version 20.x

Node.js 20 ships OpenSSL 3.0 as well; its permission model limits file system access.

## Which OpenSSL version does each release use

Every release line documents the OpenSSL version it bundles in its changelog, and Node.js
publishes security releases when OpenSSL does; the version shipped rarely changes mid-line.
"""


@pytest.fixture(scope="module")
def releases(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    root = tmp_path_factory.mktemp("exact")
    (root / "docs").mkdir()
    (root / "docs" / "releases.md").write_text(RELEASES, encoding="utf-8")
    (root / "docs" / "other.md").write_text("# Other\n\nThe OpenSSL project publishes advisories. Node.js users "
                                            "follow them closely.\n", encoding="utf-8")
    engine = Engine(root / "ws", settings=fast_settings(**{"chunking.strategy": "sentence"}),
                    embedder=HashingEmbedder())
    engine.ingest(root / "docs", lens="docs")
    return engine


@pytest.mark.parametrize("mode", ["hybrid", "graph"])
def test_a_version_in_the_question_finds_its_section(releases: Engine, mode: str) -> None:
    question = "Which OpenSSL version does Node.js 18 ship with?"
    top = releases.query(question, mode=mode, k=3).results[0]
    assert "Version 18 ships OpenSSL 3.0" in top.text, top.text
    if mode == "hybrid":
        assert top.scores.get("exact") == 3.0
        # Without the exact list this corpus repeats the issue: the section whose heading
        # echoes the question's words wins, as BM25's second place is dropped by the fusion.
        off = _without_exact(releases).query(question, mode=mode, k=3).results[0]
        assert "Which OpenSSL version does each release use" in off.text


def _without_exact(engine: Engine) -> Engine:
    return Engine(engine.workspace.path, settings=fast_settings(**{"chunking.strategy": "sentence",
                                                                   "retrieval.exact_weight": 0}),
                  embedder=HashingEmbedder())


@pytest.mark.parametrize("question", ["what does the permission model limit", "security fixes and end of life"])
def test_a_question_without_exact_terms_ranks_as_before(releases: Engine, question: str) -> None:
    off = _without_exact(releases)
    assert [c.chunk_id for c in releases.query(question, mode="hybrid", k=5).results] == \
        [c.chunk_id for c in off.query(question, mode="hybrid", k=5).results]
