from __future__ import annotations

from pathlib import Path

import pytest

from ragloom.errors import ConfigError, InvalidParameterError, UnknownNameError
from ragloom.synthesise import PROMPT_NAMES, Prompts, load_prompt, render
from ragloom.synthesise.prompts import placeholders


@pytest.mark.parametrize("name", PROMPT_NAMES)
def test_packaged_prompts_load(name: str) -> None:
    text = load_prompt(name, None)
    assert text.strip()


def test_packaged_prompts_state_the_rules() -> None:
    system = load_prompt("system").lower()
    for rule in ("[n]", "every sentence", "quote exactly", "the sources do not"):
        assert rule in system
    assert {"question", "sources"} <= placeholders(load_prompt("answer"))
    assert {"query", "sources", "lenses", "context", "title"} <= placeholders(load_prompt("report_section"))


def test_workspace_override_wins(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "answer.md").write_text("Mine: {{question}}\n{{sources}}\n", encoding="utf-8")
    assert load_prompt("answer", tmp_path).startswith("Mine:")
    assert load_prompt("report_section", tmp_path) == load_prompt("report_section")  # the rest stay packaged
    prompts = Prompts.load(tmp_path)
    assert prompts.answer.startswith("Mine:") and prompts.system == load_prompt("system")
    (tmp_path / "prompts" / "tone.md").write_text("Be brief.", encoding="utf-8")
    assert load_prompt("tone", tmp_path) == "Be brief."  # a prompt of the user's own


def test_override_without_placeholders_names_the_file(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "answer.md").write_text("Answer: {{question}}", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"answer\.md.*\{\{sources\}\}"):
        load_prompt("answer", tmp_path)


def test_unknown_and_unsafe_names() -> None:
    with pytest.raises(UnknownNameError, match="answer, chunk_context, report_section, system"):
        load_prompt("summary")
    with pytest.raises(InvalidParameterError, match="file stem"):
        load_prompt("../secrets")


def test_render_replaces_known_placeholders_only() -> None:
    template = 'Q: {{ question }} / {{unknown}} / {"json": {"braces": 1}}'
    assert render(template, question="why?") == 'Q: why? / {{unknown}} / {"json": {"braces": 1}}'


def test_the_chunk_context_prompt_shows_document_and_chunk() -> None:
    text = load_prompt("chunk_context")
    assert {"document", "chunk", "title"} <= placeholders(text)
    shown = render(text, title="Guide", document="WHOLE", chunk="PART")
    assert shown.index("WHOLE") < shown.index("PART")  # the document first, then the chunk to place in it
