"""Environment settings, read in this one place. Secrets are read here and never recorded anywhere."""

from __future__ import annotations

import logging
import os
from pathlib import Path


def cache_path() -> Path:
    """Where the shared request cache lives: $HALLUMEASURE_CACHE_DIR, else ~/.cache/hallumeasure."""
    base = (
        os.environ.get("HALLUMEASURE_CACHE_DIR")
        or Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "hallumeasure"
    )
    return Path(base) / "requests.sqlite"


#: Environment variables whose values must never appear in any output.
SECRET_ENV_VARS = (
    "ANTHROPIC_API_KEY",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_BEARER_TOKEN_BEDROCK",
    "OPENAI_API_KEY",
    "AZURE_OPENAI_API_KEY",
)


def secret_values() -> list[str]:
    """Current values of secret variables (at least 8 characters), for redaction."""
    return [v for name in SECRET_ENV_VARS if (v := os.environ.get(name)) and len(v) >= 8]


def redact(text: str) -> str:
    """Replace any secret value found in ``text`` by a placeholder."""
    for value in secret_values():
        text = text.replace(value, "***")
    return text


class RedactingFilter:
    """A logging filter that removes secret values from every record's final message."""

    def filter(self, record: logging.LogRecord) -> bool:
        if secret_values():
            record.msg = redact(record.getMessage())
            record.args = ()
        return True


#: Fragments of option names that hold secrets; such options are never taken from a spec.
SECRET_NAME_FRAGMENTS = (
    "api_key",
    "apikey",
    "access_key",
    "secret",
    "password",
    "credential",
    "auth_token",
    "access_token",
    "session_token",
    "bearer",
)


def looks_secret(name: str) -> bool:
    """Whether an option or field name holds a secret."""
    return any(fragment in name.lower() for fragment in SECRET_NAME_FRAGMENTS)
