"""The model layer under stress: hangs, slow calls and high concurrency, on the local simulators.

    PYTHONPATH=. .venv/bin/python benchmarks/stress.py            # all cases, writes stress.md/.json
    PYTHONPATH=. .venv/bin/python benchmarks/stress.py --quick    # one provider, fewer cases

Each case measures ``examples/samples.jsonl`` (LLM extractor and cot-one judge, 8 samples in
flight, as ``measure --concurrency 8``) against a simulator of Anthropic, Bedrock or an
OpenAI-compatible server (through ``langchain_openai.ChatOpenAI``). The simulator runs in this
process and the measurement in a child process, so that a call the client gave up on is still held
by the server, and the child's exit time shows whether a hung call keeps the process alive.

Columns: requests sent, against the distinct requests needed (distinct request bodies: a retry of a
hung call repeats its body); error rows (claims and responses); the wall time of the measurement;
how long the process took to exit after its last answer; billed input in input-token equivalents
(uncached input + 1.25 x cache writes + 0.1 x cache reads, the list-price weights of Anthropic and
Bedrock; the OpenAI-compatible simulator caches nothing).

Cases (``T`` is ``--timeout``):
* ``clean``: a fast, healthy server (the baseline of distinct requests);
* ``hang 1`` and ``hang N``: the first 1 or N (= ``--max-concurrency``) model calls never answer;
* ``slow kxT``: the first N calls answer only after k x T seconds (k = 1, 2, 4);
* ``slow server mc=8/16/64``: every call takes 0.4 to 0.6 x T, at ``--max-concurrency`` 8, 16, 64;
* ``500s, warm-up retried`` / ``500s, warm-up once``: 20% of calls answer 500, with the cache
  warm-up retried within one deadline (the default) or sent once (``warm_up_retries=0``, as before).

Crash and resume (``--resume-only`` runs just these): ``hallumeasure measure`` in a subprocess on
30 SummEval-sized samples (Anthropic simulator, ``--concurrency 4 --max-concurrency 8``), killed
with SIGKILL once 25%, 50% or 75% of the results are stored, then run again with ``--resume``; the
requests of both runs together against those of a clean run. A request whose answer arrived before
the kill is in the request cache, so the resume pays only for the calls whose answers never came.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "examples" / "samples.jsonl"
OUT = Path(__file__).resolve().parent / "results"
MODEL_PATHS = ("/v1/messages", "/converse", "/chat/completions")


def _api(provider: str, url: str) -> Any:
    if provider == "anthropic":
        from hallumeasure.models.anthropic import AnthropicAPI

        api: Any = AnthropicAPI("claude-sonnet-4-5", api_key="sim-key", base_url=url)
    elif provider == "bedrock":
        import boto3

        from hallumeasure.models.bedrock import BedrockAPI

        session = boto3.Session(aws_access_key_id="sim", aws_secret_access_key="sim", region_name="us-east-1")
        api = BedrockAPI("anthropic.claude-sonnet-4-5-v1:0", session=session, endpoint_url=url)
    else:
        from hallumeasure.models.langchain import LangChainAPI

        return LangChainAPI("langchain_openai:ChatOpenAI", model="local", base_url=url, api_key="unused")
    api.min_cache_tokens = 8  # the simulators cache prefixes from 8 tokens on
    return api


async def _child(args: argparse.Namespace) -> dict[str, Any]:
    """Measure the samples once; what the parent cannot see from the server."""
    from hallumeasure.core.labels import Policy
    from hallumeasure.core.types import Mode
    from hallumeasure.judges.llm.classify import LLMJudge
    from hallumeasure.judges.llm.extract import LLMExtractor
    from hallumeasure.models.model import Model
    from hallumeasure.pipeline.run import measure_samples
    from hallumeasure.runs.inputs import load_samples

    samples = load_samples(SAMPLES).samples
    model = Model(_api(args.provider, args.url), timeout=args.timeout, max_concurrency=args.max_concurrency)
    retries = None if args.warm_up_retries < 0 else args.warm_up_retries
    judge = LLMJudge(model, Mode.COT_ONE, warm_up_retries=retries)
    started = time.perf_counter()
    results = await measure_samples(samples, LLMExtractor(model), judge, Policy(), concurrency=8)
    wall = time.perf_counter() - started
    await model.aclose()
    return {
        "wall_s": round(wall, 2),
        "error_rows": sum(r.n_errors + (1 if r.error else 0) for r in results),
        "retries": model.retries,
        "shared": model.shared,
        "done_at": time.time(),
    }


def _server(provider: str, **options: Any) -> Any:
    from hallumeasure.testing import AnthropicServer, BedrockServer, OpenAIServer
    from hallumeasure.testing.accounting import PromptCache

    if provider == "openai":
        return OpenAIServer(**options)
    cls = AnthropicServer if provider == "anthropic" else BedrockServer
    return cls(prompt_cache=PromptCache(min_tokens=8), **options)


def _slow_server(timeout: float) -> Any:
    def latency(call: Any, tokens: Any) -> float:
        digest = hashlib.sha256(repr(call.segments).encode()).digest()
        return timeout * (0.4 + 0.2 * digest[0] / 255)

    return latency


def cases(timeout: float, quick: bool) -> list[tuple[str, int, dict[str, Any], int]]:
    """(name, max concurrency, simulator options, warm-up retries: -1 for the default)."""
    from hallumeasure.testing import Fault, FaultPlan

    n = 8
    out: list[tuple[str, int, dict[str, Any], int]] = [("clean", n, {"latency": 0.05}, -1)]
    out.append(("hang 1", n, {"latency": 0.05, "faults": FaultPlan.at({0: Fault.READ_TIMEOUT}, hang=120)}, -1))
    hung = dict.fromkeys(range(n), Fault.READ_TIMEOUT)
    out.append((f"hang {n}", n, {"latency": 0.05, "faults": FaultPlan.at(hung, hang=120)}, -1))
    for k in (1, 2) if quick else (1, 2, 4):
        out.append((f"slow {k}xT", n, {"latency": 0.05, "faults": FaultPlan.at(hung, hang=k * timeout)}, -1))
    for mc in (8, 64) if quick else (8, 16, 64):
        out.append((f"slow server mc={mc}", mc, {"latency": _slow_server(timeout)}, -1))
    # A plan counts the bodies it has seen: each case gets its own, so that both draw the same faults.
    for name, retries in (("500s, warm-up retried", -1), ("500s, warm-up once", 0)):
        fivehundreds = FaultPlan.random(0.2, [Fault.SERVER_ERROR], seed=7)
        out.append((name, n, {"latency": 0.05, "faults": fivehundreds}, retries))
    return out


def run_case(provider: str, name: str, mc: int, options: dict[str, Any], warm: int, timeout: float) -> dict[str, Any]:
    with _server(provider, **options) as srv:
        url = srv.endpoint_url if provider == "bedrock" else srv.base_url
        command = [sys.executable, __file__, "--child", provider, url, str(timeout), str(mc), str(warm)]
        started = time.time()
        done = subprocess.run(command, capture_output=True, text=True, timeout=900, cwd=REPO)
        ended = time.time()
        if done.returncode != 0:
            raise RuntimeError(f"{provider} {name}: the child failed:\n{done.stderr[-3000:]}")
        child = json.loads(done.stdout.strip().splitlines()[-1])
        bodies = [
            hashlib.sha256(json.dumps(r.body, sort_keys=True).encode()).hexdigest()
            for r in srv.requests
            if r.method == "POST" and r.path.endswith(MODEL_PATHS)
        ]
        billed = srv.billed()
    return {
        "provider": provider,
        "case": name,
        "max_concurrency": mc,
        "timeout": timeout,
        "requests": len(bodies),
        "distinct": len(set(bodies)),
        "error_rows": child["error_rows"],
        "retries": child["retries"],
        "shared": child["shared"],
        "wall_s": child["wall_s"],
        "exit_after_s": round(ended - child["done_at"], 2),
        "process_s": round(ended - started, 2),
        "billed_input": round(billed.input_tokens + 1.25 * billed.cache_write_tokens + 0.1 * billed.cache_read_tokens),
    }


NOTES = """
Notes:

- Every case measures the 16 samples of `examples/samples.jsonl` (cot-one: one extraction call, one
  cache warm-up and one call per claim for each response; the OpenAI-compatible path caches nothing,
  so it sends no warm-ups). `--timeout` is 5 s and 8 samples are in flight (`--concurrency 8`).
- "requests / distinct": distinct request bodies are the requests the run needs; in the hang and
  slow cases each of the first calls is sent twice (the hung attempt and its retry), which is the
  whole difference. A healthy server gets each distinct request once (identical requests in flight
  are sent once; a prefix warmed a moment ago is not warmed again).
- "exit after last answer": from the child printing its result to the child process ending. It
  includes the interpreter's own shutdown (0.2 to 2 s on this shared 2-core machine, the clean rows
  included); a call still hung at the server (held 120 s) adds nothing to it.
- Slow calls at 1x, 2x and 4x the timeout end the same way as hangs: the attempt is abandoned at the
  deadline, its connection or thread is let go, and the retry is answered.
- Warm-ups under 20% 500s: a failed warm-up is retried within one `--timeout` (the default); if it
  still fails, the response falls back to its first claim alone, which writes the cache before the
  other claims go. Because of that fallback, no claim pays full input price either way, and the
  retry's own cost shows: billed input is 0.3% (Anthropic) and 0.8% (Bedrock) higher with retried
  warm-ups than with warm-ups sent once. What a retried warm-up buys is that the claims fan out at
  once instead of after the first claim; at these latencies the wall times do not tell the two apart.
- Crash and resume (the section above): "sent again" are the requests of the killed run that the
  resume sent once more, all of them in flight at the kill; "answered before the kill" are those the
  simulator had finished answering (its last byte written) before the SIGKILL, at most 43 ms before
  it. Every answer the client has read is committed to the request cache at once (before its sample
  is complete; WAL, no fsync), so what is paid again is what never reached the cache: the 4 to 8
  calls in flight, at most max-concurrency. At 30 samples (167 requests) that is 1.03 to 1.05x, not
  the 1.01x issue #38 asked for; the floor is set by SIGKILL itself (a process killed cannot read
  what is still in its sockets), so 1.01x would need fewer calls in flight, or the provider's answer
  kept outside the process. P4 of `benchmarks/perf.py` measures the same at 40 and 60 samples.
"""


# --- crash and resume of the CLI ------------------------------------------------------------------------

RESUME_SAMPLES = 30
RESUME_KILLS = (0.25, 0.5, 0.75)


def _body_digest(record: Any) -> str:
    return hashlib.sha256(repr(record.call.segments).encode() + repr(record.call.tool).encode()).hexdigest()


def resume_cases(n_samples: int = RESUME_SAMPLES, kills: tuple[float, ...] = RESUME_KILLS) -> list[dict[str, Any]]:
    """A clean CLI run, then one killed at each fraction of ``kills`` and resumed: requests of each."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from cli_resume import MeasureCLI, stored
    from perf_data import summeval_sized

    from hallumeasure.testing import AnthropicServer
    from hallumeasure.testing.accounting import PromptCache

    samples, source = summeval_sized(n_samples, seed=31)
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        AnthropicServer(latency=0.05, prompt_cache=PromptCache(min_tokens=8)) as srv,
    ):
        tmp_path = Path(tmp)
        cli = MeasureCLI.on(srv, tmp_path, samples, "anthropic:claude-sonnet-4-5")
        clean, _ = cli.run(tmp_path / "clean", "cache-clean")
        for fraction in kills:
            name = f"kill at {fraction:.0%}"
            before = len(srv.log)
            run_dir, cache = tmp_path / name.replace(" ", "-").replace("%", ""), f"cache-{fraction}"
            killed_at = cli.kill_once_stored(run_dir, cache, round(n_samples * fraction))
            stored_at_kill = stored(run_dir)
            first = list(srv.log[before:])
            resumed, _ = cli.run(run_dir, cache, "--resume")
            second = srv.log[before + len(first) :]
            asked = {_body_digest(r) for r in first}
            repeated = [r for r in second if _body_digest(r) in asked]
            answered_before = {
                _body_digest(r) for r in first if r.replied is not None and r.replied <= killed_at and r.status == 200
            }
            rows.append(
                {
                    "case": name,
                    "samples": n_samples,
                    "source": source,
                    "stored_at_kill": stored_at_kill,
                    "clean_requests": clean,
                    "before_kill": len(first),
                    "after_resume": resumed,
                    "ratio": round((len(first) + resumed) / clean, 4),
                    "repeated": len(repeated),
                    "repeated_answered_before_kill": sum(_body_digest(r) in answered_before for r in repeated),
                    "final_results": stored(run_dir),
                    "repeated_detail": [
                        [
                            r.tool_name,
                            "warm-up" in repr(r.call.segments),
                            None
                            if (p := next((q for q in first if _body_digest(q) == _body_digest(r)), None)) is None
                            or p.replied is None
                            else round(killed_at - p.replied, 3),
                        ]
                        for r in repeated
                    ],
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def _resume_lines(resume: list[dict[str, Any]]) -> list[str]:
    if not resume:
        return []
    lines = [
        "",
        f"## Crash and resume ({resume[0]['samples']} samples; {resume[0]['source']})",
        "",
        "| case | stored at kill | requests before kill + after resume | clean run | ratio | "
        "sent again | of those answered before the kill |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in resume:
        lines.append(
            f"| {r['case']} | {r['stored_at_kill']} / {r['samples']} | {r['before_kill']} + {r['after_resume']} | "
            f"{r['clean_requests']} | {r['ratio']:.3f} | {r['repeated']} | {r['repeated_answered_before_kill']} |"
        )
    worst = max(r["ratio"] for r in resume)
    lines += [
        "",
        f"Quality bar (issue #38): resume after a kill pays at most 1.01x the requests of a clean run: "
        f"{'met' if worst <= 1.01 else 'MISSED'} (worst {worst:.3f}x).",
    ]
    return lines


def write(rows: list[dict[str, Any]], command: str, resume: list[dict[str, Any]] | None = None) -> None:
    (OUT / "stress.json").write_text(
        json.dumps({"command": command, "rows": rows, "resume": resume or []}, indent=1) + "\n"
    )
    lines = [
        "# Stress: hangs, slow calls and concurrency",
        "",
        f"Command: `{command}` (loopback simulators only; see the script's docstring for the cases).",
        "",
        "| provider | case | max conc. | requests / distinct | ratio | error rows | retries | wall s | "
        "exit after last answer s | billed input |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        ratio = r["requests"] / r["distinct"] if r["distinct"] else 0.0
        lines.append(
            f"| {r['provider']} | {r['case']} | {r['max_concurrency']} | {r['requests']} / {r['distinct']} | "
            f"{ratio:.2f} | {r['error_rows']} | {r['retries']} | {r['wall_s']} | {r['exit_after_s']} | "
            f"{r['billed_input']} |"
        )
    lines += ["", "Quality bar (issue #27), checked on the rows above:", ""]
    for r in rows:
        ratio = r["requests"] / r["distinct"] if r["distinct"] else 0.0
        if r["case"].startswith("slow server"):
            ok = r["error_rows"] == 0 and ratio <= 1.05
            lines.append(
                f"- {r['provider']}, {r['case']}: 0 error rows and requests <= 1.05x distinct: "
                f"{'met' if ok else 'MISSED'} ({r['error_rows']} error rows, {ratio:.2f}x)"
            )
        elif r["case"] == f"hang {r['max_concurrency']}":
            ok = r["error_rows"] == 0 and r["exit_after_s"] <= 3 * r["timeout"]
            lines.append(
                f"- {r['provider']}, {r['case']} with --timeout {r['timeout']:g}: 0 error rows and exit within "
                f"3x the timeout after the last answer: {'met' if ok else 'MISSED'} "
                f"({r['error_rows']} error rows, exit {r['exit_after_s']} s after)"
            )
    warm = {(r["provider"], r["case"]): r for r in rows if r["case"].startswith("500s")}
    for provider in dict.fromkeys(r["provider"] for r in rows):
        retried, once = warm.get((provider, "500s, warm-up retried")), warm.get((provider, "500s, warm-up once"))
        if retried and once and once["billed_input"]:
            change = retried["billed_input"] / once["billed_input"] - 1
            lines.append(
                f"- {provider}, 20% 500s: billed input with warm-ups retried {retried['billed_input']} against "
                f"{once['billed_input']} with warm-ups sent once ({change:+.1%})"
            )
    lines += _resume_lines(resume or [])
    lines += ["", *NOTES.strip("\n").splitlines()]
    (OUT / "stress.md").write_text("\n".join(lines) + "\n")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        provider, url, timeout, mc, warm = sys.argv[2:7]
        ns = argparse.Namespace(
            provider=provider, url=url, timeout=float(timeout), max_concurrency=int(mc), warm_up_retries=int(warm)
        )
        print(json.dumps(asyncio.run(_child(ns))))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=5.0)
    parser.add_argument("--providers", default="anthropic,bedrock,openai")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="", help="run only cases whose name contains this")
    parser.add_argument("--rewrite", action="store_true", help="rewrite stress.md from stress.json, measuring nothing")
    parser.add_argument(
        "--resume-only", action="store_true", help="measure only crash and resume; keep the other rows as saved"
    )
    parser.add_argument("--no-resume", action="store_true", help="leave out crash and resume")
    args = parser.parse_args()
    saved = json.loads((OUT / "stress.json").read_text()) if (OUT / "stress.json").exists() else {}
    if args.rewrite:
        write(saved["rows"], saved["command"], saved.get("resume"))
        return
    if args.resume_only:
        write(saved.get("rows", []), saved.get("command", ""), resume_cases())
        return
    resume = [] if args.no_resume else resume_cases()
    rows = []
    for provider in args.providers.split(","):
        for name, mc, options, warm in cases(args.timeout, args.quick):
            if args.only and args.only not in name:
                continue
            row = run_case(provider, name, mc, options, warm, args.timeout)
            print(json.dumps(row), flush=True)
            rows.append(row)
    write(rows, " ".join(["PYTHONPATH=. python benchmarks/stress.py", *sys.argv[1:]]), resume)


if __name__ == "__main__":
    main()
