"""``--judge onnx:<folder>``: an entailment checker exported to ONNX, run by onnxruntime with its ``tokenizer.json``.

The folder holds ``model.onnx`` (or exactly one ``*.onnx``), ``tokenizer.json`` (the fast tokenizer that
``save_pretrained`` writes) and, to read the head, the model's ``config.json`` (``id2label``, and
``max_position_embeddings`` for the window). A ``meta.json`` as the shipped NLI model has (``max_length``,
``calibration``: a Platt scaling of its single logit) is read too, so ``onnx:`` runs that model as any other.
Inputs are fed by name (``input_ids``, ``attention_mask``, ``token_type_ids`` when the graph takes them); the
first output is the head's logits. No torch: the extra ``onnx`` brings onnxruntime and tokenizers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hallumeasure.core.errors import ConfigError
from hallumeasure.judges.checkers.heads import Head, read_head
from hallumeasure.judges.checkers.judge import CheckerJudge, calibration_of

INSTALL_HINT = "pip install 'hallumeasure[onnx]'"
#: The window when neither the config nor meta.json gives one (BERT-style encoders).
DEFAULT_WINDOW = 512


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{path} cannot be read as JSON: {exc}") from None
    return data if isinstance(data, dict) else {}


def _model_file(folder: Path) -> Path:
    if folder.is_file() and folder.suffix == ".onnx":
        return folder
    if not folder.is_dir():
        raise ConfigError(f"onnx:{folder}: no such folder; export the checker to a folder with model.onnx")
    if (folder / "model.onnx").is_file():
        return folder / "model.onnx"
    found = sorted(folder.glob("*.onnx"))
    if len(found) != 1:
        what = "no .onnx file" if not found else f"{len(found)} .onnx files and no model.onnx"
        raise ConfigError(f"onnx:{folder}: {what}; the folder needs model.onnx beside its tokenizer.json")
    return found[0]


class OnnxScorer:
    """An exported classifier: its session, tokenizer, head and window."""

    def __init__(
        self, path: str | Path, *, entailment: int | None = None, window: int | None = None, threads: int | None = None
    ) -> None:
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise ConfigError(f"onnx: needs the onnx extra ({exc.name} is not installed): {INSTALL_HINT}") from None
        model_file = _model_file(Path(path))
        folder = model_file.parent
        if not (folder / "tokenizer.json").is_file():
            raise ConfigError(
                f"onnx:{path}: tokenizer.json is missing in {folder}; save the model's fast tokenizer there "
                "(tokenizer.save_pretrained(folder))"
            )
        self.path = str(path)
        self.config = _read_json(folder / "config.json")
        self.meta = _read_json(folder / "meta.json")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        try:
            self.session = ort.InferenceSession(str(model_file), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own classes for a bad file
            raise ConfigError(f"onnx:{path}: {model_file.name} cannot be loaded: {exc}") from None
        self.inputs = {i.name for i in self.session.get_inputs()}
        if "input_ids" not in self.inputs:
            raise ConfigError(f"onnx:{path}: the graph takes no input_ids (inputs: {sorted(self.inputs)})")
        width = self.session.get_outputs()[0].shape[-1]
        id2label = self.config.get("id2label")
        n_outputs = width if isinstance(width, int) else len(id2label or {}) or 1
        self.head: Head = read_head(id2label, n_outputs, entailment=entailment)
        self.window = int(
            window or self.meta.get("max_length") or self.config.get("max_position_embeddings") or DEFAULT_WINDOW
        )
        if "max_position_embeddings" in self.config and self.config.get("model_type") in ("roberta", "xlm-roberta"):
            self.window = min(self.window, int(self.config["max_position_embeddings"]) - 2)  # RoBERTa's offset
        self.platt = self.meta.get("calibration") if self.head.n_outputs == 1 else None
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(self.window, strategy="only_first")
        self.tokenizer.no_padding()
        self.counter = Tokenizer.from_file(str(folder / "tokenizer.json"))  # counts whole texts: no truncation
        self.counter.no_truncation()
        self.counter.no_padding()

    def count(self, text: str) -> int:
        return len(self.counter.encode(text, add_special_tokens=False).ids)

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch([(p, h) for p, h in pairs])
        width = max(len(e.ids) for e in encodings)
        ids = np.zeros((len(pairs), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        types = np.zeros_like(ids)
        for row, e in enumerate(encodings):
            n = len(e.ids)
            ids[row, :n], mask[row, :n], types[row, :n] = e.ids, 1, e.type_ids
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        out = np.asarray(self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0])
        out = out.reshape(len(pairs), -1).astype(np.float64)
        if self.platt is not None:  # the shipped NLI model's own Platt scaling of its logit
            a, b = self.platt
            out = a * out + b
        return out

    def settings(self) -> dict[str, Any]:
        return {"backend": "onnxruntime", "path": self.path, "window": self.window, **self.head.describe()}


def onnx_checker(
    path: str,
    *,
    threshold: float | None = None,
    unsure_low: float | None = None,
    unsure_high: float | None = None,
    entailment: int | None = None,
    window: int | None = None,
    batch_size: int = 8,
    threads: int | None = None,
) -> CheckerJudge:
    """The judge ``onnx:<path>`` names, with its calibration and options from the spec."""
    calibration = calibration_of(threshold, unsure_low, unsure_high)
    scorer = OnnxScorer(path, entailment=entailment, window=window, threads=threads)
    return CheckerJudge(scorer, name=f"onnx:{path}", calibration=calibration, batch_size=batch_size)
