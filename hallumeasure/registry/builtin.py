"""The parts that ship with hallumeasure. Third-party parts come from entry points (``registry.plugins``).

A new built-in part is one row here; its code is imported only when a run first uses it.
"""

from __future__ import annotations

from hallumeasure.registry.facts import BUILTIN_FACTS, ModelFacts
from hallumeasure.registry.parts import Part, PartKind

_P, _J, _E = PartKind.PROVIDER, PartKind.JUDGE, PartKind.EXTRACTOR
_D, _R, _I = PartKind.DETECTOR, PartKind.REWRITER, PartKind.INPUT_FORMAT
_X = PartKind.EXPORTER


#: Where the keyless judges' measured quality is published.
QUALITY = "docs/quality.md"


def _facts(prefix: str) -> dict[str, ModelFacts]:
    return {p: f for p, f in BUILTIN_FACTS.items() if p.startswith(prefix)}


BUILTIN_PARTS: tuple[Part, ...] = (
    # Providers: `<name>:<model>` specs; the class is called as cls(model, **options).
    Part(
        _P,
        "anthropic",
        "hallumeasure.models.anthropic:AnthropicAPI",
        "Anthropic Messages API (ANTHROPIC_API_KEY)",
        facts=_facts("anthropic:"),
    ),
    Part(
        _P,
        "bedrock",
        "hallumeasure.models.bedrock:BedrockAPI",
        "Amazon Bedrock Converse API (AWS credentials)",
        facts=_facts("bedrock:"),
    ),
    Part(
        _P,
        "openai",
        "hallumeasure.models.openai:OpenAIAPI",
        "OpenAI Chat Completions, or Azure OpenAI with azure_endpoint= (OPENAI_API_KEY / AZURE_OPENAI_API_KEY)",
        extra="openai",
        facts=_facts("openai:"),
    ),
    Part(
        _P,
        "langchain",
        "hallumeasure.models.langchain:LangChainAPI",
        "any LangChain chat model, by import path (langchain_openai:ChatOpenAI?model=...)",
    ),
    Part(
        _P,
        "fake",
        "hallumeasure.detectors.scripted:scripted_fake_api",
        "scripted stand-in for an LLM: answers every prompt of the package, calls nothing",
        scripted=True,
        needs_model=False,
        facts=_facts("fake"),
    ),
    # Keyless judges and extractors: called as target(**options).
    Part(
        _J,
        "offline",
        "hallumeasure.judges.offline:OfflineJudge",
        "keyless rule-and-trees judge (no provider, no key)",
        keyless=True,
        quality=QUALITY,
        facts={"offline": BUILTIN_FACTS["offline"]},
    ),
    Part(
        _J,
        "nli",
        "hallumeasure.judges.nli.judge:NliClaimJudge",
        "keyless small entailment model (int8 ONNX on CPU)",
        keyless=True,
        quality=QUALITY,
        extra="nli",
    ),
    Part(
        _J,
        "offline+nli",
        "hallumeasure.judges.nli.offline_nli:offline_with_nli",
        "the offline judge, asking the entailment model where it is unsure",
        keyless=True,
        quality=QUALITY,
        extra="nli",
    ),
    # Judge families: `<name>:<argument>` specs (trained checkers the user brings; hallumeasure has not measured them).
    Part(
        _J,
        "hf",
        "hallumeasure.judges.checkers.hf:hf_checker",
        "a trained entailment checker through transformers (MiniCheck, HHEM, any NLI cross-encoder)",
        keyless=True,
        extra="hf",
        argument="<path or hub id>",
    ),
    Part(
        _J,
        "onnx",
        "hallumeasure.judges.checkers.onnx:onnx_checker",
        "an entailment checker exported to ONNX, run by onnxruntime (no torch)",
        keyless=True,
        extra="onnx",
        argument="<folder>",
    ),
    Part(
        _J,
        "minicheck",
        "hallumeasure.judges.checkers.minicheck:MiniCheckJudge",
        "a generative checker (Bespoke-MiniCheck) served behind a provider: minicheck:openai:<model>?base_url=...",
        argument="<provider:model>",
    ),
    Part(
        _E,
        "offline",
        "hallumeasure.judges.offline:OfflineExtractor",
        "keyless sentence-and-clause claim splitter",
        keyless=True,
    ),
    # Detectors: target(request: StageRequest) -> (extractor, judge).
    Part(_D, "claims", "hallumeasure.detectors.stages:claims_stages", "claim extractor + claim judge (HalluMeasure)"),
    Part(_D, "conli", "hallumeasure.detectors.stages:conli_stages", "sentence NLI, then entity checks (CoNLI)"),
    Part(_D, "cascade", "hallumeasure.detectors.stages:cascade_stages", "keyless first pass, LLM for what it flags"),
    # Rewriters: target(model: Model | None) -> Rewriter.
    Part(
        _R,
        "offline",
        "hallumeasure.detectors.rewrite:OfflineRewriter",
        "rule-based rewriter: substitutes or deletes",
        keyless=True,
    ),
    Part(_R, "llm", "hallumeasure.detectors.rewrite:LLMRewriter", "LLM rewriter (any provider spec)"),
    # Input formats: target(path, *, delimiter, on_header) -> iterator of (row number, record or problem).
    Part(
        _I,
        "jsonl",
        "hallumeasure.runs.inputs:jsonl_rows",
        "JSON Lines, one sample per line",
        suffixes=(".jsonl", ".ndjson", ".json"),
    ),
    Part(_I, "csv", "hallumeasure.runs.inputs:csv_rows", "CSV or TSV with a header row", suffixes=(".csv", ".tsv")),
    Part(_I, "parquet", "hallumeasure.runs.inputs:parquet_rows", "Parquet (needs pyarrow)", suffixes=(".parquet",)),
    # Trace formats: found by their content (sniff); option outputs=final|all (see runs/traces/spans.py).
    Part(
        _I,
        "otlp",
        "hallumeasure.runs.traces.otlp:otlp_rows",
        "OTLP JSON traces with GenAI semantic conventions (collector file exporter)",
        sniff="hallumeasure.runs.traces.otlp:sniff_otlp",
    ),
    Part(
        _I,
        "openinference",
        "hallumeasure.runs.traces.openinference:openinference_rows",
        "OpenInference spans as Arize Phoenix exports them (JSONL, span DataFrame)",
        sniff="hallumeasure.runs.traces.openinference:sniff_openinference",
    ),
    Part(
        _I,
        "langfuse",
        "hallumeasure.runs.traces.langfuse:langfuse_rows",
        "Langfuse trace or observation export (JSON)",
        sniff="hallumeasure.runs.traces.langfuse:sniff_langfuse",
    ),
    Part(
        _I,
        "mlflow",
        "hallumeasure.runs.traces.mlflow:mlflow_rows",
        "MLflow traces (mlflow.search_traces, Trace.to_json)",
        sniff="hallumeasure.runs.traces.mlflow:sniff_mlflow",
    ),
    # Exporters: target() -> Exporter; `hallumeasure export RUN --to <name>` (see export/).
    Part(
        _X,
        "otlp-json",
        "hallumeasure.export.otlp_json:OtlpJsonExporter",
        "OpenTelemetry gen_ai.evaluation.result events written to a file as OTLP JSON logs",
    ),
    Part(
        _X,
        "otlp-http",
        "hallumeasure.export.otlp_http:OtlpHttpExporter",
        "the same events sent to a collector over OTLP/HTTP",
        extra="otel",
    ),
    Part(
        _X,
        "phoenix",
        "hallumeasure.export.phoenix:PhoenixExporter",
        "span annotations logged to a running Phoenix",
        extra="phoenix",
    ),
    Part(
        _X,
        "mlflow",
        "hallumeasure.export.mlflow:MlflowExporter",
        "feedback assessments logged on each MLflow trace",
        extra="mlflow",
    ),
    Part(
        _X,
        "lettucedetect",
        "hallumeasure.export.lettucedetect:LettuceDetectExporter",
        "unsupported spans in LettuceDetect's sample layout (one JSONL file)",
    ),
    Part(
        _X,
        "ragtruth",
        "hallumeasure.export.ragtruth:RagTruthExporter",
        "unsupported spans in RAGTruth's layout (response.jsonl and source_info.jsonl)",
    ),
)
