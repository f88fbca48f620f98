"""The request object: fields and mode options kept apart, a clash named, every caller alike."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, date, datetime
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import InvalidParameterError
from ragloom.query import Query

option_names = st.from_regex(r"[a-z][a-z_]{0,11}", fullmatch=True).filter(lambda n: n not in Query.RESERVED)
values = st.one_of(st.integers(-5, 50), st.floats(-1, 1, allow_nan=False), st.text(max_size=5), st.booleans())
field_values: dict[str, Any] = {"k": 3, "mode": "graph", "lenses": ["a", "b"], "tenant": "acme", "as_of": "2026-01-01",
                                "dated_from": "2025-01-01", "dated_to": "2025-12-31", "budget": 900,
                                "organize": "lens", "optimize": True}


def test_the_fields_are_the_dataclass_fields() -> None:
    names = [f.name for f in dataclasses.fields(Query)]
    assert names == ["text", *Query.FIELDS, "options"]


@given(st.dictionaries(st.sampled_from(Query.FIELDS), st.just(None)).map(
    lambda d: {name: field_values[name] for name in d}), st.dictionaries(option_names, values, max_size=4))
def test_build_sorts_keywords_into_fields_and_options(fields: dict[str, Any], options: dict[str, Any]) -> None:
    query = Query.build("what ships?", **fields, **options)
    assert query.text == "what ships?"
    for name in Query.FIELDS:
        assert getattr(query, name) == fields.get(name, getattr(Query("x"), name))
    assert dict(query.options) == options
    # The same options as a mapping (what --option and a body's options hold) make the same request.
    assert Query.build("what ships?", **fields, options=options) == query


@given(st.sampled_from(sorted(Query.RESERVED)), st.dictionaries(option_names, values, max_size=3))
def test_an_option_named_like_a_field_is_an_error_naming_it(name: str, others: dict[str, Any]) -> None:
    with pytest.raises(InvalidParameterError, match=rf"'{name}' is a parameter of the request itself.*not with --option"):
        Query.build("q", options={**others, name: 3})


def test_building_on_a_query_keeps_its_options_and_changes_what_is_given() -> None:
    base = Query.build("q", k=2, threshold=0.7)
    again = Query.build(base, mode="dynamic", max_expand=3)
    assert (again.k, again.mode, dict(again.options)) == (2, "dynamic", {"threshold": 0.7, "max_expand": 3})
    assert base.mode is None  # frozen: the first request is unchanged


def test_the_text_given_twice_is_an_error() -> None:
    with pytest.raises(InvalidParameterError, match="given twice"):
        Query.build("q", text="other")


def test_the_http_bodies_carry_the_requests_fields() -> None:
    # The bodies declare the fields again for the OpenAPI document (with the server's bounds):
    # they must name the same ones, so that an HTTP request can say all that a Query says.
    pytest.importorskip("fastapi")
    from ragloom.config import Settings
    from ragloom.server import bodies

    body = bodies(Settings())
    assert set(body.query.model_fields) == {"text", *Query.FIELDS, "options"}
    # An answer always optimises its context, organised by the writer's needs.
    assert set(body.ask.model_fields) == {"question", *Query.FIELDS, "options", "model", "strongest"} - {
        "organize", "optimize"}


@given(st.dictionaries(st.sampled_from(Query.FIELDS), st.just(None)).map(
    lambda d: {name: field_values[name] for name in d}), st.dictionaries(option_names, values, max_size=4),
    st.text(max_size=30))
def test_a_request_crosses_json_unchanged(fields: dict[str, Any], options: dict[str, Any], text: str) -> None:
    # What a running server receives from the command line (ragloom.attach) is the request itself.
    query = Query.build(text, **fields, options=options)
    assert Query.from_dict(json.loads(json.dumps(query.to_dict()))) == query


def test_a_request_with_times_as_values_crosses_as_iso_text() -> None:
    query = Query.build("q", as_of=datetime(2026, 1, 2, 3, 4, tzinfo=UTC), dated_from=date(2025, 1, 1),
                        lenses=("a",))
    data = json.loads(json.dumps(query.to_dict()))
    assert (data["as_of"], data["dated_from"], data["lenses"]) == ("2026-01-02T03:04:00+00:00", "2025-01-01", ["a"])


@pytest.mark.parametrize(("data", "message"), [
    ({"k": 3}, "must be an object with a text"),
    ("what ships?", "must be an object with a text"),
    ({"text": "q", "question": "q"}, "has no field 'question'"),
    ({"text": "q", "options": [1]}, "options must be an object"),
    ({"text": "q", "options": {"k": 3}}, "'k' is a parameter of the request itself"),
])
def test_a_request_that_is_not_one_is_refused_by_name(data: Any, message: str) -> None:  # noqa: ANN401
    with pytest.raises(InvalidParameterError, match=message):
        Query.from_dict(data)
