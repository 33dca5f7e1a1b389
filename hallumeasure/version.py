"""The installed package version, in a module of its own so that any layer can record it without
importing the package root (which imports the pipeline, and would close an import cycle)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hallumeasure")
except PackageNotFoundError:  # running from a source tree without install
    __version__ = "0.0.0+unknown"
