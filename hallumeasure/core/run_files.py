"""The names of the files in a run directory, shared by the run store and the batch ledger (which
keeps its table in the run's database) without the batch layer importing the store."""

MANIFEST = "manifest.json"
DATABASE = "run.sqlite"
