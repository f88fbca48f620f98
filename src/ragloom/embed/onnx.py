"""The bundled all-MiniLM-L6-v2 (or any BERT-style sentence-transformers folder with mean
pooling) on ONNX Runtime, without PyTorch at run time.

The model is exported once from its folder (``torch.onnx``), its graph fused for inference
(onnxruntime's transformer optimiser) and, for ``int8``, its weights quantised
(onnxruntime's dynamic quantisation); the files are cached outside the workspace, under
``<cache>/onnx/<hash of the weights>/`` (``$RAGLOOM_CACHE_DIR``, else
``$XDG_CACHE_HOME/ragloom``, else ``~/.cache/ragloom``), so every workspace shares them and a
changed model gets a new export. Exporting needs torch (the ``local`` extra); running needs
only onnxruntime and tokenizers.

In fp32 the vectors equal sentence-transformers' to within 1e-5 (``tests/embed``), so the
embedder keeps its name (``st:all-MiniLM-L6-v2``) and a workspace built with either needs no
reindex. Texts are batched by length so that padding costs little, in small batches (about
1,024 word pieces: on two cores, 8,192 ran short sentences 1.6 times slower), and the batches
run on one single-threaded session per core at once (1.3 times the rate of one session using
both cores on 256-piece windows).

It also pools token states over spans of its input (:meth:`OnnxEmbedder.pool`): the sentence
index takes its vectors from the chunk pass that runs anyway (one model call for both).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import Any

import numpy as np

from ragloom.config import DEFAULT_MODEL
from ragloom.embed.windowed import Pieces
from ragloom.errors import EmbeddingError, MissingExtraError
from ragloom.tokens import minilm_folder

#: Word pieces per batch: short texts batch many at a time, long ones few.
TOKENS_PER_BATCH = 1024
_BUNDLED = {DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"}
PRECISIONS = ("fp32", "int8")


def cache_root() -> Path:
    """Where exported models live (shared by every workspace)."""
    explicit = os.environ.get("RAGLOOM_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "ragloom"


def model_folder(model: str) -> Path:
    folder = minilm_folder() if model in _BUNDLED else Path(model)
    if not (folder / "config.json").is_file():
        raise EmbeddingError(f"embedding.model {model!r}: no sentence-transformers folder with a config.json at "
                             f"{folder}; the onnx provider exports a local folder (or the bundled {DEFAULT_MODEL})")
    return folder


def weights_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for name in ("model.safetensors", "pytorch_model.bin", "config.json"):
        path = folder / name
        if path.is_file():
            with path.open("rb") as handle:
                for block in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(block)
    return digest.hexdigest()[:16]


def exported(folder: Path, precision: str, *, cache: Path | None = None) -> Path:
    """The ONNX file for ``folder`` at ``precision``, exported (and cached) on first use."""
    target_dir = (cache or cache_root()) / "onnx" / weights_hash(folder)
    fused = target_dir / "model.onnx"
    target = fused if precision == "fp32" else target_dir / "model-int8.onnx"
    if target.is_file():
        return target
    target_dir.mkdir(parents=True, exist_ok=True)
    with _export_lock(target_dir):
        if not fused.is_file():
            _export(folder, fused)
        if precision == "int8" and not target.is_file():
            _quantize(fused, target)
    return target


@contextlib.contextmanager
def _export_lock(folder: Path) -> Iterator[None]:
    import fcntl

    with (folder / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # two processes exporting at once would race on the file
        yield


def _export(folder: Path, target: Path) -> None:
    try:
        import torch
        from transformers import AutoModel
    except ImportError as exc:
        raise MissingExtraError("torch", "local", "exporting the embedding model to ONNX") from exc
    from ragloom.embed.local import _no_loading_bar

    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    with _no_loading_bar():
        model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()

    class LastHiddenState(torch.nn.Module):
        def __init__(self, inner: Any) -> None:  # noqa: ANN401 - a transformers model
            super().__init__()
            self.inner = inner

        def forward(self, input_ids: Any, attention_mask: Any, token_type_ids: Any) -> Any:  # noqa: ANN401
            return self.inner(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state

    raw = target.with_suffix(".raw.onnx")
    sample = torch.ones((2, 8), dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(LastHiddenState(model), (sample, sample, torch.zeros_like(sample)), str(raw),
                          input_names=names, output_names=["last_hidden_state"], opset_version=17,
                          dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "last_hidden_state"]},
                          dynamo=False)
        from onnxruntime.transformers import optimizer

        fused = optimizer.optimize_model(str(raw), model_type="bert", num_heads=int(config["num_attention_heads"]),
                                         hidden_size=int(config["hidden_size"]), opt_level=1)
    tmp = target.with_suffix(f".tmp{os.getpid()}")
    fused.save_model_to_file(str(tmp))
    tmp.replace(target)
    raw.unlink(missing_ok=True)


def _quantize(source: Path, target: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    tmp = target.with_suffix(f".tmp{os.getpid()}")
    # Per-channel int8 weights: per-tensor scales lost too much (mean cosine to fp32 0.937).
    quantize_dynamic(str(source), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
    tmp.replace(target)


class OnnxEmbedder:
    """Mean-pooled, normalised sentence vectors from an ONNX export of a sentence-transformers
    folder; ``precision`` ``fp32`` (the model's own numbers) or ``int8``."""

    def __init__(self, model: str = DEFAULT_MODEL, *, precision: str = "fp32", threads: int | None = None,
                 cache: Path | None = None) -> None:
        if precision not in PRECISIONS:
            raise EmbeddingError(f"embedding.precision {precision!r}; choose one of: {', '.join(PRECISIONS)}")
        self.model_name = model
        self.precision = precision
        self.name = f"st:{model}" if precision == "fp32" else f"st:{model}:{precision}"
        self.threads = threads or os.cpu_count() or 1
        self._cache = cache
        self._folder = model_folder(model)
        self._sessions: list[Any] = []
        self._tokenizer: Any = None
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        config = json.loads((self._folder / "config.json").read_text(encoding="utf-8"))
        self._dim = int(config["hidden_size"])
        st_config = self._folder / "sentence_bert_config.json"
        seq = json.loads(st_config.read_text(encoding="utf-8")).get("max_seq_length") if st_config.is_file() else None
        self.max_tokens = int(seq or config.get("max_position_embeddings", 512))

    @property
    def dim(self) -> int:
        return self._dim

    def _load(self) -> tuple[list[Any], Any]:  # (one session per worker, tokenizer)
        with self._lock:
            if not self._sessions:
                try:
                    import onnxruntime as ort
                    from tokenizers import Tokenizer
                except ImportError as exc:
                    raise MissingExtraError("onnxruntime", "local", "the ONNX embedder") from exc
                options = ort.SessionOptions()
                options.intra_op_num_threads = 1
                options.inter_op_num_threads = 1
                options.log_severity_level = 3
                # Idle threads sleep rather than spin: on a shared machine spinning threads
                # fight the rest of the pipeline (and other processes) for the same cores.
                options.add_session_config_entry("session.intra_op.allow_spinning", "0")
                path = exported(self._folder, self.precision, cache=self._cache)
                tokenizer = Tokenizer.from_file(str(self._folder / "tokenizer.json"))
                tokenizer.no_truncation()
                tokenizer.no_padding()
                self._tokenizer = tokenizer
                self._sessions = [ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
                                  for _ in range(self.threads)]
                if self.threads > 1:
                    self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="ragloom-onnx")
            return self._sessions, self._tokenizer

    def token_pieces(self, texts: Sequence[str]) -> list[Pieces]:
        """(start, end, word number) of every word piece of each text, by the model's tokenizer."""
        _, tokenizer = self._load()
        return [[(a, b, -1 if w is None else w) for (a, b), w in zip(e.offsets, e.word_ids, strict=True)]
                for e in tokenizer.encode_batch(list(texts), add_special_tokens=False)]

    def _states(self, texts: Sequence[str]) -> Iterator[tuple[np.ndarray, Any, np.ndarray]]:
        """(positions, encodings, token states) per batch, texts grouped by length, the batches
        run by the sessions at once (results in the order they finish)."""
        sessions, tokenizer = self._load()
        encodings = tokenizer.encode_batch(list(texts))  # with [CLS] and [SEP], as the model was trained
        room = self.max_tokens
        lengths = np.array([min(len(e.ids), room) for e in encodings])
        order = np.argsort(lengths, kind="stable")
        batches, lo = [], 0
        while lo < len(order):
            width = int(lengths[order[lo]])
            hi = lo + 1
            while hi < len(order) and int(lengths[order[hi]]) * (hi - lo + 1) <= max(TOKENS_PER_BATCH, width):
                width = int(lengths[order[hi]])
                hi += 1
            batches.append((order[lo:hi], width))
            lo = hi
        free = list(sessions)
        free_lock = threading.Lock()

        def run(batch: np.ndarray, width: int) -> tuple[np.ndarray, Any, np.ndarray]:
            ids = np.zeros((len(batch), width), dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                n = int(lengths[i])
                pieces = encodings[i].ids
                # Cut as sentence-transformers does: the first pieces, then the closing [SEP].
                ids[row, :n] = pieces if len(pieces) <= n else [*pieces[: n - 1], pieces[-1]]
                mask[row, :n] = 1
            with free_lock:
                session = free.pop()
            try:
                states = session.run(None, {"input_ids": ids, "attention_mask": mask,
                                            "token_type_ids": np.zeros_like(ids)})[0]
            except Exception as exc:  # onnxruntime raises its own types for bad input
                raise EmbeddingError(f"the ONNX model failed on a batch of {len(batch)} texts ({exc})") from exc
            finally:
                with free_lock:
                    free.append(session)
            return batch, [encodings[i] for i in batch], states * mask[:, :, None]

        if self._pool is None or len(batches) == 1:
            for batch, width in batches:
                yield run(batch, width)
            return
        futures = [self._pool.submit(run, batch, width) for batch, width in batches]
        for future in as_completed(futures):
            yield future.result()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vectors, _, _ = self.pool(texts, [() for _ in texts])
        return vectors

    def embed_query(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.embed([text])[0]
        return vector

    def pool(self, texts: Sequence[str], spans: Sequence[Sequence[tuple[int, int]]]
             ) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
        """Each text's normalised vector, and for each of its character ``spans`` the sum of the
        token states inside it and their count (callers divide, across windows when they must)."""
        out = np.zeros((len(texts), self._dim), dtype=np.float32)
        sums = [np.zeros((len(s), self._dim), dtype=np.float32) for s in spans]
        counts = [np.zeros(len(s), dtype=np.float32) for s in spans]
        if not texts:
            return out, sums, counts
        for batch, encodings, states in self._states(texts):
            total = states.sum(axis=1)
            tokens = np.array([min(len(e.ids), self.max_tokens) for e in encodings], dtype=np.float32)
            out[batch] = total / tokens[:, None]
            for row, (i, encoding) in enumerate(zip(batch, encodings, strict=True)):
                if not spans[i]:
                    continue
                n = min(len(encoding.ids), self.max_tokens)
                offsets = np.array(encoding.offsets[:n], dtype=np.int64)
                special = np.array(encoding.special_tokens_mask[:n], dtype=bool)
                for j, (start, end) in enumerate(spans[i]):
                    inside = (offsets[:, 0] >= start) & (offsets[:, 1] <= end) & ~special & (offsets[:, 1] > offsets[:, 0])
                    if inside.any():
                        sums[i][j] = states[row, :n][inside].sum(axis=0)
                        counts[i][j] = float(inside.sum())
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return (out / norms).astype(np.float32), sums, counts
