"""Property-based fuzzing of the guard from its own OpenAPI schema (schemathesis) against a live server:
no request, however odd, gets a 500 or an answer that breaks the schema. `make test` runs it."""

from __future__ import annotations

from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.checks import not_a_server_error  # noqa: E402
from schemathesis.specs.openapi.checks import (  # noqa: E402
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from hallumeasure.guard import Guard, GuardSettings  # noqa: E402
from tests.guard.test_hostile import served  # noqa: E402


@schemathesis.serializer("application/x-ndjson")
def _ndjson(ctx: Any, value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else str(value).encode()


#: No 500; every status, content type, header and body as the schema says. Not "schema-valid data is
#: accepted": a request must give exactly one of context and passages, which the schema cannot say.
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
]


def test_no_500_and_every_answer_fits_the_schema() -> None:
    # Driven by hand rather than by schemathesis' pytest plugin, which does not work with this pytest.
    with served(GuardSettings(judge_workers=0, timeout_s=5), Guard()) as base:
        schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
        operations = [result.ok() for result in schema.get_all_operations()]
        assert {op.path for op in operations} >= {"/v1/check", "/v1/check/stream", "/healthz"}
        for operation in operations:

            @given(operation.as_strategy())
            @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
            def fuzz(case: Any) -> None:
                case.call_and_validate(checks=CHECKS)

            fuzz()
