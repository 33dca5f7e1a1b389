"""A real-time guard: check responses in the serving path, then pass, flag, block or rewrite them."""

from hallumeasure.guard.core import CheckRequest, CheckResult, Guard
from hallumeasure.guard.settings import Action, Decision, GuardPolicy, GuardSettings, PolicyOverride

__all__ = [
    "Action",
    "CheckRequest",
    "CheckResult",
    "Decision",
    "Guard",
    "GuardPolicy",
    "GuardSettings",
    "PolicyOverride",
]
