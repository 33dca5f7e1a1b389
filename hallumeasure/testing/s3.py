"""A minimal S3-compatible object store for the Bedrock simulator's batch jobs (path-style only).

It serves what a batch client and the simulated batch service need: CreateBucket, HeadBucket,
PutObject, GetObject, HeadObject, DeleteObject and ListObjectsV2. Requests are recognised by their
SigV4 credential scope (service ``s3``), so one simulator address serves Bedrock and S3 together.
Point boto3 at it with ``endpoint_url=srv.endpoint_url`` and path-style addressing.
"""

from __future__ import annotations

import hashlib
import threading
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, quote, unquote, urlsplit
from xml.sax.saxutils import escape

from hallumeasure.testing.calls import Reply

_XML = "application/xml"


def is_s3_request(headers: dict[str, str]) -> bool:
    """Whether a request was signed for S3 (its credential scope names the service)."""
    auth = headers.get("authorization", "")
    return "/s3/aws4_request" in auth


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``s3://bucket/key/prefix`` -> (bucket, key prefix)."""
    if not uri.startswith("s3://"):
        raise ValueError(f"not an S3 URI: {uri!r}")
    bucket, _, key = uri[5:].partition("/")
    return bucket, key


class ObjectStore:
    """Buckets of objects in memory; thread-safe."""

    def __init__(self) -> None:
        self.buckets: dict[str, dict[str, bytes]] = {}
        self._lock = threading.Lock()

    # --- direct use by the simulator and by tests ---

    def create_bucket(self, bucket: str) -> None:
        with self._lock:
            self.buckets.setdefault(bucket, {})

    def put(self, bucket: str, key: str, data: bytes) -> None:
        with self._lock:
            self.buckets.setdefault(bucket, {})[key] = data

    def get(self, bucket: str, key: str) -> bytes | None:
        with self._lock:
            return self.buckets.get(bucket, {}).get(key)

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        with self._lock:
            return sorted(k for k in self.buckets.get(bucket, {}) if k.startswith(prefix))

    # --- the wire ---

    def handle(self, method: str, path: str, headers: dict[str, str], raw: bytes) -> Reply:
        parts = urlsplit(path)
        bucket, _, key = unquote(parts.path).lstrip("/").partition("/")
        query = parse_qs(parts.query, keep_blank_values=True)
        if not bucket:
            return _error(400, "InvalidRequest", "the simulator serves path-style requests only")
        if not key:
            return self._bucket_op(method, bucket, query)
        if method == "PUT":
            data = _decode_aws_chunked(raw) if "aws-chunked" in headers.get("content-encoding", "") else raw
            with self._lock:
                if bucket not in self.buckets:
                    return _error(404, "NoSuchBucket", f"the bucket {bucket} does not exist")
                self.buckets[bucket][key] = data
            return Reply(200, headers={"etag": _etag(data)}, raw=b"", content_type=_XML)
        stored = self.get(bucket, key)
        if method == "DELETE":
            with self._lock:
                self.buckets.get(bucket, {}).pop(key, None)
            return Reply(204, raw=b"", content_type=_XML)
        if stored is None:
            return _error(404, "NoSuchKey", f"the key {key} does not exist", head=method == "HEAD")
        headers_out = {"etag": _etag(stored), "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT"}
        if method == "HEAD":
            return Reply(
                200,
                headers={**headers_out, "x-sim-length": str(len(stored))},
                raw=b"",
                content_type="application/octet-stream",
            )
        return Reply(200, headers=headers_out, raw=stored, content_type="application/octet-stream")

    def _bucket_op(self, method: str, bucket: str, query: dict[str, list[str]]) -> Reply:
        if method == "PUT":
            with self._lock:
                self.buckets.setdefault(bucket, {})
            return Reply(200, headers={"location": f"/{bucket}"}, raw=b"", content_type=_XML)
        with self._lock:
            exists = bucket in self.buckets
        if not exists:
            return _error(404, "NoSuchBucket", f"the bucket {bucket} does not exist", head=method == "HEAD")
        if method == "HEAD":
            return Reply(200, raw=b"", content_type=_XML)
        if method == "GET":
            prefix = (query.get("prefix") or [""])[0]
            return self._list(bucket, prefix)
        return _error(405, "MethodNotAllowed", f"{method} on a bucket is not simulated")

    def _list(self, bucket: str, prefix: str) -> Reply:
        keys = self.keys(bucket, prefix)
        now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
        items = "".join(
            f"<Contents><Key>{escape(k)}</Key><LastModified>{now}</LastModified><ETag>{_etag(data)}</ETag>"
            f"<Size>{len(data)}</Size><StorageClass>STANDARD</StorageClass></Contents>"
            for k in keys
            for data in [self.get(bucket, k) or b""]
        )
        body = (
            '<?xml version="1.0" encoding="UTF-8"?>'
            '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
            f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix><KeyCount>{len(keys)}</KeyCount>"
            f"<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>{items}</ListBucketResult>"
        )
        return Reply(200, raw=body.encode(), content_type=_XML)


def s3_uri(bucket: str, key: str) -> str:
    return f"s3://{bucket}/{quote(key, safe='/')}"


def _etag(data: bytes) -> str:
    return '"' + hashlib.md5(data, usedforsecurity=False).hexdigest() + '"'


def _error(status: int, code: str, message: str, *, head: bool = False) -> Reply:
    body = (
        b""
        if head
        else (
            f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code><Message>{escape(message)}</Message>'
            "<RequestId>simulated</RequestId></Error>"
        ).encode()
    )
    return Reply(status, raw=body, content_type=_XML)


def _decode_aws_chunked(raw: bytes) -> bytes:
    """The payload of an ``aws-chunked`` body (size;signature CRLF data CRLF ... 0 CRLF trailers)."""
    out, pos = [], 0
    while pos < len(raw):
        end = raw.index(b"\r\n", pos)
        size = int(raw[pos:end].split(b";")[0], 16)
        pos = end + 2
        if size == 0:
            break
        out.append(raw[pos : pos + size])
        pos += size + 2
    return b"".join(out)


def jsonl(records: list[dict[str, Any]]) -> bytes:
    import json

    return b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in records)
