from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from ragloom.parse import parse_sections


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
