"""Bounds of a query, for every retrieval mode, through the facade and the command line: a clear
error (a RagloomError; one red line and exit status 2) or a sane result, never a traceback."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from ragloom.cli import app
from ragloom.engine import Engine
from ragloom.errors import InvalidParameterError, RagloomError
from ragloom.retrieve import mode_names
from tests.conftest import MATERIALS, fast_settings

FAST = {"RAGLOOM_EMBEDDING__MODEL": "hashing", "RAGLOOM_EMBEDDING__CACHE": "false"}
MEGABYTE_QUERY = ("offline mode for the catalog " * 40_000)[:1_000_000]

#: name -> (keyword arguments, command-line arguments, the error's text or None for a result)
CASES: dict[str, tuple[dict[str, Any], list[str], str | None]] = {
    "k=0": ({"k": 0}, ["-k", "0"], "k (0) must be at least 1"),
    "k=-3": ({"k": -3}, ["-k", "-3"], "k (-3) must be at least 1"),
    "k=10**9": ({"k": 10**9}, ["-k", str(10**9)], None),
    "empty query": ({"text": ""}, ["--", ""], None),
    "blank query": ({"text": " \n\t "}, ["--", " \n\t "], None),
    "1 MB query": ({"text": MEGABYTE_QUERY}, ["--", MEGABYTE_QUERY], None),
    "budget=0": ({"budget": 0}, ["--budget", "0"], "budget (0) must be larger than context_optimization.reserve_tokens"),
    "budget=10**9": ({"budget": 10**9}, ["--budget", str(10**9)], None),
    "as-of before the first ingest": ({"as_of": "1990-01-01"}, ["--as-of", "1990-01-01"], None),
    "as-of in year 999": ({"as_of": "0999-01-01T00:00:00Z"}, ["--as-of", "0999-01-01T00:00:00Z"], None),
    "as-of in the future": ({"as_of": "2999-01-01T00:00:00Z"}, ["--as-of", "2999-01-01T00:00:00Z"], None),
    "malformed as-of": ({"as_of": "yesterday"}, ["--as-of", "yesterday"], "is not an ISO 8601 time"),
    "impossible date": ({"as_of": "2025-13-45"}, ["--as-of", "2025-13-45"], "is not an ISO 8601 time"),
    "end of the calendar": ({"as_of": "9999-12-31T23:59:59-05:00"}, ["--as-of", "9999-12-31T23:59:59-05:00"],
                            "outside the calendar"),
    "1 MB as-of": ({"as_of": "2" * 1_000_000}, ["--as-of", "2" * 1_000_000], "characters) is not an ISO 8601 time"),
    # A lens the workspace does not have is named in the error (the text never reaches a filter).
    "lens no name can have": ({"lenses": ["it's' OR '1'='1"]}, ["--lens", "it's' OR '1'='1"], "has no lens"),
    "lens with NUL": ({"lenses": ["a\x00b"]}, ["--lens", "a\x00b"], "has no lens 'a\\x00b'"),
    "unknown organisation": ({"organize": "nope"}, ["--organize", "nope"], "unknown organisation strategy 'nope'"),
}


def _expected(case: str, mode: str) -> tuple[dict[str, Any], list[str], str | None]:
    return CASES[case]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Engine]]:
    ws = tmp_path_factory.mktemp("bounds") / "ws"
    engine = Engine(ws, settings=fast_settings())
    for lens in ("engineering", "team-structured"):
        assert engine.ingest(MATERIALS / lens, lens=lens).ok
    yield ws, engine


@pytest.mark.parametrize("mode", mode_names())
@pytest.mark.parametrize("case", list(CASES))
def test_facade(workspace: tuple[Path, Engine], mode: str, case: str) -> None:
    _, engine = workspace
    kwargs, _, error = _expected(case, mode)
    kwargs = dict(kwargs)
    text = kwargs.pop("text", "catalog integration timeline")
    if error is not None:
        with pytest.raises(RagloomError) as info:
            engine.query(text, mode=mode, **kwargs)
        assert error in str(info.value) and "\n" not in str(info.value) and len(str(info.value)) < 400
        return
    result = engine.query(text, mode=mode, **kwargs)
    total = engine.stats()["chunks"]
    assert len(result.results) <= max(total, 60)
    if not text.strip() or case in ("as-of before the first ingest", "as-of in year 999"):
        assert result.results == []
    if case == "budget=10**9":
        assert result.context is not None and result.context.total_tokens <= 10**9
    if case == "as-of in the future":
        assert [r.chunk_id for r in result] == [r.chunk_id for r in engine.query(text, mode=mode)]


@pytest.mark.parametrize("mode", mode_names())
def test_command_line(workspace: tuple[Path, Engine], mode: str) -> None:
    ws, _ = workspace
    runner = CliRunner()
    for case in CASES:
        _, args, error = _expected(case, mode)
        text = [] if args[:1] == ["--"] else ["catalog integration timeline"]
        result = runner.invoke(app, ["query", *text, "--mode", mode, "--json", "--workspace", str(ws), *args], env=FAST)
        assert result.exception is None or isinstance(result.exception, SystemExit), (case, result.exception)
        if error is not None:
            assert result.exit_code == 2, (case, result.output[-500:])
            # one message (rich folds it at the terminal's width: 80 columns here)
            message = " ".join(line.strip() for line in result.stderr.splitlines() if line.strip())
            assert message.startswith("error: ") and message.count("error:") == 1, (case, message)
            assert error in message and len(message) < 400 and not result.stdout.strip(), (case, message)
        else:
            assert result.exit_code == 0, (case, result.output[-500:])
            data = json.loads(result.stdout)
            assert data["mode"] == mode


def test_non_numbers_are_refused_by_the_facade(workspace: tuple[Path, Engine]) -> None:
    _, engine = workspace
    for kwargs in ({"k": "3"}, {"k": 2.5}, {"k": True}, {"budget": "1000"}, {"as_of": 20250101}):
        with pytest.raises(InvalidParameterError):
            engine.query("catalog", **kwargs)
    with pytest.raises(InvalidParameterError, match="query text must be a string"):
        engine.query(None)  # type: ignore[arg-type]
