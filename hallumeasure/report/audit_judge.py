"""What an audit knows of its judge's error, and what it can see of the responses' style.

The judge's error (its Youden index J = sensitivity + specificity - 1, ``hallumeasure.stats.judge_error``)
comes from the first of:

1. stated by the user: ``--judge-sensitivity`` and ``--judge-specificity`` (taken as exact);
2. ``calibrate`` labels: ``--judge-calibration FILE``, the JSON of ``hallumeasure calibrate RUN --labels
   FILE --json``; its counts give exact bounds of J (response-level counts for the hallucinated share,
   claim-level for the unsupported rate), at alpha / 2 per side;
3. the judge's published held-out figures (``PUBLISHED``): the lowest J for a pass; a regression keeps the
   labels' own threshold, since the user's data may suit the judge better than the held-out sets did;
4. a scripted judge's labels are its script: exact;
5. otherwise: a keyless judge whose error is not published may have any J in [0, 1] (it passes only on
   unchanged responses); any other judge is assumed error-free, and every output says so.

The style features are measured from the run's own text: words per response, the share of the response's
words found in its source, and its claims.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.sample_features import style
from hallumeasure.registry import is_keyless, is_scripted
from hallumeasure.runs.run import Run
from hallumeasure.stats.judge_error import JudgeError, youden_bounds

#: Published held-out figures: judge -> (lowest J, highest J, where). From balanced accuracy BA (J = 2 BA - 1),
#: the lowest lower and the highest upper 95% bound over the held-out sets.
PUBLISHED: dict[str, tuple[float, float, str]] = {
    "offline": (
        0.074,
        0.608,
        "balanced accuracy 0.537-0.804 over five held-out sets (the 'Judge quality' page of the docs)",
    ),
}


#: The style features measured from a response's text (``style_text_features``).
STYLE_TEXT_COLUMNS = ("style_words", "style_overlap", "response_hash")


def style_text_features(responses: pd.DataFrame) -> pd.DataFrame:
    """words, overlap (share of the response's words in its source) and a hash of the response text, one row per
    row of ``responses``: as stored with the sample where ``responses`` has them (``RunStore.response_columns``),
    else worked out from its ``response`` and ``context`` (``hallumeasure.core.sample_features.style``)."""
    values = np.full((len(responses), len(STYLE_TEXT_COLUMNS)), np.nan)
    stored = np.zeros(len(responses), dtype=bool)
    if "response_hash" in responses.columns:  # never NULL for a sample whose features were stored
        stored = responses["response_hash"].notna().to_numpy()
        values[stored] = responses.loc[stored, list(STYLE_TEXT_COLUMNS)].to_numpy(dtype=float, na_value=np.nan)
    if not stored.all():
        rest = responses[~stored]
        rows = [style(r, c) for r, c in zip(rest["response"].tolist(), rest["context"].tolist(), strict=True)]
        values[~stored] = np.array(rows, dtype=float).reshape(len(rows), len(STYLE_TEXT_COLUMNS))
    return pd.DataFrame(values, index=responses.index, columns=list(STYLE_TEXT_COLUMNS))


def style_columns(run: Run) -> pd.DataFrame:
    """words, overlap (share of the response's words in its source), claims, and a hash of the response text.

    A run read as columns (``Run.load_columns``) has the text features already; others are measured here."""
    r = run.responses
    if all(c in r.columns for c in STYLE_TEXT_COLUMNS):
        features = r[list(STYLE_TEXT_COLUMNS)].reset_index(drop=True)
    else:
        features = style_text_features(r).reset_index(drop=True)
    return pd.DataFrame(
        {
            "style_words": features["style_words"].to_numpy(dtype=float),
            "style_overlap": features["style_overlap"].to_numpy(dtype=float),
            "style_claims": r["n_claims"].astype(float).to_numpy(),
            "response_hash": features["response_hash"].to_numpy(dtype=float),
        }
    )


def _calibrated(path: str, metric: str, alpha: float) -> JudgeError:
    try:
        report = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ConfigError(
            f"--judge-calibration {path}: cannot read it ({exc}); write it with "
            "`hallumeasure calibrate RUN --labels FILE --json > FILE`"
        ) from None
    prefix = "response_" if metric == "hallucinated_share" else ""
    try:
        se, sp = report[f"{prefix}sensitivity"], report[f"{prefix}specificity"]
        low, high = youden_bounds(int(se["k"]), int(se["n"]), int(sp["k"]), int(sp["n"]), alpha)
    except (KeyError, TypeError, ValueError):
        raise ConfigError(f"--judge-calibration {path} is not the JSON of `hallumeasure calibrate --json`") from None
    level = "responses" if prefix else "claims"
    detail = (
        f"calibrate labels ({path}): sensitivity {se['k']}/{se['n']}, specificity {sp['k']}/{sp['n']} of labelled "
        f"{level}"
    )
    return JudgeError(youden_low=low, youden_high=high, source="calibrated", detail=detail)


def judge_error_for(
    judge: str | None,
    metric: str,
    *,
    sensitivity: float | None,
    specificity: float | None,
    calibration: str | None,
    alpha: float,
) -> JudgeError:
    """The judge's error the audit allows for, from the first source that has it (see the module's list)."""
    if (sensitivity is None) != (specificity is None):
        raise ConfigError("give both --judge-sensitivity and --judge-specificity, or neither")
    if sensitivity is not None and specificity is not None:
        return JudgeError.exact(
            sensitivity, specificity, "stated", f"stated: sensitivity {sensitivity:g}, specificity {specificity:g}"
        )
    if calibration:
        return _calibrated(calibration, metric, alpha)
    if judge in PUBLISHED:
        # Held-out sets are not the user's data: their J may be higher here, so a regression keeps the labels'
        # own threshold (J at most 1), and only a pass leans on the published figure (its lowest J).
        low, _, where = PUBLISHED[judge]
        return JudgeError(youden_low=low, youden_high=1.0, source="published", detail=f"published: {where}")
    if judge and is_scripted(judge):
        return JudgeError.error_free_judge("scripted", "a scripted judge: its labels are its script")
    if judge and is_keyless(judge):
        return JudgeError(
            youden_low=0.0,
            youden_high=1.0,
            source="assumed",
            detail=f"the error of the keyless judge {judge} is not published: any J in [0, 1]",
        )
    return JudgeError.error_free_judge(
        "assumed",
        f"the error of judge {judge or '(unknown)'} is not known, so it is assumed error-free; give "
        "--judge-calibration (calibrate labels) or --judge-sensitivity/--judge-specificity for a pass that "
        "allows for it",
    )
