"""One request for a query or an answer, as every caller builds it.

The CLI, the HTTP server, the MCP tools, the web app, the LangChain and LlamaIndex adapters and
the Python API all build a :class:`Query` and hand it to the engine, which checks it once
(:meth:`ragloom.query.service.QueryService.request`). The request's own fields (the text, ``k``,
the mode, lenses, tenant, dates, budget) are kept apart from the mode's own options
(``threshold`` for ``dynamic``, ``hops`` for ``graph``): an option that repeats a field is an
error naming it, whichever way it came (``--option k=3``, ``"options": {"k": 3}``, chat's
``/option k=3``). Like LlamaIndex's ``QueryBundle`` or httpx's ``build_request()`` then ``send()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, ClassVar

from ragloom.checks import shown
from ragloom.errors import InvalidParameterError


@dataclass(frozen=True)
class Query:
    """What a caller asks: the text, the request's fields, and the mode's own ``options``.

    Values are checked by the engine (bounds, known mode and options, known lenses), so that
    every caller gets the same errors; :meth:`build` only sorts keyword arguments into fields
    and options and refuses an option that repeats a field.
    """

    text: str
    #: Results to return (``retrieval.k`` when not given; for an optimised context,
    #: ``context_optimization.candidates`` to choose from).
    k: int | None = None
    mode: str | None = None
    lenses: Sequence[str] | str | None = None
    tenant: str | None = None
    #: A moment of the workspace's history: what had been ingested then, in its versions then.
    as_of: datetime | str | None = None
    #: The documents whose own date lies in this range (both ends included).
    dated_from: date | str | None = None
    dated_to: date | str | None = None
    #: Tokens of optimised context (the query then carries :attr:`QueryResult.context`).
    budget: int | None = None
    organize: str | None = None
    optimize: bool = False
    #: The mode's own options, by name.
    options: Mapping[str, Any] = field(default_factory=dict)

    #: The request's fields by name, besides ``text`` and ``options``.
    FIELDS: ClassVar[tuple[str, ...]] = ("k", "mode", "lenses", "tenant", "as_of", "dated_from", "dated_to",
                                         "budget", "organize", "optimize")
    #: Names an option may not take: the fields, and what an answer's call also names.
    RESERVED: ClassVar[frozenset[str]] = frozenset({*FIELDS, "text", "question", "options", "writer", "on_text"})

    @classmethod
    def build(cls, text: str | Query, /, *, options: Mapping[str, Any] | None = None, **given: Any) -> Query:  # noqa: ANN401
        """A request from keyword arguments, as the Python API takes them: the request's fields
        by name (``k=3``), anything else a mode option (``threshold=0.7``); ``options`` is a
        mapping of mode options (what ``--option`` and a body's ``options`` hold). Given a
        :class:`Query`, the arguments change it (its options are kept, the new ones added).

        An option in ``options`` named like a field is an :class:`InvalidParameterError` naming it
        and the fix."""
        base = text if isinstance(text, Query) else cls(text=text)
        extra = dict(options or {})
        clash = sorted(cls.RESERVED & extra.keys(), key=str)
        if clash:
            first = str(clash[0])
            flag = _CLI_FLAGS.get(first, "--" + first.replace("_", "-"))
            raise InvalidParameterError(
                f"{'options' if len(clash) > 1 else 'option'} {', '.join(shown(name) for name in clash)} "
                f"{'are parameters' if len(clash) > 1 else 'is a parameter'} of the request itself, not "
                f"{'options' if len(clash) > 1 else 'an option'} of the retrieval mode: give {first} as its own "
                f"parameter (the CLI's {flag}, a request body's \"{first}\" field), not with --option or inside "
                "options")
        fields = {name: given.pop(name) for name in cls.FIELDS if name in given}
        if "text" in given or "question" in given:
            raise InvalidParameterError("the query text is given twice (positionally and as text=/question=); "
                                        "give it once")
        return dataclasses.replace(base, **fields, options={**base.options, **given, **extra})

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON carries it: times and dates as ISO 8601 text, lenses a list."""
        def plain(value: Any) -> Any:  # noqa: ANN401 - a field's value
            if isinstance(value, date):  # a datetime is a date too
                return value.isoformat()
            return list(value) if isinstance(value, Sequence) and not isinstance(value, str) else value

        return {"text": self.text, **{name: plain(getattr(self, name)) for name in self.FIELDS},
                "options": dict(self.options)}

    @classmethod
    def from_dict(cls, data: Any) -> Query:  # noqa: ANN401 - decoded JSON
        """The request :meth:`to_dict` wrote (an unknown key is an error, as in :meth:`build`)."""
        if not isinstance(data, Mapping) or not isinstance(data.get("text"), str):
            raise InvalidParameterError(f"a query must be an object with a text, not {shown(data)}")
        given = {name: value for name, value in data.items() if name not in ("text", "options")}
        unknown = sorted(set(given) - set(cls.FIELDS))
        if unknown:
            raise InvalidParameterError(f"a query has no field {shown(unknown[0])}; its fields are "
                                        f"{', '.join(cls.FIELDS)}, and mode options go under options")
        options = data.get("options") or {}
        if not isinstance(options, Mapping):
            raise InvalidParameterError(f"a query's options must be an object of name: value, not {shown(options)}")
        return cls.build(data["text"], options=options, **given)


#: The command line's flag for a field, where it is not ``--`` and the field's name.
_CLI_FLAGS = {"k": "-k", "lenses": "--lens", "optimize": "--show-context", "text": "its first argument",
              "question": "its first argument", "writer": "--model", "options": "--option"}
