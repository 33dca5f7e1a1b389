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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pydantic import BaseModel

from hallumeasure.core.errors import ConfigError
from hallumeasure.core.labels import Policy
from hallumeasure.core.sample_features import task_key
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


def content_key(context: str, question: object) -> str:
    """A key shared by samples that pose the same task (same context and question, spacing aside)."""
    return task_key(context, question)


def _task_keys(responses: pd.DataFrame) -> np.ndarray:
    """Each row's task key: as stored with the sample where ``responses`` has it (``RunStore.response_columns``),
    else worked out from its context and question."""
    keys = responses["task_key"].to_numpy(dtype=object) if "task_key" in responses.columns else None
    missing = np.ones(len(responses), dtype=bool) if keys is None else pd.isna(keys)
    if keys is None or missing.any():
        rest = responses[missing]
        worked = [task_key(c, q) for c, q in zip(rest["context"].tolist(), rest["question"].tolist(), strict=True)]
        keys = np.empty(len(responses), dtype=object) if keys is None else keys.copy()
        keys[missing] = worked
    return keys


def _count_matrix(cells: pd.Series, names: list[str]) -> np.ndarray:
    """One row of counts per cell (JSON text or a dict), one column per name; each distinct text is parsed once.
    The counts are 32-bit: a table of a million responses holds fifteen such columns."""
    if cells.dtype == object and cells.map(lambda cell: isinstance(cell, dict)).any():
        rows = [_counts(c, names) for c in cells.tolist()]
        return np.array(rows, dtype=np.int32).reshape(len(cells), len(names))
    codes, distinct = pd.factorize(cells, use_na_sentinel=True)
    # a missing cell has code -1: the last row, all zeros
    table = np.array([_counts(c, names) for c in distinct] + [[0] * len(names)], dtype=np.int32)
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
    out = pd.DataFrame({"content_key": _task_keys(r)}, index=r.index)
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
        units[column] = texts[column].to_numpy()
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
    # ``unique`` keeps the order of first appearance, without a Python loop over a million rows
    pairs = [(run.name, str(model)) for run in runs for model in units[run.name]["model"].unique()]
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


def _id_keys(t: pd.DataFrame) -> pd.Series:
    """Each row's id as written, with its model added where the id repeats within the table."""
    ids = input_ids(t).reset_index(drop=True)
    repeated = ids.duplicated(keep=False)
    if not repeated.any():
        return ids
    models = t["model"].astype(str).reset_index(drop=True) if "model" in t.columns else pd.Series("", index=ids.index)
    return ids.where(~repeated, ids + "\x00" + models)


def distinct_samples(units: pd.DataFrame) -> int:
    """How many samples a response table holds, counted as ``pair_up`` counts them (``pair_up(units, units)``)."""
    return int(_id_keys(units).nunique())


def _id_codes(a: pd.DataFrame, b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, int]:
    """Integer codes of each row's id key (``_id_keys``) in both tables, and how many distinct keys there are.

    The ids are hashed once; only tables where an id repeats get their keys with models and a second pass."""
    codes, uniques = pd.factorize(pd.concat([input_ids(a), input_ids(b)], ignore_index=True))
    code_a, code_b = codes[: len(a)], codes[len(a) :]
    if np.bincount(code_a, minlength=len(uniques)).max(initial=0) > 1 or (
        np.bincount(code_b, minlength=len(uniques)).max(initial=0) > 1
    ):
        codes, uniques = pd.factorize(pd.concat([_id_keys(a), _id_keys(b)], ignore_index=True))
        code_a, code_b = codes[: len(a)], codes[len(a) :]
    return code_a, code_b, len(uniques)


@dataclass
class Pairing:
    """Two response tables aligned on their shared samples (``pairing``), row by row."""

    a: pd.DataFrame
    b: pd.DataFrame
    #: How the samples were paired, in words.
    how: str
    #: The samples of each table, counted as ``distinct_samples`` counts them.
    samples_a: int
    samples_b: int


_TEXT = ("run", "model", "sample_id", "input_id", "content_key", "pair_key")


def _numeric(t: pd.DataFrame, columns: Sequence[str] | None) -> list[str]:
    return [c for c in t.columns if c not in _TEXT and (columns is None or c in columns)]


def _taken(t: pd.DataFrame, rows: np.ndarray, keys: np.ndarray, columns: Sequence[str] | None) -> pd.DataFrame:
    """The numeric columns of ``rows`` of ``t`` as floats, after their ``pair_key`` (one copy of the numbers)."""
    numeric = _numeric(t, columns)
    values = t[numeric].to_numpy(dtype=float, na_value=np.nan)
    if not (len(rows) == len(t) and bool(np.all(rows == np.arange(len(t))))):
        values = values[rows]
    frame = pd.DataFrame(values, columns=numeric, copy=False)
    frame.insert(0, "pair_key", keys)
    return frame


def _averaged(t: pd.DataFrame, keys: np.ndarray, columns: Sequence[str] | None) -> pd.DataFrame:
    """The numeric columns of ``t`` averaged over the rows of each key (in the order keys first appear)."""
    numeric = _numeric(t, columns)
    return t[numeric].set_axis(pd.Index(keys, name="pair_key")).groupby("pair_key", sort=False).mean()


def pairing(a: pd.DataFrame, b: pd.DataFrame, columns: Sequence[str] | None = None) -> Pairing:
    """Align two response tables on shared samples, row by row.

    Samples pair when they have the same id as the input wrote it (so one row per question and
    model, the models sharing ids, pairs each model's answer to a question) or, failing that, the
    same context and question. In a table that holds several models (an id repeats), the key is
    the pair (id, model), so each model's answer pairs with the same model's answer in the other
    table rather than with an average over models. Repeats of one key within a group are
    averaged. The keys are integer codes of the ids and tasks (``pair_key``), so a million rows pair in
    about a second. The aligned tables hold every numeric column, or those of ``columns``.
    """
    code_a, code_b, n_ids = _id_codes(a, b)
    seen_a = np.bincount(code_a, minlength=n_ids) > 0
    seen_b = np.bincount(code_b, minlength=n_ids) > 0
    shared_id = seen_a & seen_b
    on_a, on_b = shared_id[code_a], shared_id[code_b]
    keys_a, keys_b = code_a, code_b
    if not (on_a.all() and on_b.all()):  # a row whose id the other table lacks pairs by its task
        tasks = pd.factorize(pd.concat([a["content_key"], b["content_key"]], ignore_index=True))[0] + n_ids
        keys_a, keys_b = np.where(on_a, code_a, tasks[: len(a)]), np.where(on_b, code_b, tasks[len(a) :])
    index_a, index_b = pd.Index(keys_a), pd.Index(keys_b)
    if index_a.is_unique and index_b.is_unique:  # one row per key: its mean is the row itself
        where = index_b.get_indexer(keys_a)
        rows_a = np.flatnonzero(where >= 0)
        shared = keys_a[rows_a]
        pa, pb = _taken(a, rows_a, shared, columns), _taken(b, where[rows_a], shared, columns)
    else:
        ka, kb = _averaged(a, keys_a, columns), _averaged(b, keys_b, columns)
        kept = ka.index[ka.index.isin(kb.index)]
        shared = kept.to_numpy()
        pa, pb = ka.loc[kept].reset_index(), kb.loc[kept].reset_index()
    by_id = int(np.sum(shared < n_ids))
    how = {
        (True, False): "same sample id",
        (False, True): "same context and question",
        (True, True): "same sample id, else same context and question",
    }.get((by_id > 0, by_id < len(shared)), "no shared samples")
    return Pairing(pa, pb, how, int(seen_a.sum()), int(seen_b.sum()))


def pair_up(a: pd.DataFrame, b: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str]:
    """``pairing(a, b)`` as (aligned a, aligned b, how they were paired)."""
    paired = pairing(a, b)
    return paired.a, paired.b, paired.how
