"""A real-time guard: check responses in the serving path, then pass, flag, block or rewrite them.

Its names are imported on first use: ``serve --help`` reads ``GuardSettings`` without loading the guard.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hallumeasure.core.lazy import lazy_exports

if TYPE_CHECKING:
    from hallumeasure.guard.core import CheckRequest as CheckRequest
    from hallumeasure.guard.core import CheckResult as CheckResult
    from hallumeasure.guard.core import Guard as Guard
    from hallumeasure.guard.settings import Action as Action
    from hallumeasure.guard.settings import Decision as Decision
    from hallumeasure.guard.settings import GuardPolicy as GuardPolicy
    from hallumeasure.guard.settings import GuardSettings as GuardSettings
    from hallumeasure.guard.settings import PolicyOverride as PolicyOverride

_EXPORTS = {
    "hallumeasure.guard.core": ("CheckRequest", "CheckResult", "Guard"),
    "hallumeasure.guard.settings": ("Action", "Decision", "GuardPolicy", "GuardSettings", "PolicyOverride"),
}

if not TYPE_CHECKING:  # hidden from type checkers, so that a name not listed above is an error there
    __getattr__, __dir__ = lazy_exports(globals(), _EXPORTS)
