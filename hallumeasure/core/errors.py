"""Exception types. Expected failures of a judge are data (error rows); these are for the unexpected."""

from __future__ import annotations


class HalluMeasureError(Exception):
    """Base class of every error raised on purpose by hallumeasure."""


class InputError(HalluMeasureError):
    """The input file or a row of it cannot be used; the message names the row and what to fix."""


class ConfigError(HalluMeasureError):
    """A setting, model spec or option is invalid."""


class PromptError(HalluMeasureError):
    """A prompt file is missing or does not match prompts.lock."""


class RunStoreError(HalluMeasureError):
    """The run directory cannot be used (locked, from another run, or corrupt)."""


class RunStoppedError(HalluMeasureError):
    """Nothing more may be asked of a provider in this run (its endpoint cannot be reached, its budget is
    spent): the run stops, resumable, instead of storing an error row for every sample left. Every stage and
    judge lets it through."""


#: The ``cause`` of a ``ProviderError`` whose request did not fit the model's context window (each provider
#: maps its own code to it: OpenAI's ``context_length_exceeded``, llama.cpp's ``exceed_context_size_error``).
CONTEXT_TOO_LONG = "context_length_exceeded"


class ProviderError(HalluMeasureError):
    """A provider call failed. ``retryable`` says whether the model wrapper may try again."""

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        retry_after: float | None = None,
        status: int | None = None,
        cause: str | None = None,
    ) -> None:
        from hallumeasure.core.config import redact  # local: config imports nothing of ours, but keep errors leaf-like

        super().__init__(redact(message))
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.cause = cause or type(self).__name__


class OutputError(HalluMeasureError):
    """A model answer could not be turned into the expected structure."""

    def __init__(self, message: str, raw: str | None = None) -> None:
        super().__init__(message)
        self.raw = raw
