"""The checker tests build their models (tiny_models.py). The ONNX ones need onnxruntime and tokenizers (the
nli / onnx extras) and onnx to build graphs (dev); the hf ones need transformers and torch (the hf extra),
which CI does not install: they skip there, saying so. With HALLUMEASURE_REQUIRE_NLI set (as in CI) a missing
ONNX dependency fails instead of skipping, so CI always runs the onnx: path."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))


def require(*modules: str, ci: bool) -> None:
    """Skip (or, where CI must run them, fail) when ``modules`` cannot be imported."""
    missing = []
    for name in modules:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    if not missing:
        return
    reason = f"needs {', '.join(missing)} (not installed)"
    if ci and os.environ.get("HALLUMEASURE_REQUIRE_NLI"):
        pytest.fail(f"HALLUMEASURE_REQUIRE_NLI is set (as in CI) but the onnx: checker tests {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)


@pytest.fixture(scope="session")
def tiny_onnx(tmp_path_factory):
    require("onnx", "onnxruntime", "tokenizers", ci=True)
    from tiny_models import build_onnx

    return build_onnx(tmp_path_factory.mktemp("onnx3"))
