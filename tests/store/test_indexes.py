"""The ANN index policy: built once a table is large enough, of the configured kind, and built
again when the configured kind changes (IVF_HNSW_SQ was the default until issue 31)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from ragloom.store.indexes import AnnSettings, ensure_ann, same_kind, vector_index


@pytest.fixture
def table(tmp_path: Path) -> Any:  # noqa: ANN401 - a LanceDB table
    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(600, 16)).astype(np.float32)
    data = pa.table({"chunk_id": [f"c{i}" for i in range(600)], "tenant_id": ["default"] * 600,
                     "lens": ["a", "b", "c"] * 200,
                     "vector": pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), 16)})
    return lancedb.connect(tmp_path / "db").create_table("chunks", data)


@pytest.mark.parametrize(("built", "named", "same"), [("IvfHnswSq", "IVF_HNSW_SQ", True), ("IvfSq", "IVF_SQ", True),
                                                      ("IvfSq", "IVF_HNSW_SQ", False), ("IvfPq", "IVF_SQ", False)])
def test_kinds_are_compared_by_name(built: str, named: str, same: bool) -> None:
    assert same_kind(built, named) is same


def test_an_index_of_another_kind_is_built_again(table: Any) -> None:  # noqa: ANN401
    assert not ensure_ann(table, AnnSettings(min_rows=1000, index="IVF_SQ"))  # too small: none
    assert vector_index(table) is None
    assert ensure_ann(table, AnnSettings(min_rows=500, index="IVF_PQ"))
    assert same_kind(vector_index(table).index_type, "IVF_PQ")
    assert not ensure_ann(table, AnnSettings(min_rows=500, index="IVF_PQ"))  # the same kind: kept
    assert ensure_ann(table, AnnSettings(min_rows=500, index="IVF_SQ"))  # another kind: built again
    assert same_kind(vector_index(table).index_type, "IVF_SQ")
    assert {ix.columns[0] for ix in table.list_indices()} == {"vector", "tenant_id", "lens"}
