"""Which output of a classification head means "entailed", read from the model's own ``id2label``.

Three kinds of head are understood: one logit (a sigmoid score of support, as HHEM and the shipped NLI model
give), two labels (entailed or not, as MiniCheck's checkers), and the three MNLI labels (entailment,
neutral, contradiction), which alone can tell a contradicted claim from an absent one. A head whose labels
say nothing (``LABEL_0``, ``LABEL_1``) is read by the binary convention (index 1 is "supported", as
MiniCheck and most binary classifiers write it) only when it has two labels; otherwise the user names the
entailment index with ``?entailment=<index>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from hallumeasure.core.errors import ConfigError

ENTAILED = frozenset(
    {"entailment", "entailed", "entails", "entail", "supported", "support", "consistent", "factual", "faithful"}
)
CONTRADICTED = frozenset({"contradiction", "contradicted", "contradicts", "contradict", "refuted", "refutes"})
_GENERIC = re.compile(r"^label_?\d+$")


def _norm(name: str) -> str:
    return name.strip().lower().replace(" ", "_").replace("-", "_")


@dataclass(frozen=True)
class Head:
    """The outputs of a classification head that matter: entailment, and contradiction when it has one."""

    n_outputs: int
    entailment: int
    contradiction: int | None = None
    #: How the indices were found: "config" (id2label names), "convention" (binary LABEL_0/1), "option".
    source: str = "config"

    @property
    def three_way(self) -> bool:
        """Whether the head tells contradicted from absent (an MNLI head)."""
        return self.contradiction is not None

    def probabilities(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """P(entailed) per row, and P(contradicted) per row for a three-way head (else None)."""
        logits = np.asarray(logits, dtype=np.float64).reshape(len(logits), -1)
        if logits.shape[1] != self.n_outputs:
            raise ConfigError(f"the model gave {logits.shape[1]} outputs per pair; its config says {self.n_outputs}")
        if self.n_outputs == 1:
            return 1.0 / (1.0 + np.exp(-logits[:, 0])), None
        shifted = np.exp(logits - logits.max(axis=1, keepdims=True))
        p = shifted / shifted.sum(axis=1, keepdims=True)
        return p[:, self.entailment], None if self.contradiction is None else p[:, self.contradiction]

    def describe(self) -> dict[str, object]:
        return {
            "outputs": self.n_outputs,
            "entailment_index": self.entailment,
            "contradiction_index": self.contradiction,
            "labels_from": self.source,
        }


def read_head(id2label: Mapping[int | str, str] | None, n_outputs: int, *, entailment: int | None = None) -> Head:
    """The head of a model with ``n_outputs`` outputs and labels ``id2label`` (``entailment`` overrides)."""
    labels = {int(k): _norm(v) for k, v in (id2label or {}).items()}
    if n_outputs < 1:
        raise ConfigError("the model has no classification output (0 labels): it is not an entailment classifier")
    contradiction = next((i for i, name in labels.items() if name in CONTRADICTED), None)
    if n_outputs == 1:
        return Head(1, 0, None, "config" if labels else "convention")
    if entailment is not None:
        if not 0 <= entailment < n_outputs:
            raise ConfigError(f"entailment={entailment} is not an output of a head with {n_outputs} outputs")
        return Head(n_outputs, entailment, contradiction if n_outputs >= 3 else None, "option")
    found = [i for i, name in labels.items() if name in ENTAILED]
    if len(found) == 1:
        return Head(n_outputs, found[0], contradiction if n_outputs >= 3 else None, "config")
    if n_outputs == 2 and all(_GENERIC.match(name) for name in labels.values()):
        return Head(2, 1, None, "convention")
    names = ", ".join(f"{i}={labels[i]}" for i in sorted(labels)) or "none"
    raise ConfigError(
        f"cannot tell which of the model's {n_outputs} outputs means entailment from its id2label ({names}); "
        "name it in the spec with ?entailment=<index>"
    )
