"""``--judge hf:<path or hub id>``: a sequence-classification checker through ``transformers`` (and torch).

MiniCheck's RoBERTa, DeBERTa and Flan-T5 checkers, an MNLI cross-encoder, or HHEM (which brings its own
code: ``?trust_remote_code=true``, never implied). The head is read from the config's ``id2label``
(heads.py); the window is the smaller of the tokenizer's ``model_max_length`` and the config's position
limit. A checkpoint without a trained classification head (a bare encoder, or one whose head weights are
missing from the files) is refused, naming the weights that are missing, rather than run with random ones.
hallumeasure downloads nothing itself; a hub id is read from the local Hugging Face cache or fetched by
``transformers`` as it always does (``HF_HUB_OFFLINE=1`` forbids it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from hallumeasure.core.errors import ConfigError
from hallumeasure.judges.checkers.heads import Head, read_head
from hallumeasure.judges.checkers.judge import CheckerJudge, calibration_of

INSTALL_HINT = "pip install 'hallumeasure[hf]'"
#: A tokenizer's "no limit" sentinel is huge; below this it is a real window.
_NO_LIMIT = 1_000_000
DEFAULT_WINDOW = 512


def _window(tokenizer: Any, config: Any, given: int | None) -> int:
    if given:
        return int(given)
    limits = [int(tokenizer.model_max_length)] if int(tokenizer.model_max_length) < _NO_LIMIT else []
    positions = config.to_dict().get("max_position_embeddings")  # absent on T5 (relative positions)
    if isinstance(positions, int) and positions > 0:
        limits.append(positions - 2 if config.model_type in ("roberta", "xlm-roberta") else positions)
    return min(limits) if limits else DEFAULT_WINDOW


class HfScorer:
    """A ``transformers`` sequence classifier: its tokenizer, head and window, run without gradients."""

    def __init__(
        self,
        path: str,
        *,
        entailment: int | None = None,
        window: int | None = None,
        trust_remote_code: bool = False,
        device: str = "cpu",
    ) -> None:
        try:
            import torch
            import transformers
        except ImportError as exc:
            raise ConfigError(f"hf: needs the hf extra ({exc.name} is not installed): {INSTALL_HINT}") from None
        self.torch = torch
        self.path = path
        self.device = device
        try:
            config = transformers.AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
            model, info = transformers.AutoModelForSequenceClassification.from_pretrained(
                path, trust_remote_code=trust_remote_code, output_loading_info=True
            )
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"hf:{path} cannot be loaded as a sequence classifier: {_first_line(exc)}") from None
        missing = [k for k in info.get("missing_keys", ()) if _is_head(k)]
        if missing:
            raise ConfigError(
                f"hf:{path} has no trained classification head: the weights {', '.join(sorted(missing)[:4])} are "
                "missing from its files, so its outputs would be random; use a checkpoint fine-tuned for "
                "sequence classification (entailment / NLI), not a bare encoder"
            )
        self.model = model.to(device).eval()
        self.config = config
        self.head: Head = read_head(config.id2label, int(config.num_labels), entailment=entailment)
        self.window = _window(self.tokenizer, config, window)

    def count(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def logits(self, pairs: Sequence[tuple[str, str]]) -> np.ndarray:
        batch = self.tokenizer(
            [p for p, _ in pairs],
            [h for _, h in pairs],
            truncation="only_first",
            max_length=self.window,
            padding=True,
            return_tensors="pt",
        ).to(self.device)
        with self.torch.no_grad():
            out = self.model(**batch).logits
        return np.asarray(out.float().cpu().numpy(), dtype=np.float64)

    def settings(self) -> dict[str, Any]:
        return {
            "backend": "transformers",
            "path": self.path,
            "model_type": self.config.model_type,
            "window": self.window,
            **self.head.describe(),
        }


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _is_head(key: str) -> bool:
    return key.split(".")[0] in ("classifier", "classification_head", "score", "pooler") or ".classifier" in key


def hf_checker(
    path: str,
    *,
    threshold: float | None = None,
    unsure_low: float | None = None,
    unsure_high: float | None = None,
    entailment: int | None = None,
    window: int | None = None,
    batch_size: int = 8,
    trust_remote_code: bool = False,
    device: str = "cpu",
) -> CheckerJudge:
    """The judge ``hf:<path>`` names; ``trust_remote_code`` only when the spec says ``?trust_remote_code=true``."""
    calibration = calibration_of(threshold, unsure_low, unsure_high)
    scorer = HfScorer(path, entailment=entailment, window=window, trust_remote_code=trust_remote_code, device=device)
    return CheckerJudge(scorer, name=f"hf:{path}", calibration=calibration, batch_size=batch_size)
