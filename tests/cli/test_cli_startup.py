"""``hallumeasure --help`` and ``--version`` load no heavy library (issue #38 item 5): each command imports what
it runs inside its function. Times are a benchmark figure (benchmarks/cli_startup.py), not a unit test."""

import subprocess
import sys

HEAVY = ("pandas", "numpy", "scipy", "anthropic", "boto3", "openai", "httpx", "tenacity", "jinja2", "matplotlib")


def test_importing_the_cli_loads_no_heavy_library():
    code = "import sys, hallumeasure.cli; print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in %r)))"
    done = subprocess.run(
        [sys.executable, "-c", code % (HEAVY,)], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.split() == [], done.stdout
