"""Text that is not UTF-8 (issue 26): UTF-16 without a byte-order mark, a byte-order mark that
lies, legacy code pages; and UTF-8, the common case, read exactly and without the detector."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.errors import BinaryFileError
from ragloom.load import load_file
from ragloom.load.readers import decode_text

ZH = "这是一个关于水泵的中文文档。我们每天检查密封件。\n第二行：压力为 3.5 bar。\n"
RU = "Это документ о насосах. Мы проверяем уплотнения каждый день.\nВторая строка.\n"
JA = "これはポンプについての日本語の文書です。毎日シールを点検します。\n"
FR = "Le café est prêt. Nous vérifions les joints chaque matin à l'usine.\n"
ASCII = "Hello world, plain ASCII notes about pumps and seals.\n"
F = Path("notes.txt")


@pytest.mark.parametrize("text", [ZH, RU, JA], ids=["chinese", "russian", "japanese"])
@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_read(text: str, codec: str) -> None:
    decoded, notes = decode_text(F, text.encode(codec))
    assert decoded == text
    assert notes == (f"read as {codec.upper()} (no byte-order mark)",)


def test_utf16_with_its_byte_order_mark_is_still_believed() -> None:
    assert decode_text(F, b"\xff\xfe" + ZH.encode("utf-16-le")) == (ZH, ())
    assert decode_text(F, b"\xfe\xff" + RU.encode("utf-16-be")) == (RU, ())


@pytest.mark.parametrize("bom", [b"\xff\xfe", b"\xfe\xff"], ids=["le", "be"])
def test_a_byte_order_mark_before_ascii_is_not_trusted(bom: bytes) -> None:
    # Read as UTF-16 this was CJK mojibake ("效汬..."); the text after the mark is plain ASCII.
    decoded, notes = decode_text(F, bom + ASCII.encode())
    assert decoded == ASCII
    codec = "UTF-16-LE" if bom == b"\xff\xfe" else "UTF-16-BE"
    assert len(notes) == 1
    assert notes[0].startswith(f"starts with a {codec} byte-order mark but is not {codec} (")
    assert notes[0].endswith("): the mark is dropped")


def test_a_byte_order_mark_before_latin1_is_read_as_the_real_encoding() -> None:
    decoded, notes = decode_text(F, b"\xff\xfe" + FR.encode("latin-1"))
    assert decoded == FR
    assert notes[-1] == "read as Windows-1252 (not valid UTF-8)"
    assert "byte-order mark but is not UTF-16-LE" in notes[0]


def test_a_byte_order_mark_before_binary_is_refused_with_the_reason() -> None:
    with pytest.raises(BinaryFileError) as info:
        decode_text(F, b"\xff\xfe" + random.Random(5).randbytes(2048))
    message = str(info.value)
    assert message.startswith("notes.txt: binary content where text was expected (starts with a UTF-16-LE "
                              "byte-order mark but is not UTF-16-LE")
    assert message.endswith("; save it as UTF-8")


@pytest.mark.parametrize(("text", "codec", "name"), [
    (RU, "cp1251", "Windows-1251"),
    (JA, "shift_jis", "Shift_JIS (Windows-31J)"),
    (FR, "latin-1", "Windows-1252"),
    ("Zażółć gęślą jaźń. Příliš žluťoučký kůň úpěl ďábelské ódy.\n", "cp1250", "Windows-1250"),
    (ZH, "gb18030", "GB18030"),
    ("Привет, мир", "cp1251", "Windows-1251"),  # short: the detector's guesses tie, the most used one wins
    ("Café naïve", "cp1252", "Windows-1252"),
])
def test_legacy_code_pages_are_detected(text: str, codec: str, name: str) -> None:
    decoded, notes = decode_text(F, text.encode(codec))
    assert decoded == text
    assert notes == (f"read as {name} (not valid UTF-8)",)


@given(st.text(st.characters(exclude_categories=("Cs", "Cc"), include_characters="\t\n\r")), st.booleans())
def test_utf8_round_trips_exactly(text: str, bom: bool) -> None:
    if not bom and text.startswith("\ufeff"):
        text = "x" + text  # a leading U+FEFF in UTF-8 is a byte-order mark, and is read as one
    data = ("\ufeff" if bom else "").encode() + text.encode("utf-8")
    assert decode_text(F, data) == (text, ())


@pytest.mark.parametrize("data", [
    random.Random(3).randbytes(65536),
    random.Random(4).randbytes(777),
    b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8,
    b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + random.Random(6).randbytes(4000),
    bytes(range(256)) * 4,
])
def test_binary_is_still_refused(data: bytes) -> None:
    with pytest.raises(BinaryFileError, match="notes.txt: binary content where text was expected"):
        decode_text(F, data)


def test_utf8_never_imports_the_detector() -> None:
    # UTF-8 is the fast path: charset-normalizer is only imported for bytes that are not UTF-8.
    script = ("import sys; from pathlib import Path; from ragloom.load import load_file; "
              "from ragloom.load.readers import decode_text; "
              "decode_text(Path('a.md'), 'déjà vu — naïve'.encode()); "
              "print('charset_normalizer' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "False", done.stderr[-2000:]


def test_a_cp1251_file_is_ingested_with_a_note(tmp_path: Path) -> None:
    f = tmp_path / "minutes.txt"
    f.write_bytes(("Протокол встречи\n\n" + RU).encode("cp1251"))
    loaded = load_file(f, lens="x")
    assert loaded.document.text.startswith("Протокол встречи")
    assert loaded.notes == ("read as Windows-1251 (not valid UTF-8)",)
