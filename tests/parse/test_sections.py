from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragloom.parse import clean_heading, parse_sections
from ragloom.parse.sections import first_title, merge_sections
from ragloom.types import Section


def paths(text: str) -> list[tuple[str, ...]]:
    return [s.path for s in parse_sections(text)]


def test_nested_headings_give_paths() -> None:
    text = "# Safety\nintro\n## Pre-Dive Checks\ncheck air\n### Gauges\nread them\n## Ascent\nslowly\n# Gear\nfins\n"
    assert paths(text) == [
        ("Safety",),
        ("Safety", "Pre-Dive Checks"),
        ("Safety", "Pre-Dive Checks", "Gauges"),
        ("Safety", "Ascent"),
        ("Gear",),
    ]


def test_document_without_headings_is_one_section() -> None:
    text = "Just some text.\n\nAnd more text."
    (section,) = parse_sections(text)
    assert (section.level, section.path, section.start, section.end) == (0, (), 0, len(text))


def test_text_before_the_first_heading_is_its_own_section() -> None:
    text = "Preamble here.\n\n# Title\nBody."
    sections = parse_sections(text)
    assert [s.path for s in sections] == [(), ("Title",)]
    assert text[sections[0].start : sections[0].end].strip() == "Preamble here."


def test_empty_sections_are_skipped_but_stay_in_paths() -> None:
    text = "# Part\n\n## Empty\n\n### Child\nchild text\n## Blank\n   \n"
    assert paths(text) == [("Part", "Empty", "Child")]


def test_hashes_inside_code_fences_are_not_headings() -> None:
    text = "# Real\n```bash\n# not a heading\necho hi\n```\n~~~~\n## also not\n~~~~\nafter\n"
    sections = parse_sections(text)
    assert [s.path for s in sections] == [("Real",)]
    assert sections[0].end == len(text)


def test_unclosed_fence_runs_to_the_end() -> None:
    assert paths("# A\ntext\n```\n# inside\n") == [("A",)]


def test_setext_headings() -> None:
    text = "Title\n=====\nintro\n\nSub\n---\nbody\n\n- item\n---\nnot a heading: list item above\n"
    sections = parse_sections(text)
    assert [s.path for s in sections] == [("Title",), ("Title", "Sub")]
    assert sections[0].level == 1 and sections[1].level == 2


def test_atx_details() -> None:
    text = "#NoSpace\n    # indented code\n# Closing hashes ##\nx\n## **Bold** [link](http://x)\ny\n####### seven\n"
    # "#NoSpace" and the indented line are text: they form the preamble section.
    assert paths(text) == [(), ("Closing hashes",), ("Closing hashes", "Bold link")]


def test_heading_line_is_part_of_its_section() -> None:
    text = "intro\n# H\nbody\n"
    sections = parse_sections(text)
    assert text[sections[1].start : sections[1].body_start] == "# H\n"


markdownish = st.lists(
    st.one_of(
        st.builds(lambda n, t: "#" * n + " " + t, st.integers(1, 7), st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)),
        st.sampled_from(["```", "~~~", "---", "===", "", "   ", "- item", "text line", "Title"]),
        st.text(max_size=40),
    ),
    max_size=30,
).map("\n".join)


@given(markdownish)
def test_sections_are_ordered_disjoint_and_non_empty(text: str) -> None:
    sections = parse_sections(text)
    previous_end = 0
    for i, s in enumerate(sections):
        assert s.index == i
        assert previous_end <= s.start <= s.body_start <= s.end <= len(text)
        assert text[s.body_start : s.end].strip()
        assert all(part for part in s.path)
        previous_end = s.end


@given(markdownish)
def test_every_non_blank_character_outside_headings_is_in_a_section(text: str) -> None:
    sections = parse_sections(text)
    covered = set()
    for s in sections:
        covered.update(range(s.start, s.end))
    for i, ch in enumerate(text):
        if not ch.isspace() and i not in covered:
            # Only the heading lines of skipped empty sections may be uncovered.
            line_start = text.rfind("\n", 0, i) + 1
            line = text[line_start : text.find("\n", i) if "\n" in text[i:] else len(text)]
            nxt = text[text.find("\n", i) + 1 :] if "\n" in text[i:] else ""
            assert line.lstrip().startswith("#") or set(line.strip()) <= set("=-") or set(nxt.split("\n")[0].strip()) <= set("=-")


def test_headings_keep_identifiers_and_code_spans() -> None:
    # What parsing real documentation showed: underscores and asterisks inside words are text,
    # code spans keep their text, and Sphinx roles and permalinks do not reach the path.
    cases = {
        "my_setting_name": "my_setting_name",
        "__init__ method": "__init__ method",
        "**Bold** and _emphasis_": "Bold and emphasis",
        "`code_span` with *stars*": "code_span with stars",
        "/proc/sys/net/netfilter/nf_conntrack_* Variables:": "/proc/sys/net/netfilter/nf_conntrack_* Variables:",
        ":mod:`venv` --- Creation of virtual environments": "venv --- Creation of virtual environments",
        '[`heapq`](#module-heapq "heapq: Heap queue algorithm (a.k.a. priority queue).") — Heap queue':
            "heapq — Heap queue",
        "**__init__**": "__init__",
        "5 * 3 = 15": "5 * 3 = 15",
        "Closing hashes ##": "Closing hashes",
    }
    for raw, cleaned in cases.items():
        assert clean_heading(raw) == cleaned, raw
    text = "# The `__init__` method\n\n## my_setting_name\nbody\n"
    assert [s.path for s in parse_sections(text)] == [("The __init__ method", "my_setting_name")]


identifier = st.from_regex(r"[a-z]{1,8}(?:[_*][a-z0-9]{1,8}){1,3}", fullmatch=True)


@given(st.lists(identifier, min_size=1, max_size=4))
def test_marks_inside_words_are_never_taken_for_emphasis(words: list[str]) -> None:
    heading = " ".join(words)
    assert clean_heading(heading) == heading
    assert clean_heading(f"`{heading}`") == heading


def test_first_title_is_the_first_h1_even_directly_above_a_subsection() -> None:
    text = ".. _tut-venv:\n\n# Virtual Environments and Packages\n\n## Introduction\nPython applications...\n"
    assert first_title(text) == "Virtual Environments and Packages"
    assert first_title("```\n# not a title\n```\n## Only a subsection\ntext\n") is None


def _sections(text: str) -> list[Section]:
    return parse_sections(text)


def test_small_siblings_merge_up_to_the_limit_and_tiny_sections_join_a_neighbour() -> None:
    text = ("# Guide\n\n## A\nshort a.\n\n## B\nshort b.\n\n## C\n" + "long c. " * 40 + "\n\n"
            "## D\n.. include:: d.rst\n\n### D1\n" + "d one. " * 30 + "\n")
    sections = _sections(text)
    merged = merge_sections(text, sections, limit_chars=200, min_chars=25)
    spans = [(s.path, text[s.start : s.end].split("\n")[0]) for s in merged]
    assert spans[0] == (("Guide",), "## A")  # A and B, siblings: their parent's path
    assert spans[1][0] == ("Guide", "C")  # C alone is past the limit with A and B
    assert spans[2] == (("Guide", "D", "D1"), "## D")  # D (a heading over an include) joins D1
    assert len(merged) == 3
    # A group of short siblings that is itself too short joins the next sibling: still the parent's.
    merged = merge_sections(text, sections, limit_chars=200, min_chars=40)
    assert [s.path for s in merged][0] == ("Guide",) and text[merged[0].start:].startswith("## A")


@given(markdownish, st.integers(0, 400), st.integers(0, 120))
def test_merged_sections_are_exact_contiguous_spans_of_the_same_text(text: str, limit: int, tiny: int) -> None:
    sections = _sections(text)
    merged = merge_sections(text, sections, limit_chars=limit, min_chars=tiny)
    assert len(merged) <= len(sections)
    if not sections:
        assert merged == []
        return
    assert merged[0].start == sections[0].start and merged[-1].end == sections[-1].end
    for a, b in zip(merged, merged[1:], strict=False):
        assert a.end <= b.start  # in order, never overlapping
    for s in merged:
        inside = [x for x in sections if s.start <= x.start and x.end <= s.end]
        assert inside and inside[0].start == s.start and inside[-1].end == s.end  # made of whole sections
        if len(inside) > 1 and all(len(text[x.start : x.end].strip()) >= tiny for x in inside):
            assert s.end - s.start <= limit  # siblings only merge within the limit
    if len(merged) > 1 and tiny:
        assert all(len(text[s.start : s.end].strip()) >= tiny for s in merged)
