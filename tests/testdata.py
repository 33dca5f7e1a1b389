"""Paths to test inputs: the bundled examples and (when present) ../shared/data."""

import functools
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "examples" / "samples.jsonl"
SHARED_DATA = REPO.parent / "shared" / "data"


@functools.cache
def aws_session():
    """One boto3 session with dummy credentials for all tests, so botocore parses its service models once."""
    import boto3

    return boto3.Session(aws_access_key_id="testing", aws_secret_access_key="testing", region_name="us-east-1")
