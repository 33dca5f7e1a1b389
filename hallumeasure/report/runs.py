"""Runs as the report layer sees them: loaded, checked for comparability, cut into response tables.

A run is ``hallumeasure.runs.run.Run``, the one read model of a stored run; nothing here reads the store.

A *response table* has one row per sample of a run (measured or not) with the numbers the
statistics need: rate, hallucinated flag, error rows, label and subtype counts. Rows of
samples that have no result yet count as error rows, so an unfinished run cannot look clean.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Policy
from hallumeasure.core.types import RunManifest
from hallumeasure.runs.run import Run
from hallumeasure.stats.groups import LABELS, SUBTYPES

NO_MODEL = "(no model)"


def load_runs(runs: Sequence[Run | str | Path], read: Callable[..., Run] = Run.load) -> list[Run]:
    """Runs for a report of several: each path loaded once by ``read`` (``Run.load``; called with the path and
    ``name=``), a ``Run`` given used as it is; two runs with the same directory name get their parent's name
    added."""
    paths = [r.path if isinstance(r, Run) else Path(r) for r in runs]
    if not paths:
        raise ConfigError("give at least one run directory")
    if len({p.resolve() for p in paths}) != len(paths):
        raise ConfigError("the same run directory was given twice")
    names = [p.name for p in paths]
    names = [f"{p.parent.name}/{p.name}" if names.count(p.name) > 1 else p.name for p in paths]
    return [
        (run if run.name == name else run.renamed(name)) if isinstance(run, Run) else read(path, name=name)
        for run, name, path in zip(runs, names, paths, strict=True)
    ]


# --- what a run is ------------------------------------------------------------------------------


class RunInfo(BaseModel):
    """How one run was measured, as shown at the top of a report."""

    name: str
    judge: str | None
    extractor: str | None
    mode: str | None
    detector: str | None
    prompts: dict[str, str]
    policy: str
    n_samples: int
    n_results: int
    status: str | None


def run_info(run: Run) -> RunInfo:
    m = run.manifest
    responses = run.responses
    return RunInfo(
        name=run.name,
        judge=m.judge if m else None,
        extractor=m.extractor if m else None,
        mode=m.mode.value if m else None,
        detector=m.detector if m else None,
        prompts={k: v[:12] for k, v in sorted(m.prompts.items())} if m else {},
        policy=run.policy.describe(),
        n_samples=len(responses),
        n_results=int(responses["n_claims"].notna().sum()),
        status=m.status if m else None,
    )


def judge_notes(runs: list[Run]) -> list[str]:
    """Warnings that a reader must see next to numbers from demo or non-LLM judges."""
    from hallumeasure.registry import is_keyless, is_scripted, registry

    fake = [r.name for r in runs if r.manifest and is_scripted(r.manifest.judge)]
    keyless: dict[str, list[str]] = {}  # judge -> the runs it judged
    for r in runs:
        if r.manifest and is_keyless(r.manifest.judge):
            keyless.setdefault(r.manifest.judge, []).append(r.name)
    notes = []
    if fake:
        notes.append(
            f"Judged by the scripted fake model ({', '.join(fake)}): the labels demonstrate the report, "
            "they are not a measurement."
        )
    for judge, names in keyless.items():
        notes.append(f"Judged by the {judge} judge ({', '.join(names)}): {registry().keyless_note(judge)}.")
    return notes


# --- comparability -------------------------------------------------------------------------------
#
# A comparison varies one thing and holds the rest: either the inputs (models' responses to the
# same tasks, tonight against a baseline) under one way of measuring, or the way of measuring
# (judge, detector, extractor, mode, prompts) over the same inputs. Runs that differ in both
# cannot say which of the two made a difference, so they are refused. The policy decides what
# "unsupported" and "hallucinated" mean, so it must always agree.

#: Manifest fields that say how a run measured; runs over the same inputs may differ in them.
MEASUREMENT_FIELDS = ("judge", "extractor", "mode", "detector", "prompts", "votes")
#: Manifest fields that must agree for two runs' numbers to be comparable (kept for callers).
IDENTITY_FIELDS = (*MEASUREMENT_FIELDS, "policy")


def _identity(run: Run) -> dict[str, object] | None:
    m = run.manifest
    if m is None:
        return None
    return {
        "judge": m.judge,
        "extractor": m.extractor,
        "mode": m.mode.value,
        "detector": m.detector,
        "prompts": dict(sorted(m.prompts.items())),
        "policy": m.policy,
        "votes": votes_of(m),
    }


def votes_of(manifest: RunManifest) -> str:
    """How many votes made each verdict (``measure --repeats``, a panel), as a comparable description."""
    votes = (manifest.settings.get("judge") or {}).get("votes")
    if not votes:
        return "one vote per claim"
    return f"{votes['repeats']} repeat(s) of each judge, {votes['rule']} rule"


def _show(field: str, value: object) -> str:
    if field == "policy" and isinstance(value, Policy):
        return value.describe()
    if field == "prompts" and isinstance(value, dict):
        return ", ".join(f"{k}@{v[:12]}" for k, v in value.items()) or "(none)"
    return str(value)


def input_ids(responses: pd.DataFrame) -> pd.Series:
    """The id each sample had in its input (old runs, keyed by id alone, have only ``sample_id``)."""
    column = "input_id" if "input_id" in responses.columns else "sample_id"
    return responses[column].astype(str)


def _inputs(run: Run) -> dict[tuple[str, str], str]:
    """(input id, model) -> digest of what was measured for it (model, question, context, response)."""
    out = {}
    for r in run.input_texts():  # in pieces: a run read as columns holds no texts
        for sid, model, question, context, response in zip(
            input_ids(r), r["model"], r["question"], r["context"], r["response"], strict=True
        ):
            parts = [x if isinstance(x, str) else "" for x in (model, question, context, response)]
            out[(sid, parts[0])] = hashlib.sha256("\x00".join(parts).encode("utf-8")).hexdigest()
    return out


def input_difference(a: Run, b: Run) -> str | None:
    """How the inputs of two runs differ, or None when both measured the very same samples."""
    ia, ib = _inputs(a), _inputs(b)
    only_a, only_b = set(ia) - set(ib), set(ib) - set(ia)
    if only_a or only_b:
        return f"different samples ({len(only_a)} only in {a.name}, {len(only_b)} only in {b.name})"
    changed = sum(ia[k] != ib[k] for k in ia)
    if changed:
        return f"{changed} of the {len(ia)} samples have a different response, context, question or model"
    return None


def measured_differently(a: Run, b: Run) -> list[str]:
    """The measurement fields (see ``MEASUREMENT_FIELDS``) in which two runs with manifests differ."""
    ia, ib = _identity(a), _identity(b)
    if ia is None or ib is None:
        return []
    return [f for f in MEASUREMENT_FIELDS if ia[f] != ib[f]]


def mismatches(runs: list[Run]) -> list[str]:
    """One sentence per reason the runs' numbers are not comparable (empty when they are).

    Runs over the same inputs may differ in how they were measured (that is what such a
    comparison shows); runs measured alike may differ in their inputs. Differing in both, or
    in the policy, or having no manifest, is a mismatch.
    """
    problems = [f"run {r.name} has no manifest, so how it was measured is unknown" for r in runs if r.manifest is None]
    known = [(r, ident) for r in runs if (ident := _identity(r)) is not None]  # the runs with a manifest
    if len(known) < 2:
        return problems
    _, first = known[0]
    differing = [(r, ident) for r, ident in known[1:] if ident["policy"] != first["policy"]]
    if differing:
        values = "; ".join(f"{r.name}: {_show('policy', ident['policy'])}" for r, ident in [known[0], *differing])
        problems.append(f"runs differ in policy ({values})")
    for (ra, ia), (rb, ib) in itertools.combinations(known, 2):
        fields = measured_differently(ra, rb)
        if not fields:
            continue
        inputs = input_difference(ra, rb)
        if inputs is None:
            continue
        how = ", ".join(f"differ in {f} ({ra.name}: {_show(f, ia[f])}; {rb.name}: {_show(f, ib[f])})" for f in fields)
        problems.append(
            f"runs {ra.name} and {rb.name} {how}, and their inputs differ too ({inputs}), "
            "so a difference between them could come from either"
        )
    return problems


def check_comparable(runs: list[Run], allow_mismatch: bool) -> list[str]:
    """Raise ``ConfigError`` naming every mismatch, unless ``allow_mismatch``; return the mismatches."""
    found = mismatches(runs)
    if found and not allow_mismatch:
        raise ConfigError(
            "these runs' numbers are not comparable: "
            + " | ".join(found)
            + ". Compare runs that measured the same samples (to compare judges or detectors) or that were "
            "measured the same way (to compare models or responses), always under one policy; or pass "
            "--allow-mismatch to compare anyway with a visible warning."
        )
    return found


def run_labels(runs: list[Run]) -> dict[str, str]:
    """Run name -> how to name it in tables: the name, plus the measurement settings that differ between runs."""
    known = [r for r in runs if r.manifest is not None]
    differ = {f for a, b in itertools.combinations(known, 2) for f in measured_differently(a, b)}
    # The settings a reader compares; the extractor (CoNLI's is "sentences") and prompts are in the runs table.
    fields: list[str] = [f for f in ("detector", "judge", "mode", "votes") if f in differ] or [
        f for f in ("extractor",) if f in differ
    ]
    labels = {}
    for run in runs:
        ident = _identity(run)
        shown = [f"{f} {_show(f, ident[f])}" for f in fields] if ident is not None else []
        labels[run.name] = f"{run.name}: {', '.join(shown)}" if shown else run.name
    return labels


def comparable_groups(a: Group, b: Group, by_name: dict[str, Run]) -> bool:
    """Whether two groups differ in one thing only: the model (one way of measuring) or the measurement (one model)."""
    if a.run == b.run or a.model == b.model:
        return True
    return not measured_differently(by_name[a.run], by_name[b.run])


def policy_lines(runs: list[Run]) -> list[str]:
    """The policy text to print under every table: one line, or one per run when they differ."""
    described = {r.name: r.policy.describe() for r in runs}
    if len(set(described.values())) == 1:
        return [f"Policy: {next(iter(described.values()))}"]
    return [f"Policy of {name}: {text}" for name, text in described.items()]


# --- response tables -----------------------------------------------------------------------------

_SPACE = re.compile(r"\s+")


def content_key(context: str, question: object) -> str:
    """A key shared by samples that pose the same task (same context and question, spacing aside)."""
    question = question if isinstance(question, str) else ""  # None or NaN from the DataFrame
    text = _SPACE.sub(" ", context.strip()) + "\x00" + _SPACE.sub(" ", question.strip())
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _count_matrix(cells: pd.Series, names: list[str]) -> np.ndarray:
    """One row of counts per cell (JSON text or a dict), one column per name; each distinct text is parsed once."""
    if cells.map(lambda cell: isinstance(cell, dict)).any():
        rows = [_counts(c, names) for c in cells.tolist()]
        return np.array(rows, dtype=int).reshape(len(cells), len(names))
    codes, distinct = pd.factorize(cells, use_na_sentinel=True)
    # a missing cell has code -1: the last row, all zeros
    table = np.array([_counts(c, names) for c in distinct] + [[0] * len(names)], dtype=int)
    rows_out: np.ndarray = table.reshape(len(distinct) + 1, len(names))[codes]
    return rows_out


def _counts(cell: object, names: list[str]) -> list[int]:
    counts = json.loads(cell) if isinstance(cell, str) else cell if isinstance(cell, dict) else {}
    return [int(counts.get(name, 0)) for name in names]


#: The response-table columns worked out from a response's text and JSON counts (``text_unit_columns``).
TEXT_UNIT_COLUMNS = ("content_key", *(f"label_{x}" for x in LABELS), *(f"subtype_{x}" for x in SUBTYPES))


def text_unit_columns(responses: pd.DataFrame) -> pd.DataFrame:
    """The task key (``content_key``) and the label and subtype counts of each row of a responses frame."""
    r = responses
    keys = [content_key(c, q) for c, q in zip(r["context"].tolist(), r["question"].tolist(), strict=True)]
    out = pd.DataFrame({"content_key": keys}, index=r.index)
    labels, subtypes = _count_matrix(r["label_counts"], LABELS), _count_matrix(r["subtype_counts"], SUBTYPES)
    for i, name in enumerate(LABELS):
        out[f"label_{name}"] = labels[:, i]
    for i, name in enumerate(SUBTYPES):
        out[f"subtype_{name}"] = subtypes[:, i]
    return out


def response_units(run: Run) -> pd.DataFrame:
    """The response table of a run: one row per sample, in input order.

    A run read as columns (``Run.load_columns``) has the text columns worked out already; others here."""
    r = run.responses
    measured = r["n_claims"].notna()
    failed = (~measured) | r["error"].notna()
    claim_errors = r["n_errors"].fillna(0).astype(int)
    known = all(c in r.columns for c in TEXT_UNIT_COLUMNS)
    texts = (r[list(TEXT_UNIT_COLUMNS)] if known else text_unit_columns(r)).reset_index(drop=True)
    units = pd.DataFrame(
        {
            "run": run.name,
            "model": r["model"].fillna(NO_MODEL).astype(str).to_numpy(),
            "sample_id": r["sample_id"].astype(str).to_numpy(),
            "input_id": input_ids(r).to_numpy(),
            "content_key": texts["content_key"].to_numpy(),
            # the statistics work on numpy floats: a response without a rate is NaN from here on
            "rate": r["unsupported_rate"].astype(float).to_numpy(),
            "hallucinated": r["hallucinated"].astype("Float64").astype(float).to_numpy(),
            "n_claims": r["n_claims"].fillna(0).astype(int).to_numpy(),
            "n_evaluated": r["n_evaluated"].fillna(0).astype(int).to_numpy(),
            "n_unsupported": r["n_unsupported"].fillna(0).astype(int).to_numpy(),
            "failed": failed.astype(int).to_numpy(),
            "error_rows": (claim_errors + failed.astype(int)).to_numpy(),
        }
    )
    # Judged units: every claim, plus one per failed sample (which produced no claims to count).
    units["judged_units"] = units["n_claims"] + units["failed"]
    for column in TEXT_UNIT_COLUMNS[1:]:
        units[column] = texts[column].to_numpy(dtype=int)
    return units


@dataclass
class Group:
    """Responses of one model (within one run, or across runs when named alike)."""

    name: str
    run: str
    model: str
    units: pd.DataFrame


def model_groups(runs: list[Run], units: dict[str, pd.DataFrame]) -> list[Group]:
    """One group per (run, model). A model found in several runs is named ``model (run)``.

    A run whose samples carry no model name becomes one group named after the run. When the
    runs were measured differently, the run's part of the name also says how (``run_labels``).
    """
    labels = run_labels(runs)
    pairs = [(run.name, model) for run in runs for model in dict.fromkeys(units[run.name]["model"])]
    groups = []
    for run_name, model in pairs:
        table = units[run_name]
        if model == NO_MODEL:
            name = labels[run_name]
        elif sum(1 for _, m in pairs if m == model) > 1:
            name = f"{model} ({labels[run_name]})"
        else:
            name = model
        groups.append(Group(name, run_name, model, table[table["model"] == model].reset_index(drop=True)))
    return groups


def _id_keys(t: pd.DataFrame) -> list[str]:
    """Each row's id as written, with its model added where the id repeats within the table."""
    ids = input_ids(t)
    repeated = set(ids[ids.duplicated()])
    if not repeated:
        return [str(i) for i in ids.tolist()]
    models = t["model"].astype(str).tolist() if "model" in t.columns else [""] * len(t)
    return [f"{i}\x00{m}" if i in repeated else i for i, m in zip(ids.tolist(), models, strict=True)]


def _pair_keys(ids: list[str], content_keys: list[str], shared_ids: set[str]) -> list[str]:
    """Each row's pairing key: its id where the other table has it, else its task (context and question)."""
    return ["id:" + s if s in shared_ids else "ctx:" + k for s, k in zip(ids, content_keys, strict=True)]


def distinct_samples(units: pd.DataFrame) -> int:
    """How many samples a response table holds, counted as ``pair_up`` counts them (``pair_up(units, units)``)."""
    ids = _id_keys(units)
    return len(set(_pair_keys(ids, units["content_key"].tolist(), set(ids))))


def pair_up(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """Align two response tables on shared samples, row by row.

    Samples pair when they have the same id as the input wrote it (so one row per question and
    model, the models sharing ids, pairs each model's answer to a question) or, failing that, the
    same context and question. In a table that holds several models (an id repeats), the key is
    the pair (id, model), so each model's answer pairs with the same model's answer in the other
    table rather than with an average over models. Repeats of one key within a group are
    averaged. Returns the aligned tables (possibly empty) and a description of how they were paired.
    """
    ids_a, ids_b = _id_keys(a), _id_keys(b)
    shared_ids = set(ids_a) & set(ids_b)

    def keyed(t: pd.DataFrame, ids: list[str]) -> pd.DataFrame:
        keys = pd.Index(_pair_keys(ids, t["content_key"].tolist(), shared_ids), name="pair_key", dtype=object)
        text = ("run", "model", "sample_id", "input_id", "content_key", "pair_key")
        numeric = [c for c in t.columns if c not in text]
        if keys.is_unique:  # one row per key: its mean is the row itself (as floats, as a mean gives it)
            return pd.DataFrame(t[numeric].to_numpy(dtype=float), index=keys, columns=numeric)
        return t[numeric].set_axis(keys).groupby("pair_key", sort=False).mean()

    ka, kb = keyed(a, ids_a), keyed(b, ids_b)
    shared = ka.index[ka.index.isin(kb.index)].tolist()
    by_id = sum(1 for k in shared if k.startswith("id:"))
    how = {
        (True, False): "same sample id",
        (False, True): "same context and question",
        (True, True): "same sample id, else same context and question",
    }.get((by_id > 0, by_id < len(shared)), "no shared samples")
    return ka.loc[shared].reset_index(), kb.loc[shared].reset_index(), how
