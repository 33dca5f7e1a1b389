"""A portable gradient-boosted tree model: stored as JSON, evaluated in pure Python.

Training uses scikit-learn (``scripts/train_offline.py``); the package only needs this file
to predict, so a scikit-learn upgrade can never break a stored model. Probabilities pass
through an isotonic calibration map fitted on out-of-fold predictions.
"""

from __future__ import annotations

import bisect
import json
import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

MODEL_FILE = Path(__file__).with_name("model.json")


@dataclass(frozen=True)
class Tree:
    left: tuple[int, ...]
    right: tuple[int, ...]
    feature: tuple[int, ...]
    threshold: tuple[float, ...]
    value: tuple[float, ...]

    def predict(self, row: list[float]) -> float:
        node = 0
        left, right, feature, threshold = self.left, self.right, self.feature, self.threshold
        while left[node] != -1:
            node = left[node] if row[feature[node]] <= threshold[node] else right[node]
        return self.value[node]


@dataclass(frozen=True)
class Calibration:
    """Piecewise-linear isotonic map from raw probability to calibrated probability."""

    x: tuple[float, ...]
    y: tuple[float, ...]

    def __call__(self, p: float) -> float:
        if not self.x:
            return p
        if p <= self.x[0]:
            return self.y[0]
        if p >= self.x[-1]:
            return self.y[-1]
        i = bisect.bisect_right(self.x, p)
        x0, x1, y0, y1 = self.x[i - 1], self.x[i], self.y[i - 1], self.y[i]
        return y0 if x1 == x0 else y0 + (y1 - y0) * (p - x0) / (x1 - x0)


@dataclass(frozen=True)
class BoostedTrees:
    features: tuple[str, ...]
    init: float
    learning_rate: float
    trees: tuple[Tree, ...]
    calibration: Calibration

    def raw_probability(self, row: list[float]) -> float:
        score = self.init + self.learning_rate * sum(tree.predict(row) for tree in self.trees)
        return 1.0 / (1.0 + math.exp(-score))

    def probability(self, row: list[float]) -> float:
        return min(1.0, max(0.0, self.calibration(self.raw_probability(row))))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BoostedTrees":
        return cls(
            features=tuple(data["features"]),
            init=float(data["init"]),
            learning_rate=float(data["learning_rate"]),
            trees=tuple(Tree(**{k: tuple(v) for k, v in t.items()}) for t in data["trees"]),
            calibration=Calibration(tuple(data["calibration"]["x"]), tuple(data["calibration"]["y"])),
        )


def export_sklearn(model: Any, features: list[str], calibration: tuple[list[float], list[float]]) -> dict[str, Any]:
    """A JSON-ready dict of a fitted binary ``HistGradientBoostingClassifier``."""
    trees = []
    for (predictor,) in model._predictors:  # noqa: SLF001 - the fitted trees; checked against predict_proba
        nodes = predictor.nodes
        leaf = nodes["is_leaf"].astype(bool)
        trees.append({
            "left": [-1 if is_leaf else int(v) for v, is_leaf in zip(nodes["left"], leaf)],
            "right": [-1 if is_leaf else int(v) for v, is_leaf in zip(nodes["right"], leaf)],
            "feature": [int(v) for v in nodes["feature_idx"]],
            "threshold": [float(v) for v in nodes["num_threshold"]],
            "value": [float(v) for v in nodes["value"]],
        })
    return {
        "features": features,
        "init": float(np.ravel(model._baseline_prediction)[0]),  # noqa: SLF001
        "learning_rate": 1.0,  # leaf values already carry the shrinkage
        "trees": trees,
        "calibration": {"x": [float(v) for v in calibration[0]], "y": [float(v) for v in calibration[1]]},
    }


@dataclass(frozen=True)
class OfflineModel:
    response: BoostedTrees
    meta: dict[str, Any]


@lru_cache(maxsize=1)
def load_model(path: str | None = None) -> OfflineModel:
    """The shipped model (or the one at ``path``)."""
    file = Path(path) if path else MODEL_FILE
    if not file.exists():
        from hallumeasure.errors import ConfigError

        raise ConfigError(f"the offline judge's model file {file} is missing; run 'python scripts/train_offline.py'")
    data = json.loads(file.read_text(encoding="utf-8"))
    return OfflineModel(
        response=BoostedTrees.from_dict(data["response_model"]),
        meta=data.get("meta", {}),
    )
