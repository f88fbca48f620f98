"""The Ingest page's uploads: the stored names (properties over any name a browser may send),
storing a batch, and taking back what the ingest refused."""

from __future__ import annotations

import os
import tempfile
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragloom.ingest.uploads import ASIDE, MAX_NAME_BYTES, store_uploads, upload_names

FOLDER = Path("/srv/ws/uploads/engineering")
#: Names a browser (or a hand-made request) may send that once broke the page or escaped the folder.
HOSTILE = ["..", ".", "", " ", "a/..", "../../etc/passwd", "..\\..\\boot.ini", "/", "\\", "a/", ".env", "x\x00.md",
           "a\nb.md", "dir/.hidden", "notes.md", "Notes.md", "NOTES.MD", "notes (2).md", "e\u0301.md", "\u00e9.md",
           "a\ud800b.md", "é" * 200 + ".md", "x" * 250 + ".md", "x" * 255, "report." + "y" * 260, "C:\\Users\\me\\a.md"]
names = st.lists(st.one_of(st.sampled_from(HOSTILE), st.text(max_size=40),
                           st.text(alphabet="ab./\\ \x00", max_size=8)), max_size=12)


def plain(name: str) -> bool:
    """A name that stays in the folder it is joined to, whatever the file system."""
    return (bool(name) and name not in (".", "..") and not name.startswith(".") and "/" not in name
            and "\\" not in name and not any(unicodedata.category(c) == "Cc" for c in name)
            and len(name.encode("utf-8")) <= MAX_NAME_BYTES
            and os.path.dirname(os.path.normpath(os.path.join(FOLDER, name))) == str(FOLDER)
            and (FOLDER / name).parent == FOLDER and Path(name).name == name)


@given(names)
def test_every_stored_name_is_a_plain_file_name_in_the_folder(sent: list[str]) -> None:
    result = upload_names(sent)
    assert [r.sent for r in result] == sent
    for r in result:
        assert bool(r.name) != bool(r.refused)  # stored, or refused with a reason
        if r.name:
            assert plain(r.name), r
        else:
            assert "rename the file" in r.refused


@given(names)
def test_distinct_uploads_never_share_a_path_even_where_case_is_ignored(sent: list[str]) -> None:
    stored = [r.name for r in upload_names(sent) if r.name]
    keys = [unicodedata.normalize("NFC", n).casefold() for n in stored]
    assert len(set(keys)) == len(keys) == len({FOLDER / n for n in stored})


@given(names)
def test_the_same_batch_gets_the_same_names_and_a_first_name_keeps_its_spelling(sent: list[str]) -> None:
    first = upload_names(sent)
    assert upload_names(sent) == first  # uploading the batch again updates the same documents
    seen: set[str] = set()
    for r in first:
        base = r.sent.replace("\\", "/").rsplit("/", 1)[-1]
        key = unicodedata.normalize("NFC", base).casefold()
        if r.name and key not in seen:
            assert r.name == base and not r.renamed
        if r.name:
            seen.add(key)


def test_hostile_names_are_refused_naming_the_file() -> None:
    refused = {r.sent: r.refused for r in upload_names(["..", ".", "", ".env", "x\x00.md", "a\ud800b.md",
                                                        "é" * 200 + ".md", "dir/"])}
    assert refused[".."] == '"..": not a file name; rename the file and upload it again'
    assert refused["."].startswith('".": not a file name')
    assert refused[""].startswith('"": no file name')
    assert refused[".env"].startswith("\".env\": a hidden file (its name starts with '.')")
    assert refused["x\x00.md"].startswith('"x\\x00.md": a control character in the name')
    assert refused["a\ud800b.md"].startswith('"a\\ud800b.md": a name that is not valid UTF-8')
    assert "a name of 403 bytes, longer than the 255" in refused["é" * 200 + ".md"]
    assert refused["dir/"].startswith('"dir/": no file name')


def test_folders_are_dropped_and_same_names_numbered_like_a_second_download() -> None:
    result = upload_names(["team-a/notes.md", "team-b/notes.md", "NOTES.md", "notes (2).md", "C:\\x\\plan.docx",
                           "x" * 252 + ".md", "x" * 252 + ".md"])
    assert [r.name for r in result] == ["notes.md", "notes (3).md", "NOTES (4).md", "notes (2).md", "plan.docx",
                                        "x" * 252 + ".md", "x" * 248 + " (2).md"]
    assert [r.renamed for r in result] == [False, True, True, False, False, False, True]


def test_a_batch_is_stored_and_what_the_ingest_refused_is_taken_back(tmp_path: Path) -> None:
    folder = tmp_path / "uploads" / "eng"
    folder.mkdir(parents=True)
    (folder / "kept.md").write_bytes(b"earlier kept")
    (folder / "plan.md").write_bytes(b"earlier plan")
    (folder / "same.md").write_bytes(b"same bytes")
    outside = tmp_path / "outside.md"
    outside.write_bytes(b"not mine")
    os.symlink(outside, folder / "link.md")
    stored = store_uploads(folder, [("kept.md", b"new kept"), ("plan.md", b"bomb"), ("same.md", b"same bytes"),
                                    ("link.md", b"through the link?"), ("fresh.md", b"broken")])
    assert [p.name for p in stored.paths] == ["kept.md", "plan.md", "same.md", "link.md", "fresh.md"]
    assert (folder / "kept.md").read_bytes() == b"new kept" and (folder / "plan.md").read_bytes() == b"bomb"
    assert outside.read_bytes() == b"not mine" and not (folder / "link.md").is_symlink()  # never written through
    assert set(stored.aside) == {folder / "kept.md", folder / "plan.md"}  # the same bytes need no copy
    assert not [p for p in folder.iterdir() if p.name.endswith(".part")]

    removed = stored.settle([str(folder / "plan.md"), str(folder / "fresh.md"), "<optimising the tables>"])
    assert removed == [folder / "plan.md", folder / "fresh.md"]
    assert (folder / "plan.md").read_bytes() == b"earlier plan"  # the earlier upload is back
    assert not (folder / "fresh.md").exists()
    assert (folder / "kept.md").read_bytes() == b"new kept"
    assert sorted(p.name for p in folder.iterdir()) == ["kept.md", "link.md", "plan.md", "same.md"]  # no .replaced


def test_an_ingest_that_stopped_keeps_only_what_landed(tmp_path: Path) -> None:
    folder = tmp_path / "eng"
    folder.mkdir()
    (folder / "a.md").write_bytes(b"earlier a")
    stored = store_uploads(folder, [("a.md", b"new a"), ("b.md", b"new b")])
    assert (folder / ASIDE).is_dir()
    stored.keep_only([str(folder / "b.md")])
    assert (folder / "a.md").read_bytes() == b"earlier a" and (folder / "b.md").read_bytes() == b"new b"
    assert sorted(p.name for p in folder.iterdir()) == ["a.md", "b.md"]
    store_uploads(folder, [("c.md", b"c")]).settle(None)
    assert not (folder / "c.md").exists()


def test_a_batch_that_cannot_be_written_leaves_nothing_behind(tmp_path: Path) -> None:
    folder = tmp_path / "eng"
    folder.mkdir()
    (folder / "a.md").write_bytes(b"earlier a")
    (folder / "dir.md").mkdir()  # not a file: writing over it fails
    with pytest.raises(OSError):
        store_uploads(folder, [("a.md", b"new a"), ("dir.md", b"x")])
    assert (folder / "a.md").read_bytes() == b"earlier a"
    assert sorted(p.name for p in folder.iterdir()) == ["a.md", "dir.md"]
    with pytest.raises(ValueError, match="not a plain file name"):
        store_uploads(folder, [("../escape.md", b"x")])
    assert not (tmp_path / "escape.md").exists()


@given(names)
def test_storing_any_batch_writes_only_inside_the_folder(sent: list[str]) -> None:
    with tempfile.TemporaryDirectory() as top:
        folder = Path(top) / "uploads" / "lens"
        planned = [r.name for r in upload_names(sent) if r.name]
        stored = store_uploads(folder, [(n, n.encode("utf-8")) for n in planned])
        everything = sorted(str(p.relative_to(top)) for p in Path(top).rglob("*"))
        assert everything == sorted(["uploads", "uploads/lens", *(f"uploads/lens/{n}" for n in planned)])
        assert all(p.read_bytes() == p.name.encode("utf-8") for p in stored.paths)
