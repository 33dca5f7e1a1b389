"""Wire-level helpers shared by the providers: which statuses to retry, retry-after, secret scrubbing."""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit, urlunsplit

from hallumeasure.core.config import redact

#: 4xx statuses worth another try (timeout, conflict, rate limit); every 5xx is too, 529 overloaded included.
RETRYABLE_STATUSES = frozenset({408, 409, 429})


def is_retryable_status(status: int | None) -> bool:
    """Whether an HTTP status is worth another try."""
    return status is not None and (status in RETRYABLE_STATUSES or status >= 500)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms``, or ``retry-after`` (seconds or an HTTP date); None if absent."""
    if not headers:
        return None
    lowered = {str(k).lower(): v for k, v in headers.items()}
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        try:
            value = float(lowered[name]) / scale
        except (KeyError, TypeError, ValueError):
            continue
        if math.isfinite(value):
            return max(0.0, value)
    parsed = email.utils.parsedate_tz(lowered.get("retry-after") or "")
    if parsed is None:
        return None
    return max(0.0, email.utils.mktime_tz(parsed) - time.time())


def scrub_secrets(text: str, secrets: Iterable[str]) -> str:
    """``text`` without any of ``secrets`` nor any secret environment value."""
    for secret in secrets:
        if secret and len(secret) >= 4:  # a stray one-letter value would mangle the whole message
            text = text.replace(secret, "***")
    return redact(text)


def public_url(url: str) -> str:
    """``url`` as it may be recorded: without a ``user:password@`` part, a query string or a fragment,
    any of which may carry a secret."""
    parts = urlsplit(str(url))
    host = parts.hostname or ""
    if ":" in host:  # an IPv6 address
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
