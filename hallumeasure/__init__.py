"""hallumeasure: claim-level hallucination measurement for grounded LLM responses."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hallumeasure")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"
