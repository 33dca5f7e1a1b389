#!/usr/bin/env bash
# Nightly groundedness audit: measure tonight's answers, then audit them against the baseline run.
#
#   bash examples/ci/nightly_audit.sh ANSWERS BASELINE_DIR RUNS_DIR [measure options...]
#
# ANSWERS is a JSONL / CSV / Parquet file of answers with their sources (what `hallumeasure measure` reads);
# the options after RUNS_DIR go to `hallumeasure measure` (for example --judge anthropic:<model>); the rest
# comes from hallumeasure.toml or [tool.hallumeasure] in pyproject.toml, as for any command.
# Writes RUNS_DIR/current (the run) and RUNS_DIR/audit (audit.md, audit.json, audit.junit.xml).
#
# Exit codes are those of `hallumeasure audit`: 0 pass, 1 regression, 2 usage error (also: the
# measurement itself failed), 3 too many error rows, 4 inconclusive. With no baseline yet, tonight's
# run becomes the baseline and the script exits 0.
set -uo pipefail

answers=${1:?usage: nightly_audit.sh ANSWERS BASELINE_DIR RUNS_DIR [measure options...]}
baseline=${2:?usage: nightly_audit.sh ANSWERS BASELINE_DIR RUNS_DIR [measure options...]}
runs=${3:?usage: nightly_audit.sh ANSWERS BASELINE_DIR RUNS_DIR [measure options...]}
shift 3

mkdir -p "$runs"
measured=0
hallumeasure measure "$answers" --out "$runs/current" --overwrite "$@" || measured=$?
# measure exits 3 when some rows ended as error rows: the audit's error-share gate decides about those
if [ "$measured" -ne 0 ] && [ "$measured" -ne 3 ]; then
  echo "nightly audit: the measurement failed (exit $measured)" >&2
  exit 2
fi

if [ ! -f "$baseline/manifest.json" ]; then
  mkdir -p "$(dirname "$baseline")"
  cp -R "$runs/current" "$baseline"
  echo "nightly audit: no baseline yet; tonight's run is now the baseline in $baseline"
  exit 0
fi

hallumeasure audit --baseline "$baseline" --current "$runs/current" --out "$runs/audit"
