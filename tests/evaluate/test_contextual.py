"""The contextual suite's split into a tuning and a report half, and its ``split`` option."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.embed import HashingEmbedder
from ragloom.errors import InvalidParameterError
from ragloom.evaluate import run_suite, suite_options
from ragloom.evaluate.contextual import SPLIT_SEED, parse_split, query_half, repository, split_files
from ragloom.evaluate.datasets import CodeDocument, CodeQuery, load_contextual

from ..conftest import shared_data


def _doc(uuid: str, path: str) -> CodeDocument:
    return CodeDocument(uuid, uuid, path, "text", ((0, 4),))


def test_the_dataset_splits_into_two_halves_of_every_repository() -> None:
    data = load_contextual(shared_data())
    halves = split_files(data.documents)
    assert set(halves) == {d.uuid for d in data.documents}
    assert Counter(halves.values()) == {"tune": 45, "report": 45}
    per_repo = Counter((repository(d.path), halves[d.uuid]) for d in data.documents)
    assert {n for n in per_repo.values()} == {5}  # nine repositories of ten files: five on each side
    # Every query's golden chunks lie in one file, so in one half; the halves ask 125 and 123.
    of_query = [query_half(q, halves) for q in data.queries]
    assert None not in of_query
    assert Counter(of_query) == {"tune": 125, "report": 123}


def test_the_split_is_fixed_by_its_seed_and_ignores_input_order() -> None:
    docs = list(load_contextual(shared_data()).documents)
    first = split_files(docs)
    assert split_files(list(reversed(docs))) == first
    assert split_files(docs, seed=SPLIT_SEED) == first
    assert split_files(docs, seed=SPLIT_SEED + 1) != first


@given(st.dictionaries(st.sampled_from(["a/x", "b/y", "c/z", "d/w"]), st.integers(1, 9), min_size=1))
def test_halves_differ_by_one_file_at_most(files_per_repo: dict[str, int]) -> None:
    docs = [_doc(f"{repo}-{i}", f"{repo}/src/f{i}.py") for repo, n in files_per_repo.items() for i in range(n)]
    halves = split_files(docs)
    totals = Counter(halves.values())
    assert abs(totals["tune"] - totals["report"]) <= 1
    for repo, n in files_per_repo.items():
        tune = sum(1 for d in docs if repository(d.path) == repo and halves[d.uuid] == "tune")
        assert tune in (n // 2, n - n // 2)


def test_a_query_with_golden_chunks_in_both_halves_belongs_to_neither() -> None:
    halves = {"u1": "tune", "u2": "report"}
    assert query_half(CodeQuery("q", (("u1", 0), ("u1", 3))), halves) == "tune"
    assert query_half(CodeQuery("q", (("u1", 0), ("u2", 1))), halves) is None


def test_split_option_names_and_errors() -> None:
    assert parse_split("all, tune") == ("tune", "all")  # the table's order, whatever the order given
    assert parse_split("report") == ("report",)
    with pytest.raises(InvalidParameterError, match="use one or more of tune, report, all"):
        parse_split("held-out")
    with pytest.raises(InvalidParameterError, match="use one or more"):
        parse_split(" , ")


def test_the_suite_takes_split_and_refuses_other_options(tmp_path: Path) -> None:
    assert suite_options("contextual") == ("split",)
    with pytest.raises(InvalidParameterError, match="unknown option 'halves' for the contextual suite; its options: "
                                                    "split"):
        run_suite("contextual", data=shared_data(), out=tmp_path, options={"halves": "tune"})
    with pytest.raises(InvalidParameterError, match="unknown option .split. for the ab suite; its options: "):
        run_suite("ab", data=shared_data(), out=tmp_path, options={"split": "tune"})


def test_a_tuning_run_asks_only_the_tuning_half(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result, _ = run_suite("contextual", data=shared_data(), out=tmp_path, limit=12, embedder=HashingEmbedder(),
                          options={"split": "tune"})
    assert [c for c in result.columns if c.startswith("Pass@") and "several" not in c] == [
        "Pass@5 (tuning half)", "Pass@10 (tuning half)", "Pass@20 (tuning half)"]
    asked = result.details["split"]["queries"]
    assert asked and set(asked) == {"tune"}
    assert all(len(scores["10"]) == len(asked) for name, scores in result.details.items() if name != "split")
    # A slice keeps the whole dataset's split: its files are on the side they are on in full.
    full = split_files(load_contextual(shared_data()).documents)
    paths = {d.path: full[d.uuid] for d in load_contextual(shared_data()).documents}
    assert all(paths[p] == "tune" for p in result.details["split"]["files"]["tune"])


def test_the_default_run_shows_the_report_half_and_the_whole(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    result, _ = run_suite("contextual", data=shared_data(), out=tmp_path, limit=12, embedder=HashingEmbedder())
    halves = [c.split("(")[1].rstrip(")") for c in result.columns if c.startswith("Pass@5 (")]
    assert halves == ["report half", "all"]
    assert set(result.details["split"]["queries"]) == {"tune", "report"}  # every query asked, for "all"


def test_the_command_line_passes_suite_options(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from ragloom.cli import app

    runner = CliRunner()
    data = str(shared_data())
    result = runner.invoke(app, ["eval", "contextual", "--data", data, "--out", str(tmp_path), "--option", "split"])
    assert result.exit_code != 0 and "--option 'split': write name=value" in result.output
    result = runner.invoke(app, ["eval", "contextual", "--data", data, "--out", str(tmp_path), "--option", "seed=3"])
    assert result.exit_code != 0 and "unknown option 'seed' for the contextual suite; its options: split" in result.output
    result = runner.invoke(app, ["eval", "contextual", "--data", data, "--out", str(tmp_path), "--option",
                                 "split=held-out"])
    assert result.exit_code != 0 and "use one or more of tune, report, all" in result.output
