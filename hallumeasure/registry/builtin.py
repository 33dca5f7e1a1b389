"""The parts that ship with hallumeasure, registered the way a plugin's are (``registry.parts``). Third-party
parts come from entry points (``registry.load_plugins``).

A new built-in part is one row here, with the options its specs may set; its code is imported only when a
run first uses it. tests/registry/test_builtin_options.py checks each declared option against its factory.
"""

from __future__ import annotations

from typing import Any

from hallumeasure.core.docs import QUALITY_PAGE, docs_reference
from hallumeasure.registry.facts import BUILTIN_FACTS, ModelFacts
from hallumeasure.registry.parts import (
    DetectorPart,
    ExporterPart,
    ExtractorPart,
    InputFormatPart,
    JudgeFamilyPart,
    JudgePart,
    Option,
    Part,
    ProviderJudgePart,
    ProviderPart,
    RewriterPart,
)

#: Where the keyless judges' measured quality is published (a docs page by its title, never a repository path).
QUALITY = docs_reference(*QUALITY_PAGE)
#: The calibrated decision rules of the keyless judges (judges/decision.py; benchmarks/decided_calibration.py).
OFFLINE_RULES = "hallumeasure.judges.offline:decision.json"
NLI_RULES = "hallumeasure.judges.nli:decision.json"


def _facts(prefix: str) -> dict[str, ModelFacts]:
    return {p: f for p, f in BUILTIN_FACTS.items() if p.startswith(prefix)}


_TEXT = str | None
_SECONDS = float | None
_TIMEOUTS = {
    "timeout": Option(_SECONDS, None, "seconds a request may take"),
    "connect_timeout": Option(_SECONDS, None, "seconds to connect"),
}
#: The trained checkers' options (hf:, onnx:): their calibration and how they read a source.
_CHECKER = {
    "threshold": Option(float | None, None, "P(unsupported) at or above which a claim is flagged"),
    "unsure_low": Option(float | None, None, "the unsure band's lower end: a verdict inside it is a guess"),
    "unsure_high": Option(float | None, None, "the unsure band's upper end"),
    "entailment": Option(int | None, None, "the index of the entailment label, where config.json does not say"),
    "window": Option(int | None, None, "tokens of source per window"),
    "batch_size": Option(int, 8, "pairs scored at once"),
}
#: The trace formats' option.
_TRACES = {"outputs": Option(str, "final", "final: only a trace's final answer; all: every LLM output")}


def _trace_format(name: str, about: str) -> InputFormatPart:
    """A trace format, found by its content: ``<name>_rows`` and ``sniff_<name>`` in runs/traces/<name>.py."""
    module = f"hallumeasure.runs.traces.{name}"
    return InputFormatPart(name, f"{module}:{name}_rows", about, options=_TRACES, sniff=f"{module}:sniff_{name}")


BUILTIN_PARTS: tuple[Part[Any], ...] = (
    # Providers: `<name>:<model>` specs.
    ProviderPart(
        "anthropic",
        "hallumeasure.models.anthropic:AnthropicAPI",
        "Anthropic Messages API (ANTHROPIC_API_KEY)",
        options={
            "api_key": Option(_TEXT, None, "the key, in code only (else ANTHROPIC_API_KEY)"),
            "base_url": Option(_TEXT, None, "a gateway in front of the API"),
            **_TIMEOUTS,
        },
        facts=_facts("anthropic:"),
    ),
    ProviderPart(
        "bedrock",
        "hallumeasure.models.bedrock:BedrockAPI",
        "Amazon Bedrock Converse API (AWS credentials)",
        options={
            "region_name": Option(_TEXT, None, "the AWS region (else the environment's)"),
            "endpoint_url": Option(_TEXT, None, "a Bedrock endpoint other than the region's"),
            "profile": Option(_TEXT, None, "the AWS profile to take credentials from"),
            "session": Option(Any, None, "a boto3.Session, in code only"),
            "max_workers": Option(int | None, None, "threads calling Bedrock at once"),
            "connect_timeout": Option(_SECONDS, None, "seconds to connect"),
            "read_timeout": Option(_SECONDS, None, "seconds to wait for an answer"),
            "batch_s3_uri": Option(_TEXT, None, "the S3 folder of batch jobs (--batch)"),
            "batch_role_arn": Option(_TEXT, None, "the IAM role batch jobs run as (--batch)"),
            "batch_min_requests": Option(int, 100, "the fewest requests sent as a batch job"),
        },
        facts=_facts("bedrock:"),
    ),
    ProviderPart(
        "openai",
        "hallumeasure.models.openai:OpenAIAPI",
        "OpenAI Chat Completions, or Azure OpenAI with azure_endpoint= (OPENAI_API_KEY / AZURE_OPENAI_API_KEY)",
        options={
            "base_url": Option(_TEXT, None, "an OpenAI-compatible server (vLLM, Ollama, a gateway)"),
            "azure_endpoint": Option(_TEXT, None, "an Azure OpenAI resource: the model is its deployment"),
            "api_version": Option(_TEXT, None, "the Azure OpenAI API version"),
            "strict": Option(bool, True, "ask for structured output by a strict JSON schema"),
            "reasoning_effort": Option(_TEXT, None, "low, medium or high, for reasoning models"),
            "context_window": Option(
                int | None, None, "the model's window in tokens (default: what the server says, else the facts)"
            ),
            **_TIMEOUTS,
        },
        extra="openai",
        facts=_facts("openai:"),
    ),
    ProviderPart(
        "langchain",
        "hallumeasure.models.langchain:LangChainAPI",
        "any LangChain chat model, by import path (langchain_openai:ChatOpenAI?model=...)",
        open_options=True,  # the chat model's own keywords: the class checks them
    ),
    ProviderPart(
        "fake",
        "hallumeasure.detectors.scripted:scripted_fake_api",
        "scripted stand-in for an LLM: answers every prompt of the package, calls nothing",
        options={
            "responder": Option(Any, None, "a function that answers each request, in code only"),
            "script": Option(Any, None, "the answers to give in turn, in code only"),
            "demo_claims": Option(bool | None, None, "split responses into demo claims"),
        },
        scripted=True,
        needs_model=False,
        facts=_facts("fake"),
    ),
    # Keyless judges and extractors.
    JudgePart(
        "offline",
        "hallumeasure.judges.offline:OfflineJudge",
        "keyless rule-and-trees judge (no provider, no key)",
        options={"threshold": Option(float, 0.65, "calibrated P(unsupported) at or above which a claim is flagged")},
        quality=QUALITY,
        decision=OFFLINE_RULES,
        facts={"offline": BUILTIN_FACTS["offline"]},
    ),
    JudgePart(
        "nli",
        "hallumeasure.judges.nli.judge:NliClaimJudge",
        "keyless small entailment model (int8 ONNX on CPU)",
        options={"threshold": Option(float, 0.5, "P(unsupported) at or above which a claim is flagged, in (0, 1)")},
        quality=QUALITY,
        decision=NLI_RULES,
        extra="nli",
    ),
    JudgePart(
        "offline+nli",
        "hallumeasure.judges.nli.offline_nli:offline_with_nli",
        "the offline judge, asking the entailment model where it is unsure",
        quality=QUALITY,
        decision=OFFLINE_RULES,
        extra="nli",
    ),
    # Judge families: `<name>:<argument>` specs (trained checkers the user brings; hallumeasure has not measured them).
    JudgeFamilyPart(
        "hf",
        "hallumeasure.judges.checkers.hf:hf_checker",
        "a trained entailment checker through transformers (MiniCheck, HHEM, any NLI cross-encoder)",
        argument="<path or hub id>",
        options={
            **_CHECKER,
            "trust_remote_code": Option(bool, False, "run the model repository's own code (only if you trust it)"),
            "device": Option(str, "cpu", "the torch device (cpu, cuda, mps)"),
        },
        extra="hf",
    ),
    JudgeFamilyPart(
        "onnx",
        "hallumeasure.judges.checkers.onnx:onnx_checker",
        "an entailment checker exported to ONNX, run by onnxruntime (no torch)",
        argument="<folder>",
        options={**_CHECKER, "threads": Option(int | None, None, "onnxruntime's threads")},
        extra="onnx",
    ),
    ProviderJudgePart(
        "minicheck",
        "hallumeasure.judges.checkers.minicheck:MiniCheckJudge",
        "a generative checker (Bespoke-MiniCheck) served behind a provider: minicheck:openai:<model>?base_url=...",
    ),
    ExtractorPart(
        "offline", "hallumeasure.judges.offline:OfflineExtractor", "keyless sentence-and-clause claim splitter"
    ),
    # Detectors.
    DetectorPart(
        "claims", "hallumeasure.detectors.stages:claims_stages", "claim extractor + claim judge (HalluMeasure)"
    ),
    DetectorPart("conli", "hallumeasure.detectors.stages:conli_stages", "sentence NLI, then entity checks (CoNLI)"),
    DetectorPart(
        "cascade", "hallumeasure.detectors.stages:cascade_stages", "keyless first pass, LLM for what it flags"
    ),
    # Rewriters.
    RewriterPart(
        "offline",
        "hallumeasure.detectors.rewrite:OfflineRewriter",
        "rule-based rewriter: substitutes or deletes",
        keyless=True,
    ),
    RewriterPart("llm", "hallumeasure.detectors.rewrite:LLMRewriter", "LLM rewriter (any provider spec)"),
    # Input formats.
    InputFormatPart(
        "jsonl",
        "hallumeasure.runs.inputs:jsonl_rows",
        "JSON Lines, one sample per line",
        suffixes=(".jsonl", ".ndjson", ".json"),
    ),
    InputFormatPart(
        "csv", "hallumeasure.runs.inputs:csv_rows", "CSV or TSV with a header row", suffixes=(".csv", ".tsv")
    ),
    InputFormatPart(
        "parquet", "hallumeasure.runs.inputs:parquet_rows", "Parquet (needs pyarrow)", suffixes=(".parquet",)
    ),
    # Trace formats: found by their content (sniff); see runs/traces/spans.py.
    _trace_format("otlp", "OTLP JSON traces with GenAI semantic conventions (collector file exporter)"),
    _trace_format("openinference", "OpenInference spans as Arize Phoenix exports them (JSONL, span DataFrame)"),
    _trace_format("langfuse", "Langfuse trace or observation export (JSON)"),
    _trace_format("mlflow", "MLflow traces (mlflow.search_traces, Trace.to_json)"),
    # Exporters: target() -> Exporter; `hallumeasure export RUN --to <name>` (see export/).
    ExporterPart(
        "otlp-json",
        "hallumeasure.export.otlp_json:OtlpJsonExporter",
        "OpenTelemetry gen_ai.evaluation.result events written to a file as OTLP JSON logs",
    ),
    ExporterPart(
        "otlp-http",
        "hallumeasure.export.otlp_http:OtlpHttpExporter",
        "the same events sent to a collector over OTLP/HTTP",
        extra="otel",
    ),
    ExporterPart(
        "phoenix",
        "hallumeasure.export.phoenix:PhoenixExporter",
        "span annotations logged to a running Phoenix",
        extra="phoenix",
    ),
    ExporterPart(
        "mlflow",
        "hallumeasure.export.mlflow:MlflowExporter",
        "feedback assessments logged on each MLflow trace",
        extra="mlflow",
    ),
    ExporterPart(
        "lettucedetect",
        "hallumeasure.export.lettucedetect:LettuceDetectExporter",
        "unsupported spans in LettuceDetect's sample layout (one JSONL file)",
    ),
    ExporterPart(
        "ragtruth",
        "hallumeasure.export.ragtruth:RagTruthExporter",
        "unsupported spans in RAGTruth's layout (response.jsonl and source_info.jsonl)",
    ),
    ExporterPart(
        "parquet",
        "hallumeasure.export.parquet:ParquetExporter",
        "the run in Parquet form (a folder or object storage), which Run.load and audit read",
        extra="parquet",
    ),
)
