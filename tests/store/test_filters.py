from __future__ import annotations

from datetime import UTC, datetime, timedelta

import lancedb
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import InvalidParameterError
from ragloom.store.filters import scope, sql_in, sql_str, sql_time

values = st.text(st.characters(blacklist_characters="\x00", blacklist_categories=("Cs",)), max_size=30)


@pytest.fixture(scope="module")
def table():
    db = lancedb.connect("memory://")
    names = ["plain", "it's", "a' OR '1'='1", "x\\", "'; DROP TABLE t; --", "über", "", '"quoted"', "%", "_"]
    schema = pa.schema([("tenant_id", pa.string()), ("lens", pa.string()), ("vector", pa.list_(pa.float32(), 2))])
    rows = [{"tenant_id": n, "lens": n, "vector": np.ones(2, dtype=np.float32)} for n in names]
    return db.create_table("t", data=pa.Table.from_pylist(rows, schema=schema)), names


@given(value=values)
def test_no_string_escapes_its_literal(table, value: str) -> None:
    t, names = table
    rows = t.search().where(f"lens = {sql_str(value)}").limit(None).to_arrow()["lens"].to_pylist()
    assert rows == [n for n in names if n == value]


def test_known_nasty_values_match_exactly(table) -> None:
    t, names = table
    for name in names:
        got = t.search().where(f"tenant_id = {sql_str(name)}").limit(None).to_arrow()["tenant_id"].to_pylist()
        assert got == [name]
    got = t.search().where(sql_in("lens", ["it's", "%"])).limit(None).to_arrow()["lens"].to_pylist()
    assert sorted(got) == ["%", "it's"]


def test_nul_and_non_strings_are_refused() -> None:
    with pytest.raises(InvalidParameterError):
        sql_str("a\x00b")
    with pytest.raises(InvalidParameterError):
        sql_str(3)  # type: ignore[arg-type]


def test_scope_current_and_as_of() -> None:
    assert "superseded_at IS NULL" in scope("t")
    moment = datetime(2026, 3, 1, tzinfo=UTC)
    clause = scope("t", lenses=["a"], as_of=moment)
    assert "as_of <= timestamp '2026-03-01T00:00:00.000000'" in clause and "lens IN ('a')" in clause
    assert sql_time(datetime(2026, 3, 1, 1, 0, tzinfo=UTC) + timedelta()) == "timestamp '2026-03-01T01:00:00.000000'"
    assert sql_in("x", []) == "FALSE"
