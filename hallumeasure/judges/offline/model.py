"""The shipped offline model: gradient-boosted trees stored as JSON and evaluated in pure Python.

Training uses scikit-learn (``scripts/train_offline.py``); the package only needs this file to
predict, so a scikit-learn upgrade can never break a stored model. Raw probabilities pass through
Platt scaling fitted on out-of-fold predictions. Next to the trees the file holds *evidence
rules*: signals that name a definite error (a number or an opposite swapped inside text copied
from the context, ...) with the share of training responses they fire on that are hallucinated.
A claim on which such a rule fires gets at least that probability; the response score is raised by the
original rules only (``RESPONSE_RULES``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hallumeasure.judges.offline.features import response_vector
from hallumeasure.judges.offline.signals import FEATURES

MODEL_FILE = Path(__file__).with_name("model.json")

#: Claim features that, when non-zero, are evidence of a definite error (their measured precision is stored).
EVIDENCE_RULES = (
    "diff_number",
    "diff_antonym",
    "diff_exclusive",
    "edge_exclusive",
    "diff_temporal",
    "diff_name",
    "date_conflict",
    "slot_swap",
    "slot_invented",
    "definite",
)
_RULE_INDEX = {rule: FEATURES.index(rule) for rule in EVIDENCE_RULES}
#: The rules that also raise the response score. The value-slot rules ("definite", "slot_*") raise claim
#: probabilities and decisions only: raising the response score by them lowered the leave-one-dataset-out
#: AUC on CLIFF (0.793 -> 0.784) and HaluEval QA (0.994 -> 0.980), whose faithful answers often carry a
#: value their source does not (measured in a development run of benchmarks/offline_quality.py).
RESPONSE_RULES = tuple(rule for rule in EVIDENCE_RULES if rule not in ("definite", "slot_swap", "slot_invented"))


@dataclass(frozen=True)
class Tree:
    """One regression tree as parallel node arrays; a leaf has ``left == -1``."""

    left: tuple[int, ...]
    right: tuple[int, ...]
    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    value: tuple[float, ...]

    def depth(self) -> int:
        def down(node: int) -> int:
            return 0 if self.left[node] == -1 else 1 + max(down(self.left[node]), down(self.right[node]))

        return down(0)


class BoostedTrees:
    """The trees, packed into flat numpy arrays so one row walks all trees at once, level by level."""

    def __init__(
        self, features: Sequence[str], init: float, trees: Sequence[Tree], a: float = 1.0, b: float = 0.0
    ) -> None:
        self.features = tuple(features)
        self.init, self.a, self.b = init, a, b
        self.trees = tuple(trees)
        # Every node of every tree gets one number; a leaf is its own child on both sides, so a walk that has
        # reached it stays there while deeper trees go on.
        sizes = [len(t.left) for t in trees]
        self._roots = np.cumsum([0, *sizes], dtype=np.int64)[:-1]
        self._feature = np.array([f for t in trees for f in t.feature], dtype=np.int64)
        self._threshold = np.array([v for t in trees for v in t.threshold], dtype=np.float64)
        self._value = np.array([v for t in trees for v in t.value], dtype=np.float64)
        #: Children of node ``k``: ``2k`` the right one, ``2k + 1`` the left one (a step adds "goes left").
        self._children = np.empty(2 * sum(sizes), dtype=np.int64)
        for t, root in zip(trees, self._roots.tolist(), strict=True):
            for k, (left, right) in enumerate(zip(t.left, t.right, strict=True)):
                leaf = left == -1
                self._children[2 * (root + k)] = root + (k if leaf else right)
                self._children[2 * (root + k) + 1] = root + (k if leaf else left)
        self._depth = max((t.depth() for t in trees), default=0)

    def logits(self, rows: Sequence[Sequence[float]]) -> np.ndarray:
        """Raw log-odds of several rows at once (all rows walk all trees together)."""
        x = np.asarray(rows, dtype=np.float64).reshape(len(rows), -1)
        n, width = x.shape
        node = np.tile(self._roots, n)  # row-major: row 0's trees, then row 1's, ...
        row_start = np.repeat(np.arange(n, dtype=np.int64) * width, len(self._roots))
        flat = x.ravel()
        for _ in range(self._depth):
            go_left = flat[row_start + self._feature[node]] <= self._threshold[node]
            node = self._children[2 * node + go_left]
        logits: np.ndarray = self.init + self._value[node].reshape(n, len(self._roots)).sum(axis=1)
        return logits

    def logit(self, row: Sequence[float]) -> float:
        return float(self.logits([row])[0])

    def raw_probability(self, row: Sequence[float]) -> float:
        return _sigmoid(self.logit(row))

    def probability(self, row: Sequence[float]) -> float:
        """Calibrated probability (Platt scaling of the raw log-odds)."""
        return _sigmoid(self.a * self.logit(row) + self.b)

    def probabilities(self, rows: Sequence[Sequence[float]]) -> list[float]:
        return [_sigmoid(self.a * v + self.b) for v in self.logits(rows).tolist()]

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> BoostedTrees:
        return cls(
            features=tuple(data["features"]),
            init=float(data["init"]),
            trees=tuple(Tree(**{k: tuple(v) for k, v in t.items()}) for t in data["trees"]),
            a=float(data["calibration"]["a"]),
            b=float(data["calibration"]["b"]),
        )


def _sigmoid(x: float) -> float:
    if x < -700:
        return 0.0
    return 1.0 / (1.0 + math.exp(-x))


def export_sklearn(model: Any, features: list[str], calibration: tuple[float, float]) -> dict[str, Any]:
    """A JSON-ready dict of a fitted binary ``HistGradientBoostingClassifier`` (leaf values carry the shrinkage)."""
    trees = []
    for (predictor,) in model._predictors:
        nodes = predictor.nodes
        leaf = nodes["is_leaf"].astype(bool)
        trees.append(
            {
                "left": [-1 if is_leaf else int(v) for v, is_leaf in zip(nodes["left"], leaf, strict=True)],
                "right": [-1 if is_leaf else int(v) for v, is_leaf in zip(nodes["right"], leaf, strict=True)],
                "feature": [int(v) for v in nodes["feature_idx"]],
                "threshold": [float(v) for v in nodes["num_threshold"]],
                "value": [float(v) for v in nodes["value"]],
            }
        )
    return {
        "features": features,
        "init": float(np.ravel(model._baseline_prediction)[0]),
        "trees": trees,
        "calibration": {"kind": "platt", "a": calibration[0], "b": calibration[1]},
    }


@dataclass(frozen=True)
class OfflineModel:
    response: BoostedTrees
    #: Evidence rule -> precision on the training sets.
    evidence: Mapping[str, float]
    meta: dict[str, Any]

    def evidence_floor(
        self, vector: Sequence[float], rules: Sequence[str] = EVIDENCE_RULES
    ) -> tuple[float, str | None]:
        """The highest precision among the evidence rules that fire on a claim vector (0 and None when none does)."""
        fired = [(self.evidence.get(rule, 0.0), rule) for rule in rules if vector[_RULE_INDEX[rule]] > 0]
        return max(fired) if fired else (0.0, None)

    def claim_probability(self, vector: Sequence[float]) -> tuple[float, str | None]:
        """P(unsupported) of one claim: the model on the claim alone, raised to any evidence rule's precision."""
        floor, rule = self.evidence_floor(vector)
        p = self.response.probability(response_vector([vector]))
        return (floor, rule) if floor > p else (p, None)

    def judge(self, vectors: Sequence[Sequence[float]]) -> tuple[list[float], float | None]:
        """Claim probabilities and the response score of one response, in one batch through the trees."""
        if not vectors:
            return [], None
        rows = [response_vector([v]) for v in vectors] + [response_vector(vectors)]
        *claim_model, response_model = self.response.probabilities(rows)
        floors = [self.evidence_floor(v)[0] for v in vectors]
        response_floor = max(self.evidence_floor(v, RESPONSE_RULES)[0] for v in vectors)
        return [max(p, f) for p, f in zip(claim_model, floors, strict=True)], max(response_model, response_floor)

    def response_score(self, vectors: Sequence[Sequence[float]]) -> float | None:
        """P(the response holds an unsupported claim), from its claims' vectors; None without claims."""
        if not vectors:
            return None
        floor = max(self.evidence_floor(v, RESPONSE_RULES)[0] for v in vectors)
        return max(self.response.probability(response_vector(vectors)), floor)


@lru_cache(maxsize=4)
def load_model(path: str | None = None) -> OfflineModel:
    """The shipped model (or the one at ``path``); a clear error when it is missing or stale."""
    from hallumeasure.core.errors import ConfigError
    from hallumeasure.judges.offline.features import RESPONSE_FEATURES

    file = Path(path) if path else MODEL_FILE
    if not file.exists():
        raise ConfigError(f"the offline judge's model file {file} is missing; run 'python scripts/train_offline.py'")
    data = json.loads(file.read_text(encoding="utf-8"))
    response = BoostedTrees.from_dict(data["response_model"])
    if response.features != RESPONSE_FEATURES or "evidence_rules" not in data:
        raise ConfigError(
            f"the offline model in {file} was trained on other features than this code computes; "
            "retrain it with 'python scripts/train_offline.py'"
        )
    return OfflineModel(response=response, evidence=data["evidence_rules"], meta=data.get("meta", {}))
