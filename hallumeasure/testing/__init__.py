"""Local provider simulators: real HTTP servers that speak the Anthropic Messages and Bedrock Converse
wire formats, so that the real providers can be tested and benchmarked without a network.

    from hallumeasure.testing import AnthropicServer
    from hallumeasure.testing.anthropic_server import error_reply, tool_reply

    with AnthropicServer(script=[error_reply(429, retry_after=0.01)]) as srv:
        ...  # srv.base_url, srv.requests, srv.calls

With no script and no handler, a server answers hallumeasure's own prompts as the fake demo model
does and any other tool request with an input built from the tool's JSON Schema (``schema_answer``);
usage is counted with a deterministic word-and-punctuation tokenizer.
"""

from hallumeasure.testing.anthropic_server import AnthropicServer
from hallumeasure.testing.bedrock_server import BedrockServer
from hallumeasure.testing.server import (
    Answer,
    Call,
    RecordedRequest,
    Reply,
    Segment,
    SimServer,
    Tokens,
    default_answer,
    schema_answer,
    schema_example,
)

__all__ = [
    "AnthropicServer",
    "Answer",
    "BedrockServer",
    "Call",
    "RecordedRequest",
    "Reply",
    "Segment",
    "SimServer",
    "Tokens",
    "default_answer",
    "schema_answer",
    "schema_example",
]
