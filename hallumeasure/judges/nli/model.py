"""The entailment model at inference: int8 ONNX weights run by onnxruntime, text cut by tokenizers.

No torch. The weights, the tokenizer and the calibration ship inside the package (``weights/``)
with the optional extra ``hallumeasure[nli]``, which brings onnxruntime and tokenizers.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from hallumeasure.core.errors import ConfigError

INSTALL_HINT = "pip install 'hallumeasure[nli]'"
MODEL_FILE = "model.onnx"
TOKENIZER_FILE = "tokenizer.json"
META_FILE = "meta.json"


def weights_dir() -> Path:
    return Path(str(resources.files("hallumeasure.judges.nli") / "weights"))


def available() -> bool:
    """True when the extra's libraries and the shipped weights are all present."""
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError:
        return False
    return (weights_dir() / MODEL_FILE).is_file()


def _require(folder: Path) -> None:
    try:
        import onnxruntime  # noqa: F401
        import tokenizers  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"the NLI judge needs the nli extra ({exc.name} is not installed): {INSTALL_HINT}") from None
    missing = [name for name in (MODEL_FILE, TOKENIZER_FILE, META_FILE) if not (folder / name).is_file()]
    if missing:
        raise ConfigError(
            f"the NLI model files are missing ({', '.join(missing)} in {folder}): reinstall hallumeasure "
            "(the weights ship inside the package), or train with scripts/train_nli.py and export with "
            "scripts/export_nli.py, or use --judge offline"
        )


class NliModel:
    """P(the premise entails the hypothesis) for batches of (premise, hypothesis) pairs.

    The probabilities are Platt-calibrated on NLI pairs kept out of training, to equal class
    weights (so 0.5 is the balanced decision point). By default each pair runs alone
    (``batch_size=1``): dynamic int8 quantisation scales activations per batch, so in a batch a
    pair's score would move with its batch-mates and padding (by up to 0.04 measured), and a
    measurement must not depend on its neighbours; on 2 CPU cores batching gained about 10%.
    With ``batch_size > 1`` pairs are sorted by length (less padding). Results come back in the
    order given.
    """

    def __init__(self, folder: str | Path | None = None, *, threads: int | None = None, batch_size: int = 1) -> None:
        folder = Path(folder) if folder is not None else weights_dir()
        _require(folder)
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
        self.max_length = int(self.meta.get("max_length", 256))
        self.batch_size = batch_size
        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER_FILE))
        self.tokenizer.enable_truncation(self.max_length, strategy="only_first")
        self.tokenizer.no_padding()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(2, os.cpu_count() or 1)
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(folder / MODEL_FILE), options, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.a, self.b = self.meta.get("calibration", [1.0, 0.0])

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """The raw entailment logit of each pair."""
        if not pairs:
            return np.zeros(0, dtype=np.float32)
        encodings = self.tokenizer.encode_batch([(p, h) for p, h in pairs])
        order = sorted(range(len(pairs)), key=lambda i: len(encodings[i].ids))
        out = np.zeros(len(pairs), dtype=np.float32)
        for start in range(0, len(order), self.batch_size):
            part = order[start : start + self.batch_size]
            width = max(len(encodings[i].ids) for i in part)
            ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros((len(part), width), dtype=np.int64)
            types = np.zeros((len(part), width), dtype=np.int64)
            for row, i in enumerate(part):
                e = encodings[i]
                n = len(e.ids)
                ids[row, :n] = e.ids
                mask[row, :n] = 1
                types[row, :n] = e.type_ids
            feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            result = self.session.run(None, {k: v for k, v in feed.items() if k in self.inputs})[0]
            out[part] = np.asarray(result, dtype=np.float32).reshape(len(part), -1)[:, 0]
        return out

    def entailment(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        """Calibrated P(entailment) of each (premise, hypothesis) pair."""
        z = self.a * self.logits(pairs) + self.b
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float32)

    def settings(self) -> dict[str, Any]:
        return {k: self.meta.get(k) for k in ("sha256", "base", "training_pool", "examples_seen", "max_length")}


@lru_cache(maxsize=2)
def load_nli(folder: str | None = None) -> NliModel:
    """The shipped model, loaded once per process."""
    return NliModel(folder)


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))
