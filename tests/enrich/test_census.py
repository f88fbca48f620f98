"""The workspace's entity census (issue 26): every mention of a known entity counted, obvious
variants merged, and neither a short name nor a version merged by accident."""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Mapping

from hypothesis import given, settings
from hypothesis import strategies as st

from ragloom.enrich.census import Census, Named, fold, merge_variants, take_census
from ragloom.enrich.entities import EntityExtractor

EXTRACT = EntityExtractor()


def census(texts: Mapping[str, str], extractor: EntityExtractor = EXTRACT) -> Census:
    """What ingest stores for each document, then the census over them all."""
    rows = [{"document_id": doc, "entity_id": m.entity_id, "canonical": m.canonical, "type": m.type, "text": m.text,
             "start_char": m.start, "end_char": m.end, "source": m.source}
            for doc, text in texts.items() for m in extractor(text)]
    return take_census(rows, texts)


def listing(found: Census) -> dict[str, tuple[str, int, int, set[str]]]:
    """name -> (type, mentions, documents, texts written), as ``ragloom entities`` aggregates."""
    table: dict[str, list[object]] = {}
    for m in found.mentions:
        e = found.entities[m.entity_id]
        row = table.setdefault(e.name, [e.type, 0, set(), set()])
        row[1] += 1  # type: ignore[operator]
        row[2].add(m.document_id)  # type: ignore[attr-defined]
        row[3].add(" ".join(m.text.split()))  # type: ignore[attr-defined]
    return {name: (t, n, len(d), w) for name, (t, n, d, w) in table.items()}  # type: ignore[misc,arg-type]


def merged(*entities: Named) -> dict[str, str]:
    """name -> the name it merges into."""
    names = {e.key: e.name for e in entities}
    return {names[k]: names[v] for k, v in merge_variants(entities).items()}


def named(name: str, weight: int, kind: str = "person") -> Named:
    return Named(kind + ":" + name, name, kind, weight)


# -- counting ------------------------------------------------------------------------------------


def test_a_name_known_in_one_document_counts_in_every_document_that_writes_it() -> None:
    texts = {
        "a.md": "# Stack\n\nWe moved the API to Node.js v18 last week, and Node.js has been quick since.\n",
        "b.md": "Node.js\nruns the workers now.\n",  # at a line's start: no evidence for a capital there
        "c.md": "- **Node.js**: the runtime we keep.\n",  # a list item, in bold
        "d.md": "Nothing about it here: see https://example.org/Node.js or `Node.js` in code.\n",
        "e.md": "The NodeJS docs, the nodejs build, and node.js on the command line.\n",  # variants of the name
    }
    rows = listing(census(texts))
    assert rows["Node.js"][:3] == ("product", 6, 4)  # a.md's second (the first is "Node.js v18"), b, c, three in e
    assert {"NodeJS", "nodejs", "node.js"} <= rows["Node.js"][3]
    plain = listing(census({k: v for k, v in texts.items() if k != "a.md"}))
    assert "Node.js" not in plain  # nothing in the other documents makes it an entity by itself


def test_people_named_in_turns_and_lists_count_in_other_documents_too() -> None:
    minutes = ("## Attendance\n\n- Council members: TC, Jane Doe\n\n"
               "TC: Hearing support and no objections, the agenda is approved.\n\n"
               "**Jane Doe**: I think we should publish the summary this week.\n")
    rows = listing(census({"m1.md": minutes, "m2.md": "Later, TC and Jane Doe met.\nJane Doe agreed.\n"}))
    assert rows["TC"][:3] == ("person", 3, 2) and rows["Jane Doe"][:3] == ("person", 4, 2)


def test_a_frequent_person_is_found_and_first_names_join_the_full_name() -> None:
    notes = []
    for i in range(12):
        notes.append(f"# Meeting {i}\n\nAttendees: Mara Bos, Eric Huss, Eric Holk\n\n"
                     f"Mara: we should ship the survey on time, I will check.\n\n"
                     f"Eric: the budget is not final yet, so we wait for it.\n\nMara: agreed, we wait.\n")
    rows = listing(census({f"{i}.md": t for i, t in enumerate(notes)}))
    assert rows["Mara Bos"][:3] == ("person", 36, 12) and "Mara" in rows["Mara Bos"][3]
    assert rows["Eric"][:3] == ("person", 12, 12)  # two people named Eric: the first name stays apart


# -- merging -------------------------------------------------------------------------------------


def test_a_one_letter_typo_of_a_frequent_name_merges_into_it() -> None:
    texts = {f"{i}.md": f"Attendees: Robin Ginn, Sam Lee\n\nRobin Ginn said the plan holds ({i}).\n" for i in range(5)}
    texts["typo.md"] = "Attendees: Robin Gin, Sam Lee\n\nThe notes were sent by Robin Gin.\n"
    rows = listing(census(texts))
    assert "Robin Gin" not in rows
    assert rows["Robin Ginn"][:3] == ("person", 12, 6) and "Robin Gin" in rows["Robin Ginn"][3]
    assert merged(named("Eric Huss", 310), named("Erik Huss", 1)) == {"Eric Huss": "Eric Huss", "Erik Huss": "Eric Huss"}


def test_case_accent_and_punctuation_variants_merge_under_the_established_form() -> None:
    got = merged(named("node.js", 30, "product"), named("Node.js", 10, "product"), named("NodeJS", 2, "product"))
    assert set(got.values()) == {"Node.js"}  # the written form with a capital and a dot, not the most written
    assert merged(named("Jakub Beranek", 8), named("Jakub Beránek", 15))["Jakub Beranek"] == "Jakub Beránek"
    assert merged(named("Tomas Sedovic", 29), named("Tomáš Šedovič", 4))["Tomáš Šedovič"] == "Tomas Sedovic"
    assert merged(named("Rust", 300, "product"), named("RUST", 2, "other"))["RUST"] == "Rust"  # other agrees with any type
    assert fold("Node.js") == fold("NODEJS") == "nodejs"


def test_distinct_names_do_not_merge() -> None:
    pairs = [
        (named("Tom", 100), named("Tim", 1)),  # short names
        (named("Rust", 100, "product"), named("Bust", 1, "product")),
        (named("Tom Li", 100), named("Tim Li", 1)),  # the word that differs is short
        (named("Rust 1.85", 100, "product"), named("Rust 1.87", 1, "product")),  # versions
        (named("Eric Huss", 10), named("Eric Hass", 5)),  # the rarer is not rare enough
        (named("Robin Ginn", 100), named("Robin Ginn", 1, "organisation")),  # types differ
        (named("Robin Ginn", 100), named("Robin Ginn Lab", 1)),  # words differ in number
    ]
    for a, b in pairs:
        assert merged(a, b) == {a.name: a.name, b.name: b.name}, (a, b)
    # "Mary" is a name of its own in the workspace, so "Mary Smith" is no typo of "Mark Smith"
    assert merged(named("Mark Smith", 100), named("Mary Smith", 1), named("Mary Jones", 5))["Mary Smith"] == "Mary Smith"
    assert merged(named("Mark Smith", 100), named("Mary Smith", 1))["Mary Smith"] == "Mark Smith"
    # a first name that starts two people's names names neither
    assert merged(named("Eric", 50), named("Eric Huss", 30), named("Eric Holk", 30))["Eric"] == "Eric"


def test_a_plain_word_written_mostly_in_lower_case_is_not_counted_everywhere() -> None:
    texts = {"a.md": "The Kernel 6.1 release notes.\n",  # "Kernel" is known here as the product's short form
             "b.md": "Kernel\nthreads run in the kernel; the kernel schedules them, kernel memory too.\n"}
    rows = listing(census(texts))
    assert rows.get("Kernel", ("", 0, 0, set()))[2] <= 1  # "Kernel" at b.md's line start is not the product


# -- properties ----------------------------------------------------------------------------------

# (not "Robin" alone: a document that names Robin Ginn makes "Robin" a mention of him too; nor
# "Robin Ginns": one letter away, the census takes it for a typo of him)
words = st.sampled_from(["Robin Ginn", "Ginn", "Robinson", "Ginny", "robin ginn", "the", "met", "x", "Rob",
                         "Robin Ginnsworth", "ARobin Ginn", "Robin Ginn's", "Robin-Ginn"])
separators = st.sampled_from([" ", ", ", ". ", "\n", " (", ") ", "; ", "\n- ", " and "])


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.tuples(words, separators), max_size=25), max_size=4))
def test_every_whole_word_occurrence_of_a_known_name_counts(documents: list[list[tuple[str, str]]]) -> None:
    texts = {"seed.md": "Attendees: Robin Ginn, Sam Lee\n"}
    texts.update({f"{i}.md": "".join(a + b for a, b in parts) for i, parts in enumerate(documents)})
    rows = listing(census(texts))
    whole = re.compile(r"(?<![\w@/#.-])Robin[ \t]*\n?[ \t]*Ginn(?![\w-])")
    expected = 0
    for text in texts.values():
        # what a document's own extraction gives another name keeps it ("Robin Ginn Ginn (…)")
        others = [(m.start, m.end) for m in EXTRACT(text) if m.canonical != "Robin Ginn"]
        expected += sum(not any(a < m.end() and m.start() < b for a, b in others) for m in whole.finditer(text))
    assert rows["Robin Ginn"][1] == expected


variant_names = st.sampled_from(["Robin Ginn", "Robin Gin", "robin ginn", "Robin Ginm", "Robin Ginnn", "Rob Ginn",
                                 "Jane Doe", "Jane Do", "Jane", "Robin", "Mara", "Mara Bos", "Mara Boss", "Node.js",
                                 "NodeJS", "node.js", "Tim", "Tom"])
variant_entities = st.lists(st.tuples(variant_names, st.sampled_from(["person", "organisation", "other"]),
                                      st.integers(0, 60)), max_size=14, unique_by=lambda e: (e[0], e[1]))


@settings(max_examples=300, deadline=None)
@given(variant_entities, st.randoms(use_true_random=False))
def test_merging_does_not_depend_on_order_and_merging_again_changes_nothing(entities, rng: random.Random) -> None:
    items = [Named(f"{kind}:{name}", name, kind, weight) for name, kind, weight in entities]
    once = merge_variants(items)
    shuffled = list(items)
    rng.shuffle(shuffled)
    assert merge_variants(shuffled) == once
    by_key = {e.key: e for e in items}
    weights = Counter[str]()
    for key, into in once.items():
        weights[into] += by_key[key].weight
    kept = [Named(k, by_key[k].name, by_key[k].type, weights[k]) for k in set(once.values())]
    assert merge_variants(kept) == {e.key: e.key for e in kept}
    for key, into in once.items():  # a merge never joins types that disagree
        assert by_key[key].type in (by_key[into].type, "other") or by_key[into].type == "other"


def test_a_short_form_that_names_something_else_in_the_workspace_is_that_thing() -> None:
    texts = {"a.md": "The Rust Foundation funds the Rust Foundation grants. Rust is what they fund.\n",
             "b.md": "We build with Rust 1.85 every day.\n",  # the product Rust, known with its version
             "c.md": "Rust here, Rust there: Rust everywhere.\n"}
    found = census(texts)
    a = [found.entities[m.entity_id].name for m in found.mentions if m.document_id == "a.md" and m.text == "Rust"]
    assert a == ["Rust"]  # a.md alone made it the Foundation's short form
    rows = listing(found)
    assert rows["Rust"][:3] == ("product", 4, 2) and rows["Rust Foundation"][1] == 2
