"""The tables of a run's database (``run.sqlite``), and the columns added to them since the first runs."""

SCHEMA = """
CREATE TABLE IF NOT EXISTS samples (
  sample_id TEXT PRIMARY KEY, position INTEGER NOT NULL, model TEXT, context TEXT NOT NULL,
  response TEXT NOT NULL, question TEXT, tags TEXT NOT NULL, metadata TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS results (
  sample_id TEXT PRIMARY KEY REFERENCES samples(sample_id), model TEXT, n_claims INTEGER NOT NULL,
  n_evaluated INTEGER NOT NULL, n_unsupported INTEGER NOT NULL, n_errors INTEGER NOT NULL,
  unsupported_rate REAL, hallucinated INTEGER, score REAL, error TEXT,
  label_counts TEXT NOT NULL, subtype_counts TEXT NOT NULL, usage TEXT NOT NULL,
  decided INTEGER, unsupported_rate_low REAL, unsupported_rate_high REAL, error_kind TEXT);
CREATE TABLE IF NOT EXISTS claims (
  claim_id TEXT PRIMARY KEY, sample_id TEXT NOT NULL, idx INTEGER NOT NULL, text TEXT NOT NULL,
  spans TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS verdicts (
  claim_id TEXT PRIMARY KEY, sample_id TEXT NOT NULL, label_reason TEXT, label TEXT,
  subtype_reason TEXT, subtype TEXT, probability REAL, judge TEXT NOT NULL, error TEXT, raw_output TEXT,
  confident INTEGER);
CREATE TABLE IF NOT EXISTS votes (
  claim_id TEXT NOT NULL, sample_id TEXT NOT NULL, judge TEXT NOT NULL, repeat INTEGER NOT NULL, label_reason TEXT,
  label TEXT, subtype_reason TEXT, subtype TEXT, probability REAL, error TEXT, raw_output TEXT,
  PRIMARY KEY (claim_id, judge, repeat));
CREATE TABLE IF NOT EXISTS input_problems (
  row INTEGER PRIMARY KEY, sample_id TEXT, message TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS passages (
  sample_id TEXT PRIMARY KEY, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS verdict_evidence (
  claim_id TEXT PRIMARY KEY, sample_id TEXT NOT NULL, data TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS input_ids (
  sample_id TEXT PRIMARY KEY, input_id TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS sample_features (
  sample_id TEXT PRIMARY KEY, task_key TEXT NOT NULL, style_words INTEGER NOT NULL, style_overlap REAL,
  response_hash INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS claims_by_sample ON claims(sample_id);
CREATE INDEX IF NOT EXISTS verdicts_by_sample ON verdicts(sample_id);
CREATE INDEX IF NOT EXISTS votes_by_sample ON votes(sample_id);
CREATE INDEX IF NOT EXISTS evidence_by_sample ON verdict_evidence(sample_id);
"""


#: Columns added after the first runs were written: (table, column, type). A run opened for writing
#: (a resume) gets them added; reading an older run fills them in (see ``_column``).
ADDED_COLUMNS = (
    ("results", "decided", "INTEGER"),
    ("results", "unsupported_rate_low", "REAL"),
    ("results", "unsupported_rate_high", "REAL"),
    ("verdicts", "confident", "INTEGER"),
    ("results", "error_kind", "TEXT"),
    ("verdicts", "error_kind", "TEXT"),
)


#: The message start of an over-limit error row as ``pipeline/limits.py`` wrote it before kinds were stored.
#: Read once, by the migration that gives an old run's error rows their kind (``RunStore._migrate_error_kinds``);
#: nothing else reads a message back.
LEGACY_OVER_LIMIT = "not judged: "
