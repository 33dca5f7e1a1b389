"""The gated metrics an audit can be planned for, by name: importing it loads no numpy, so the settings models
that the command line reads (``report/audit_settings.py``) can name them."""

from typing import Literal

#: The gated metrics an audit can be planned for.
Metric = Literal["unsupported_rate", "hallucinated_share"]
