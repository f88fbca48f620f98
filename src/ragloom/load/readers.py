"""Readers: bytes of one file to Markdown text.

Markdown and plain text are decoded here. HTML and DOCX go through Microsoft's markitdown
converters (MIT; HTML via BeautifulSoup and markdownify, DOCX via mammoth, headings kept),
called by format rather than through markitdown's content sniffing, which would turn a
corrupt PDF into "text". PDF goes through pdfminer.six's layout analysis (the library
markitdown itself uses), read here so that font sizes become Markdown headings: markitdown's
PDF output is flat text, and sections are what contextual prefixes are made of.
"""

from __future__ import annotations

import io
import re
import warnings
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ragloom.errors import (
    ArchiveBombError,
    BinaryFileError,
    CorruptFileError,
    EncryptedFileError,
    LoadError,
    MissingExtraError,
    NestingTooDeepError,
    TextTooLargeError,
    UnsupportedFormatError,
)
from ragloom.load.limits import Limits, display_path, mib

#: No bounds at all: what a reader called on its own applies.
NO_LIMITS = Limits(max_file_mb=None, max_text_mb=None, max_unpacked_mb=None, max_nesting=None, max_rows=None)


@dataclass(frozen=True, slots=True)
class Converted:
    markdown: str
    title: str | None = None
    #: What was done to make the file readable ("read as Windows-1252 (not valid UTF-8)").
    notes: tuple[str, ...] = ()
    #: The date the file's own metadata gives (a PDF's creation date), ``YYYY-MM-DD``.
    date: str | None = None


_BOMS = (
    (b"\x00\x00\xfe\xff", "utf-32-be"), (b"\xff\xfe\x00\x00", "utf-32-le"),
    (b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be"),
)
_UTF8_BOM = b"\xef\xbb\xbf"
#: Share of NUL bytes above which a file is binary rather than text with a few stray NULs.
NUL_SHARE = 0.01
#: Share of control characters (other than whitespace) above which text that is not UTF-8 is binary.
CONTROL_SHARE = 0.05
#: Share of unlikely characters (controls, private-use, lone surrogates, noncharacters, U+FFFD,
#: CJK Extension A, Yi) above which a decoding that was guessed, or read from a byte-order
#: mark, is not believed.
RARE_SHARE = 0.1
#: Share of characters made of two printable ASCII bytes above which "UTF-16" is ASCII read in
#: pairs (nearly all of them then; Chinese text has about a fifth, Japanese up to about half
#: (hiragana), Cyrillic and Latin none).
ASCII_PAIR_SHARE = 0.8
#: The same share where the bytes, without their NULs, are also plausible UTF-8.
UTF8_PAIR_SHARE = 0.3
#: Characters of decoded text that the plausibility checks read.
PLAUSIBILITY_SAMPLE = 16384
_UTF8_SEQUENCE = re.compile(rb"[\xc2-\xf4][\x80-\xbf]+")
_REPLACEMENT = "\ufffd".encode()
_TEXT_FIX = "only text files can have this extension"
_ENCODING_FIX = "save it as UTF-8"
#: Encodings charset-normalizer cannot tell apart on short text, most used first (web usage):
#: among equally good guesses the first one here wins.
_POPULAR = ("utf_8", "ascii", "cp1252", "latin_1", "iso8859_15", "cp1251", "cp932", "shift_jis", "gb18030",
            "gbk", "gb2312", "big5", "euc_kr", "cp949", "euc_jp", "cp1250", "iso8859_2", "koi8_r", "cp1253",
            "cp1254", "cp1255", "cp1256", "cp1257", "cp1258", "cp874", "iso8859_5", "mac_roman")
_NAMES = {"cp1250": "Windows-1250", "cp1251": "Windows-1251", "cp1252": "Windows-1252", "cp1253": "Windows-1253",
          "cp1254": "Windows-1254", "cp1255": "Windows-1255", "cp1256": "Windows-1256", "cp1257": "Windows-1257",
          "cp1258": "Windows-1258", "cp932": "Shift_JIS (Windows-31J)", "shift_jis": "Shift_JIS", "latin_1": "ISO-8859-1",
          "koi8_r": "KOI8-R", "mac_roman": "Mac Roman"}


def _encoding_name(codec: str) -> str:
    return _NAMES.get(codec, codec.replace("_", "-").upper())


def decode_text(path: Path, data: bytes) -> tuple[str, tuple[str, ...]]:
    """Text of a file's bytes, and notes on what was done where it was not clean UTF-8.

    Valid UTF-8 is the fast path. A byte-order mark (UTF-16, UTF-32) is believed when what
    follows decodes to plausible text; NUL bytes at one parity are UTF-16 without a mark; a
    few stray NULs are removed; invalid UTF-8 is read with U+FFFD where it is mostly UTF-8;
    anything else is decoded as charset-normalizer guesses. Binary content, and text that no
    encoding turns into plausible characters, raise :class:`BinaryFileError`.
    """
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM):]
    for bom, codec in _BOMS:
        if data.startswith(bom):
            text = data[len(bom):].decode(codec, "replace")
            why = _implausible(text)
            if why is None:
                bad = text.count("\ufffd") - data.count(_REPLACEMENT)
                return text, (f"{bad} bytes that are not valid {codec.upper()} replaced with U+FFFD",) if bad > 0 else ()
            # The bytes of a mark, then something else (ASCII read in pairs comes out as CJK).
            mark = f"starts with a {codec.upper()} byte-order mark but is not {codec.upper()} ({why})"
            try:
                text, notes = _decode_unmarked(path, data[len(bom):])
            except BinaryFileError as exc:
                raise BinaryFileError(path, f"{mark}, and {exc.detail}", fix=_ENCODING_FIX) from exc
            return text, (f"{mark}: the mark is dropped", *notes)
    return _decode_unmarked(path, data)


def _decode_unmarked(path: Path, data: bytes) -> tuple[str, tuple[str, ...]]:
    notes: list[str] = []
    nul = data.count(0)
    if nul:
        # Text that is plausible UTF-8 once its NULs are gone is UTF-8 with stray NULs, unless
        # read as UTF-16 it is clearly not ASCII in pairs (mostly-ASCII UTF-8 read so is CJK).
        try:
            unpaired = _implausible(data.replace(b"\x00", b"").decode("utf-8")) is None
        except UnicodeDecodeError:
            unpaired = False
        utf16 = _utf16_without_bom(data, UTF8_PAIR_SHARE if unpaired else ASCII_PAIR_SHARE)
        if utf16 is not None:
            return data.decode(utf16, "replace"), (f"read as {utf16.upper()} (no byte-order mark)",)
        if nul > len(data) * NUL_SHARE:
            raise BinaryFileError(path, f"{nul} NUL bytes", fix=_TEXT_FIX)
        data = data.replace(b"\x00", b"")
        notes.append(f"removed {nul} NUL byte{'s' if nul > 1 else ''}")
    try:
        return _text_not_binary(path, data.decode("utf-8")), tuple(notes)
    except UnicodeDecodeError:
        pass
    text = data.decode("utf-8", "replace")
    bad = text.count("\ufffd") - data.count(_REPLACEMENT)
    valid = len(_UTF8_SEQUENCE.findall(data)) - data.count(_REPLACEMENT)
    if valid > 0 and bad <= max(2, valid // 10):
        notes.append(f"{bad} invalid UTF-8 byte sequence{'s' if bad > 1 else ''} replaced with U+FFFD")
        return _text_not_binary(path, text), tuple(notes)
    try:
        codec = _guess_encoding(path, data)
        text = _text_not_binary(path, data.decode(codec, "replace"), "not UTF-8 and ")
        why = _implausible(text)
        if why is not None:
            raise BinaryFileError(path, f"not UTF-8, and read as {_encoding_name(codec)}, the likeliest encoding, "
                                        f"it makes no sense ({why})", fix=_ENCODING_FIX)
    except BinaryFileError:
        unmarked = None if nul else _utf16_unmarked_cjk(data)
        if unmarked is None:
            raise
        text, codec = unmarked
        notes.append(f"read as {codec.upper()} (no byte-order mark)")
        return text, tuple(notes)
    notes.append(f"read as {_encoding_name(codec)} (not valid UTF-8)")
    return text, tuple(notes)


def _guess_encoding(path: Path, data: bytes) -> str:
    """The Python codec charset-normalizer finds likeliest for bytes that are not UTF-8;
    among guesses it cannot tell apart (as on short text), the most used encoding."""
    from charset_normalizer import from_bytes  # here: UTF-8, the common case, never pays for the import

    matches = list(from_bytes(data))
    if not matches:
        raise BinaryFileError(path, "not UTF-8, and no known encoding decodes it", fix=_ENCODING_FIX)
    best = matches[0]
    tied = [m for m in matches if m.chaos <= best.chaos + 0.01 and m.coherence >= best.coherence - 0.02]

    def rank(codec: str) -> int:
        return _POPULAR.index(codec) if codec in _POPULAR else len(_POPULAR)

    # Each guess stands for every encoding that decodes the bytes to the same text.
    codecs = [min([m.encoding, *m.could_be_from_charset], key=rank) for m in tied]
    return min(codecs, key=rank)


_CONTROLS = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")


def _text_not_binary(path: Path, text: str, why: str = "") -> str:
    """``text``, unless control characters (other than whitespace) fill its start: binary."""
    sample = text[:65536]
    if len(_CONTROLS.findall(sample)) > len(sample) * CONTROL_SHARE:
        raise BinaryFileError(path, f"{why}mostly control characters", fix=_TEXT_FIX)
    return text


#: Characters that text in a real encoding hardly has: controls other than whitespace (C0, C1),
#: CJK Extension A, Yi, lone surrogates, private use, noncharacters, U+FFFD.
_RARE = re.compile("[\x00-\x08\x0b\x0e-\x1f\x7f-\x9f\u3400-\u4dbf\ua000-\ua4cf\ud800-\udfff"
                   "\ue000-\uf8ff\ufdd0-\ufdef\ufff0-\uffff\U000f0000-\U0010ffff]")
#: Characters whose two bytes are both printable ASCII (the second may be a tab or line end).
_ASCII_PAIR = re.compile("[" + "".join(f"\\u{h:02x}20-\\u{h:02x}7e\\u{h:02x}09\\u{h:02x}0a\\u{h:02x}0d"
                                       for h in range(0x20, 0x7F)) + "]")


def _implausible(text: str, pair_share: float = ASCII_PAIR_SHARE) -> str | None:
    """Why ``text``, decoded from a guessed or declared encoding, is not what the file holds
    (None when it is plausible): too many unlikely characters, or ASCII read in pairs (more
    than ``pair_share`` of the characters)."""
    sample = text[:PLAUSIBILITY_SAMPLE]
    if not sample:
        return None
    rare = len(_RARE.findall(sample))
    if rare > len(sample) * RARE_SHARE:
        return f"{rare * 100 // len(sample)}% of its characters are controls, private-use or rare"
    pairs = len(_ASCII_PAIR.findall(sample))
    if pairs > len(sample) * pair_share:
        return f"{pairs * 100 // len(sample)}% of its characters are two ASCII bytes read as one"
    return None


def _utf16_without_bom(data: bytes, pair_share: float) -> str | None:
    """``utf-16-le`` or ``-be`` when the NUL bytes sit at one parity (the high byte of the ASCII
    characters, spaces and line ends of UTF-16 text, Chinese or Russian too) and the text
    decodes to plausible characters (at most ``pair_share`` of them two ASCII bytes)."""
    if len(data) % 2:
        return None
    sample = data[:65536]
    odd, even = sample[1::2].count(0), sample[0::2].count(0)
    if not odd + even:
        return None
    # Mostly one parity: a CJK character can have a NUL low byte (U+4E00), binary has both.
    codec = "utf-16-le" if odd >= (odd + even) * 0.75 else "utf-16-be" if even >= (odd + even) * 0.75 else None
    if codec is None or _implausible(sample.decode(codec, "replace"), pair_share) is not None:
        return None
    return codec


def _utf16_unmarked_cjk(data: bytes) -> tuple[str, str] | None:
    """(text, codec) of UTF-16 without a mark and without a single ASCII character (so no NUL
    byte to tell it by): a last resort, once no other encoding made sense of the bytes."""
    if len(data) % 2:
        return None
    for codec in ("utf-16-le", "utf-16-be"):
        try:
            text = data.decode(codec)
        except UnicodeDecodeError:
            continue
        if _implausible(text) is None and not _CONTROLS.search(text[:65536]):
            return text, codec
    return None


def read_text(path: Path, data: bytes, limits: Limits = NO_LIMITS) -> Converted:
    text, notes = decode_text(path, data)
    return Converted(text, notes=notes)


def _markitdown(path: Path, data: bytes, converter_name: str, extension: str) -> Converted:
    try:
        from markitdown import StreamInfo, converters
    except ImportError as exc:
        raise MissingExtraError("markitdown", "convert", f"reading {extension} files such as {path}") from exc
    converter = getattr(converters, converter_name)()
    charset = "utf-8" if extension == ".html" else None
    try:
        with warnings.catch_warnings():  # markitdown warns, then falls back to plain text, on deep nesting
            warnings.simplefilter("ignore")
            result = converter.convert(io.BytesIO(data), StreamInfo(extension=extension, charset=charset))
    except ImportError as exc:  # markitdown installed without the extra for this format
        raise MissingExtraError(str(exc.name or "markitdown"), "convert", f"reading {path}") from exc
    except MemoryError:
        raise
    except Exception as exc:  # converters raise whatever their parser raises
        name = type(exc).__name__
        if "Password" in name or "Encrypt" in name or "password" in str(exc).lower():
            raise EncryptedFileError(path, fix="remove the password and ingest again") from exc
        detail = f"{name}: {exc}".strip().rstrip(":")
        raise CorruptFileError(path, detail[:200]) from exc
    return Converted(result.markdown or "", result.title)


def read_html(path: Path, data: bytes, limits: Limits = NO_LIMITS) -> Converted:
    text, notes = decode_text(path, data)
    if limits.max_nesting is not None:
        depth = html_depth(text, limits.max_nesting)
        if depth > limits.max_nesting:
            raise NestingTooDeepError(path, f"more than {limits.max_nesting} elements deep, "
                                            f"above ingest.max_nesting = {limits.max_nesting}",
                                      fix="raise ingest.max_nesting or simplify the HTML")
    content, heading = main_content(text)
    converted = _markitdown(path, content.encode("utf-8"), "HtmlConverter", ".html")
    return Converted(converted.markdown, heading or converted.title, notes)


#: Landmarks that hold a page's chrome rather than its content.
_CHROME_TAGS = ("nav", "aside", "footer", "header", "dialog", "template", "noscript", "form", "button")
_CHROME_ROLES = frozenset({"navigation", "banner", "contentinfo", "search", "complementary", "dialog", "menu",
                           "menubar", "toolbar"})
#: Class and id words of chrome in common site generators (Sphinx, MkDocs, Docusaurus, Read the
#: Docs, GitHub pages): one of these as a whole word of a class or id marks the element.
_CHROME_WORDS = frozenset({"nav", "navbar", "navigation", "menu", "sidebar", "sphinxsidebar", "breadcrumb",
                           "breadcrumbs", "footer", "header", "related", "skip", "toc", "cookie", "cookies", "banner",
                           "shortcuts", "shortcut", "modal", "popup", "search", "pagination", "edit", "feedback"})
_CLASS_WORD = re.compile(r"[A-Za-z]+")
#: What a heading's permalink shows (Sphinx's pilcrow, GitHub's and MkDocs' anchors).
_PERMALINK_TEXT = frozenset({"¶", "#", "§", "🔗", "link", ""})


def main_content(html: str) -> tuple[str, str | None]:
    """The part of a web page that is its content, and the text of its first ``<h1>``.

    Navigation, banners, sidebars, footers, search boxes, dialogs ("Keyboard shortcuts") and
    headings' permalinks are removed, and when the page marks its content (``<main>``, ``role="main"``, a single
    ``<article>``) only that is kept: chrome repeated on every page of a site is not a section
    of any of them. A page with nothing left after that is kept whole.
    """
    from bs4 import BeautifulSoup, Tag

    soup = BeautifulSoup(html, "html.parser")
    root: Tag = soup
    marked = soup.find("main") or soup.find(True, attrs={"role": "main"})
    articles = soup.find_all("article")
    if isinstance(marked, Tag):
        root = marked
    elif len(articles) == 1 and isinstance(articles[0], Tag):
        root = articles[0]

    def is_chrome(tag: Tag) -> bool:
        if tag.name == "a" and str(tag.get("href", "")).startswith("#"):
            return tag.get_text(strip=True) in _PERMALINK_TEXT  # a heading's permalink, not text
        if tag.name in _CHROME_TAGS:
            # A header inside the content (an article's own title block) is content.
            return not (tag.name == "header" and root is not soup)
        if str(tag.get("role", "")).lower() in _CHROME_ROLES or str(tag.get("aria-hidden", "")).lower() == "true":
            return True
        names = " ".join([*tag.get_attribute_list("class"), str(tag.get("id") or "")])
        return any(word.lower() in _CHROME_WORDS for word in _CLASS_WORD.findall(names) if word)

    for tag in [t for t in root.find_all(True) if isinstance(t, Tag) and is_chrome(t)]:
        if not tag.decomposed:
            tag.decompose()
    if not root.get_text(strip=True):
        return html, None
    h1 = root.find("h1")
    heading = " ".join(h1.get_text(" ").split()) if isinstance(h1, Tag) else None
    return str(root), heading or None


#: Elements that never have content, and elements whose end tag may be left out (HTML's rules,
#: simplified): neither deepens a page the way ``<div>`` inside ``<div>`` does.
_VOID = frozenset("area base br col embed hr img input link meta param source track wbr keygen command basefont "
                  "frame isindex".split())
_OPTIONAL_END = frozenset("p li dt dd tr td th option optgroup thead tbody tfoot colgroup rb rt rtc rp".split())
_SKIPPED = re.compile(r"<!--.*?(?:-->|\Z)|<(script|style|textarea|title)\b[^>]*>.*?(?:</\1\s*>|\Z)",
                      re.DOTALL | re.IGNORECASE)
_TAG = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9:-]*+)([^<>]*+)>")


def html_depth(html: str, stop: int) -> int:
    """How deeply the elements of ``html`` nest (counting stops just past ``stop``): a cheap
    scan of the tags, so that a page nested 10,000 deep is refused before a converter recurses
    into it. Comments, scripts and styles are skipped; void elements and ones whose end tag
    may be omitted (``<p>``, ``<li>``) are closed as a browser would close them."""
    stack: list[str] = []
    deepest = 0
    for m in _TAG.finditer(_SKIPPED.sub("", html)):
        closing, name, rest = m.group(1), m.group(2).lower(), m.group(3)
        if closing:
            for i in range(len(stack) - 1, -1, -1):
                if stack[i] == name:
                    del stack[i:]
                    break
            continue
        if name in _VOID or rest.rstrip().endswith("/"):
            continue
        if name in _OPTIONAL_END:
            for i in range(len(stack) - 1, max(-1, len(stack) - 4), -1):
                if stack[i] == name:
                    del stack[i:]
                    break
        stack.append(name)
        if len(stack) > deepest:
            deepest = len(stack)
            if deepest > stop:
                break
    return deepest


def read_pdf(path: Path, data: bytes, limits: Limits = NO_LIMITS) -> Converted:
    if not data.lstrip()[:5] == b"%PDF-":
        raise CorruptFileError(path, "no %PDF- header", fix="a .pdf file must be a PDF")
    try:
        from ragloom.load.pdf import TextLimitExceeded, metadata_date, pdf_to_markdown
    except ImportError as exc:
        raise MissingExtraError("pdfminer.six", "convert", f"reading PDF files such as {path}") from exc
    try:
        markdown, title = pdf_to_markdown(data, max_chars=limits.text_bytes)
    except TextLimitExceeded as exc:
        raise _too_much_text(path, exc.chars, limits, "or more") from exc
    except MemoryError:
        raise
    except Exception as exc:  # pdfminer raises many unrelated types for bad input
        name = type(exc).__name__
        if "Password" in name or "Encrypt" in name:
            raise EncryptedFileError(path, fix="remove the password and ingest again") from exc
        raise CorruptFileError(path, f"{name}: {exc}"[:200].rstrip(": ")) from exc
    return Converted(markdown, title, date=metadata_date(data))


def check_zip(path: Path, data: bytes, limits: Limits) -> set[str]:
    """The names inside a DOCX, after checking that its declared uncompressed sizes stay under
    ``ingest.max_unpacked_mb`` (ZIP readers stop at the declared size, so the declaration binds)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            infos = zf.infolist()
    except (zipfile.BadZipFile, ValueError, EOFError) as exc:
        raise CorruptFileError(path, "not a ZIP container, as a .docx must be") from exc
    limit = limits.unpacked_bytes
    if limit is not None:
        total = sum(i.file_size for i in infos)
        if total > limit:
            largest = max(infos, key=lambda i: i.file_size)
            part = f"{largest.filename}: {mib(largest.file_size)} from {mib(largest.compress_size)}"
            raise ArchiveBombError(
                path, f"its parts declare {mib(total, limits.max_unpacked_mb)} uncompressed ({part}), "
                      f"above ingest.max_unpacked_mb = {limits.max_unpacked_mb:g}",
                fix="refused before unpacking; raise ingest.max_unpacked_mb if the file is genuine")
    return {i.filename for i in infos}


def read_docx(path: Path, data: bytes, limits: Limits = NO_LIMITS) -> Converted:
    names = check_zip(path, data, limits)
    if "EncryptedPackage" in names:
        raise EncryptedFileError(path, fix="remove the password and ingest again")
    if "word/document.xml" not in names:
        raise CorruptFileError(path, "no word/document.xml inside")
    converted = _markitdown(path, data, "DocxConverter", ".docx")
    return Converted(converted.markdown, converted.title or _docx_title(data))


_CORE_TITLE = re.compile(rb"<dc:title>([^<]*)</dc:title>")


def _docx_title(data: bytes) -> str | None:
    """The title in the document's properties (docProps/core.xml), if set."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            core = zf.read("docProps/core.xml")
    except (KeyError, zipfile.BadZipFile):
        return None
    m = _CORE_TITLE.search(core)
    if not m:
        return None
    import html

    return html.unescape(m.group(1).decode("utf-8", "replace")).strip() or None


Reader = Callable[[Path, bytes, Limits], Converted]

#: extension -> (media type, reader)
READERS: dict[str, tuple[str, Reader]] = {
    ".md": ("text/markdown", read_text),
    ".markdown": ("text/markdown", read_text),
    ".mdx": ("text/markdown", read_text),
    ".txt": ("text/plain", read_text),
    ".text": ("text/plain", read_text),
    ".rst": ("text/x-rst", read_text),
    ".html": ("text/html", read_html),
    ".htm": ("text/html", read_html),
    ".pdf": ("application/pdf", read_pdf),
    ".docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", read_docx),
}
#: Formats whose converters are libraries that may run long or recurse deeply: with a time
#: limit they run in a child process (see :mod:`ragloom.load.worker`).
ISOLATED = frozenset({".html", ".htm", ".pdf", ".docx"})

_OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def media_type_of(path: Path) -> str:
    """The media type a file's extension stands for (raises for an unsupported one)."""
    ext = path.suffix.lower()
    if ext not in READERS:
        raise UnsupportedFormatError(
            display_path(path), f"extension {display_path(ext) or '(none)'!r}",
            fix="supported: " + ", ".join(sorted(READERS)))
    return READERS[ext][0]


def convert(path: Path, data: bytes, limits: Limits = NO_LIMITS) -> tuple[str, Converted]:
    """(media type, converted text) of a file's bytes, chosen by its extension, in this process;
    the converted text is checked against ``ingest.max_text_mb``."""
    media_type = media_type_of(path)
    ext = path.suffix.lower()
    shown = Path(display_path(path))  # readers name the file in their messages only
    if ext == ".docx" and data.startswith(_OLE_MAGIC):
        # Password-protected Office files are OLE compound files, not ZIPs.
        raise EncryptedFileError(shown, fix="remove the password and ingest again")
    try:
        converted = READERS[ext][1](shown, data, limits)
    except LoadError:
        raise
    except RecursionError as exc:
        raise NestingTooDeepError(shown, "the converter ran out of stack", fix="simplify the file") from exc
    check_text(shown, converted.markdown, limits)
    return media_type, converted


def check_text(path: Path, text: str, limits: Limits) -> None:
    """Refuse text above ``ingest.max_text_mb`` (measured as UTF-8)."""
    limit = limits.text_bytes
    if limit is None or len(text) <= limit // 4:
        return
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    if size > limit:
        raise _too_much_text(path, size, limits)


def _too_much_text(path: Path, size: int, limits: Limits, more: str = "") -> TextTooLargeError:
    return TextTooLargeError(
        path, f"{mib(size, limits.max_text_mb)}{' ' + more if more else ''} of text, "
              f"above ingest.max_text_mb = {limits.max_text_mb:g}",
        fix="raise ingest.max_text_mb or split the file")
