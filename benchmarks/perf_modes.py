"""P1 latency and P2 billed input of the classify modes, and P3 throughput under --rpm/--tpm, for both
provider simulators; used by perf.py (which renders and saves them).

P1/P2 run under two latency models side by side: ``fixed`` (the same time for every call, whatever its
tokens: round trips dominate) and ``per-token`` (prefill per uncached input token, a tenth of that per
cached one, generation per output token: typical Sonnet timings). The P2 curve sets the number of
claims per response from 1 to 12 with responses made of that many article sentences.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
from typing import Any

from perf_data import summeval_sized

from hallumeasure.core.labels import Policy
from hallumeasure.core.text import split_sentences
from hallumeasure.core.types import Mode, Sample, Usage
from hallumeasure.judges.llm.classify import LLMJudge
from hallumeasure.judges.llm.extract import LLMExtractor
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.limits import RateLimiter
from hallumeasure.models.model import Model
from hallumeasure.models.pricing import billed_input_tokens, cost, price_for
from hallumeasure.pipeline.run import measure_sample, measure_samples
from hallumeasure.testing import AnthropicServer, BedrockServer, Tokens
from hallumeasure.testing.accounting import Latency, PromptCache, RateLimits

ANTHROPIC_MODEL = "claude-sonnet-4-5"
BEDROCK_MODEL = "anthropic.claude-sonnet-4-5-20250929-v1:0"
PROVIDERS = ("anthropic", "bedrock")
#: Simulated time is real time divided by this, so that the benchmark runs in seconds.
TIME_SCALE = 10
LATENCY_MODELS = {
    # 1,000 ms per call whatever its size, not scaled: at 100 ms the client's own CPU time per call (SDK,
    # JSON, the simulator in the same process) would weigh as much as the simulated latency.
    "fixed": Latency(base=1.0),
    # About 0.6 s to first token, 0.3 ms per uncached prompt token, a tenth of that cached, 16 ms per output token.
    "per-token": Latency(
        base=0.6 / TIME_SCALE,
        per_input_token=0.0003 / TIME_SCALE,
        per_cache_read_token=0.00003 / TIME_SCALE,
        per_output_token=0.016 / TIME_SCALE,
    ),
}
#: Anthropic's documented minimum cacheable prompt for Sonnet 4.5 (Bedrock: the same), and the cache lifetime.
MIN_CACHE_TOKENS, CACHE_TTL = 1024, 300.0
JUDGE_TOOLS = ("record_verdict", "record_verdicts")
MODES = [
    ("cot-one", Mode.COT_ONE, True),
    ("cot-one, no warm-up", Mode.COT_ONE, False),
    ("cot-all", Mode.COT_ALL, True),
    ("nocot-one", Mode.NOCOT_ONE, True),
    ("nocot-all", Mode.NOCOT_ALL, True),
]


def prompt_cache() -> PromptCache:
    return PromptCache(ttl=CACHE_TTL, min_tokens=MIN_CACHE_TOKENS)


def server(provider: str, **options: Any) -> AnthropicServer | BedrockServer:
    return (AnthropicServer if provider == "anthropic" else BedrockServer)(**options)


def api(provider: str, srv: Any) -> AnthropicAPI | BedrockAPI:
    if provider == "anthropic":
        return AnthropicAPI(ANTHROPIC_MODEL, api_key="sk-benchmark-dummy", base_url=srv.base_url)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "benchmark")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "benchmark")
    return BedrockAPI(BEDROCK_MODEL, region_name="us-east-1", endpoint_url=srv.url)


def spec(provider: str) -> str:
    return f"anthropic:{ANTHROPIC_MODEL}" if provider == "anthropic" else f"bedrock:{BEDROCK_MODEL}"


def usage_of(tokens: Tokens) -> Usage:
    return Usage(
        input_tokens=tokens.input_tokens,
        output_tokens=tokens.output_tokens,
        cache_read_tokens=tokens.cache_read_tokens,
        cache_write_tokens=tokens.cache_write_tokens,
    )


async def _close_after(model: Model, coro: Any) -> Any:
    try:
        return await coro
    finally:
        await model.aclose()


# --- one mode on one simulator ------------------------------------------------------------------------


def run_mode(
    provider: str,
    latency: Latency,
    mode: Mode,
    warm: bool,
    warm_up_sample: Sample,
    samples: list[Sample],
    concurrency: int,
) -> dict[str, Any]:
    """Measure ``samples`` in ``mode`` on a fresh simulator, after one untimed response (steady state)."""
    with server(provider, latency=latency, prompt_cache=prompt_cache()) as srv:
        model = Model(api(provider, srv), max_concurrency=64, backoff_base=0.05)
        extractor, judge = LLMExtractor(model), LLMJudge(model, mode, warm_cache=warm)
        gate = asyncio.Semaphore(concurrency)

        async def timed(sample: Sample) -> tuple[Any, float]:
            async with gate:
                started = time.perf_counter()
                result = await measure_sample(sample, extractor, judge, Policy())
                return result, time.perf_counter() - started

        async def run_all() -> list[tuple[Any, float]]:
            # One untimed response first caches the run-wide prefixes (tools + system), as the first
            # seconds of any run do; then the measured responses.
            await measure_sample(warm_up_sample, extractor, judge, Policy())
            srv.log.clear()
            return list(await asyncio.gather(*(timed(s) for s in samples)))

        timed_results = asyncio.run(_close_after(model, run_all()))
        extraction = srv.billed(tool="record_claims")
        classify = sum((srv.billed(tool=t) for t in JUDGE_TOOLS), Tokens())
        judge_calls = [r for r in srv.log if r.tool_name in JUDGE_TOOLS]
        warm_ups = sum(r.call.max_tokens == 1 for r in judge_calls)
        asked = next((r for r in judge_calls if r.call.max_tokens != 1), None)
    results = [r for r, _ in timed_results]
    latencies = sorted(s for _, s in timed_results)
    n = len(samples)
    price = price_for(spec(provider))
    assert price is not None, f"no list price for {spec(provider)}"
    classify_usage, total_usage = usage_of(classify), usage_of(classify + extraction)
    return {
        "claims_per_response": sum(r.n_claims for r in results) / n,
        "error_rows": sum(r.n_errors + (r.error is not None) for r in results),
        "judge_calls_per_response": len(judge_calls) / n,
        "warm_ups_per_response": warm_ups / n,
        "latency_mean": statistics.mean(latencies),
        "latency_p50": latencies[n // 2],
        "latency_p95": latencies[min(n - 1, int(0.95 * n))],
        "classify_tokens_per_response": {
            k: getattr(classify, k) / n
            for k in ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
        },
        "billed_input_classify": float(billed_input_tokens(classify_usage, price)) / n,
        "billed_input_total": float(billed_input_tokens(total_usage, price)) / n,
        "cost_per_1000_total": float(cost(total_usage, price) * 1000 / n),
        # tools, system prompt, context part, claim(s): tokens of one judge request as the simulator counts them
        "pieces": [piece.tokens for piece in asked.call.pieces()] if asked is not None else None,
    }


def modes(n_samples: int, concurrency: int) -> dict[str, Any]:
    """Every mode, both providers, both latency models."""
    warm_up_sample, *samples = summeval_sized(n_samples + 1)[0]
    out: dict[str, Any] = {"samples": n_samples, "source": summeval_sized(1)[1], "concurrency": concurrency, "runs": {}}
    for provider in PROVIDERS:
        for latency_name, latency in LATENCY_MODELS.items():
            configs = MODES if provider == "anthropic" else [m for m in MODES if m[0] in ("cot-one", "cot-all")]
            rows = {
                name: run_mode(provider, latency, mode, warm, warm_up_sample, samples, concurrency)
                for name, mode, warm in configs
            }
            one, every = rows["cot-one"], rows["cot-all"]
            out["runs"][f"{provider}/{latency_name}"] = {
                "provider": provider,
                "latency_model": latency_name,
                "modes": rows,
                "p1_ratio": one["latency_mean"] / every["latency_mean"],
                "p2_ratio_classify": one["billed_input_classify"] / every["billed_input_classify"],
                "p2_ratio_total": one["billed_input_total"] / every["billed_input_total"],
            }
    return out


# --- the P2 curve: claims per response from 1 to 12 -------------------------------------------------------


def with_claims(sample: Sample, k: int, index: int) -> Sample:
    """``sample`` with a response of ``k`` sentences of its own article (the demo extractor makes one claim each)."""
    sentences = [text for text, _ in split_sentences(sample.context) if len(text.split()) >= 6]
    picked = [sentences[i % len(sentences)] for i in range(k)]
    return Sample(id=f"k{k}-{index}", context=sample.context, response=" ".join(picked))


def claims_curve(max_claims: int, per_point: int, provider: str = "anthropic") -> dict[str, Any]:
    """cot-one against cot-all billed input (and latency, under both models) for 1..max_claims claims."""
    base = summeval_sized(per_point + 1, seed=41)[0]
    warm_up_sample, articles = with_claims(base[0], 3, 0), base[1:]
    points = []
    for k in range(1, max_claims + 1):
        samples = [with_claims(a, k, i) for i, a in enumerate(articles)]
        point: dict[str, Any] = {"claims": k}
        for latency_name, latency in LATENCY_MODELS.items():
            one = run_mode(provider, latency, Mode.COT_ONE, True, warm_up_sample, samples, per_point)
            every = run_mode(provider, latency, Mode.COT_ALL, True, warm_up_sample, samples, per_point)
            point[latency_name] = {
                "p1_ratio": one["latency_mean"] / every["latency_mean"],
                "claims_measured": one["claims_per_response"],
            }
            if latency_name == "per-token":  # billing does not depend on the latency model
                point["p2_ratio_classify"] = one["billed_input_classify"] / every["billed_input_classify"]
                point["p2_ratio_total"] = one["billed_input_total"] / every["billed_input_total"]
                point["billed_classify"] = {
                    "cot-one": one["billed_input_classify"],
                    "cot-all": every["billed_input_classify"],
                }
                point["tokens"] = {
                    "cot-one": one["classify_tokens_per_response"],
                    "cot-all": every["classify_tokens_per_response"],
                }
                point["pieces"] = {"cot-one": one["pieces"], "cot-all": every["pieces"]}
        points.append(point)
    return {
        "provider": provider,
        "responses_per_point": per_point,
        "source": summeval_sized(1, seed=41)[1],
        "points": points,
    }


# --- P3 with --rpm and --tpm against the simulators' limiters -----------------------------------------


def throughput_limits(
    provider: str, rpm: float, tpm: float, n_samples: int, *, client_burst: float = 0.5, concurrency: int = 32
) -> dict[str, Any]:
    """cot-one under a client ``RateLimiter(rpm, tpm)`` against a simulator enforcing the same limits
    (requests, and input tokens as Anthropic counts them: uncached input and cache writes)."""
    samples, source = summeval_sized(n_samples, seed=43)
    limits = RateLimits(rpm=rpm, input_tpm=tpm, burst=1.0)
    with server(provider, latency=LATENCY_MODELS["per-token"], prompt_cache=prompt_cache(), limits=limits) as srv:
        limiter = RateLimiter(rpm=rpm, tpm=tpm, burst=client_burst)
        model = Model(
            api(provider, srv), limiter=limiter, max_concurrency=64, max_retries=8, backoff_base=0.05, backoff_max=1.0
        )
        started = time.perf_counter()
        results = asyncio.run(
            _close_after(
                model,
                measure_samples(samples, LLMExtractor(model), LLMJudge(model, Mode.COT_ONE), concurrency=concurrency),
            )
        )
        wall = time.perf_counter() - started
        log = list(srv.log)
    ok = [r for r in log if r.status == 200 and r.usage is not None]
    first, last = min(r.arrived for r in log), max(r.arrived for r in log)
    elapsed = last - first
    counted = sum(r.usage.input_tokens + r.usage.cache_write_tokens for r in ok if r.usage is not None)
    request_bound = rpm / 60 * elapsed + max(1.0, rpm / 60)
    token_bound = tpm / 60 * elapsed + tpm / 60
    lo, hi = first + 0.1 * elapsed, first + 0.9 * elapsed
    steady_tokens = sum(
        r.usage.input_tokens + r.usage.cache_write_tokens for r in ok if r.usage is not None and lo <= r.arrived < hi
    )
    steady_calls = sum(lo <= r.arrived < hi for r in ok)
    return {
        "provider": provider,
        "rpm": rpm,
        "tpm": tpm,
        "samples": n_samples,
        "concurrency": concurrency,
        "source": source,
        "seconds": elapsed,
        "wall_seconds": wall,
        "calls_ok": len(ok),
        "attempts": len(log),
        "throttled": sum(r.status == 429 for r in log),
        "retries": model.retries,
        "lost_rows": sum(r.n_errors + (r.error is not None) for r in results),
        "counted_input_tokens": counted,
        "cache_read_tokens": sum(r.usage.cache_read_tokens for r in ok if r.usage is not None),
        "requests_per_minute": len(ok) / elapsed * 60,
        "tokens_per_minute": counted / elapsed * 60,
        "request_ratio": len(ok) / request_bound,
        "token_ratio": counted / token_bound,
        "steady_request_ratio": steady_calls / (0.8 * elapsed * rpm / 60),
        "steady_token_ratio": steady_tokens / (0.8 * elapsed * tpm / 60),
        "limiter_wait_seconds": limiter.waited,
    }


def limits_matrix(scale: float = 1.0) -> dict[str, Any]:
    """Both providers: T not binding (R binds), and T binding (R high). With T binding, more responses than
    run at once, so that new work keeps arriving while the first ones finish (T binds throughout)."""
    out: dict[str, Any] = {}
    for provider in PROVIDERS:
        out[f"{provider}/rpm-binds"] = throughput_limits(
            provider, rpm=600 * scale, tpm=10_000_000, n_samples=int(30 * scale)
        )
        out[f"{provider}/tpm-binds"] = throughput_limits(
            provider, rpm=6000, tpm=90_000 * scale, n_samples=int(40 * scale), concurrency=12
        )
    return out


# --- rendering -----------------------------------------------------------------------------------------


def _mark(ok: bool) -> str:
    return "met" if ok else "MISSED"


def render_modes(r: dict[str, Any]) -> list[str]:
    lines = [
        f"{r['samples']} responses ({r['source']}), {r['concurrency']} measured at a time; each mode on a fresh "
        "simulator whose run-wide prefix was cached by one untimed response first (steady state). Latency "
        "models: **fixed** = 1,000 ms per call whatever its size, **per-token** = 60 ms + 30 us "
        "per uncached input token + 3 us per cached one + 1.6 ms per output token (typical Sonnet / 10).",
        "",
        "| simulator | latency model | mode | claims / resp | judge calls / resp (warm-ups) | latency mean "
        "(p50, p95) s | billed input / resp (classify) | billed input / resp (total) | error rows |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in r["runs"].values():
        for name, row in run["modes"].items():
            lines.append(
                f"| {run['provider']} | {run['latency_model']} | {name} | {row['claims_per_response']:.2f} | "
                f"{row['judge_calls_per_response']:.2f} ({row['warm_ups_per_response']:.2f}) | "
                f"{row['latency_mean']:.3f} ({row['latency_p50']:.3f}, {row['latency_p95']:.3f}) | "
                f"{row['billed_input_classify']:,.0f} | {row['billed_input_total']:,.0f} | {row['error_rows']} |"
            )
    lines += [
        "",
        "| simulator | latency model | **P1** cot-one / cot-all latency (target <= 1.1) | **P2** billed "
        "input, classify (target <= 1.5) | P2 with extraction |",
        "|---|---|---:|---:|---:|",
    ]
    for run in r["runs"].values():
        lines.append(
            f"| {run['provider']} | {run['latency_model']} | **{run['p1_ratio']:.2f}** "
            f"({_mark(run['p1_ratio'] <= 1.1)}) | {run['p2_ratio_classify']:.2f} "
            f"({_mark(run['p2_ratio_classify'] <= 1.5)}) | {run['p2_ratio_total']:.2f} "
            f"({_mark(run['p2_ratio_total'] <= 1.5)}) |"
        )
    return [*lines, ""]


def render_curve(c: dict[str, Any]) -> list[str]:
    lines = [
        f"{c['provider']} simulator, {c['responses_per_point']} responses per point ({c['source']}; each response "
        "is k sentences of its own article, one claim each), cot-one against cot-all.",
        "",
        "| claims / resp | billed input classify: cot-one | cot-all | **P2 classify** | P2 with extraction | "
        "P1 latency, fixed | P1 latency, per-token |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for p in c["points"]:
        billed = p["billed_classify"]
        lines.append(
            f"| {p['claims']} | {billed['cot-one']:,.0f} | {billed['cot-all']:,.0f} | "
            f"**{p['p2_ratio_classify']:.2f}** | {p['p2_ratio_total']:.2f} | {p['fixed']['p1_ratio']:.2f} | "
            f"{p['per-token']['p1_ratio']:.2f} |"
        )
    return [*lines, ""]


def _fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least-squares intercept and slope."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum((x - mx) ** 2 for x in xs)
    return my - slope * mx, slope


def p2_arithmetic(c: dict[str, Any]) -> dict[str, float]:
    """Why P2 is where it is: the curve's fixed and per-claim parts, where the one-claim input goes, and
    what the run-wide prefix would have to be for the target at 5 claims, within the providers' cache rules.

    In steady state a one-claim response is billed: its warm-up reads the run-wide prefix (tools + system
    prompt, S tokens) at 10% and writes the context part (instruction line + passages, C tokens) at 125%;
    each claim reads S + C at 10% and pays its own claim at 100%. An all-claims response reads its own
    run-wide prefix once, writes C once and pays every claim once. So every token of S costs a one-claim
    response 0.1 x (1 + claims) billed tokens, while a prefix below the cache minimum is not cached at all.
    """
    points = c["points"]
    # Claims as measured: the extractor may split a sentence in two (7.5 claims for 7 sentences).
    ks = [float(p["per-token"].get("claims_measured", p["claims"])) for p in points]
    a1, b1 = _fit(ks, [p["billed_classify"]["cot-one"] for p in points])
    a2, b2 = _fit(ks, [p["billed_classify"]["cot-all"] for p in points])
    one = [p["tokens"]["cot-one"] for p in points]
    # The warm-up writes the context part once per response; reads are S (warm-up) + k x (S + C) (claims).
    context = sum(t["cache_write_tokens"] for t in one) / len(one)
    pieces = _pieces(c, "cot-one")
    if pieces is not None:  # tools + system prompt, as counted
        run_wide = float(pieces[0] + pieces[1])
    else:
        run_wide = sum((t["cache_read_tokens"] - k * context) / (k + 1) for t, k in zip(one, ks, strict=True)) / len(ks)
    run_wide_all = sum(p["tokens"]["cot-all"]["cache_read_tokens"] for p in points) / len(points)
    one_at_5, all_at_5 = a1 + 5 * b1, a2 + 5 * b2
    # With a run-wide prefix of s tokens (still cached): one(k) - 0.1 x (1 + k) x (run_wide - s).
    needed_at_5 = run_wide - (one_at_5 - 1.5 * all_at_5) / (0.1 * 6)
    cut = 0.1 * (run_wide - MIN_CACHE_TOKENS)
    denominator = b1 - cut - 1.5 * b2
    # Below the minimum the run-wide part is not cached: each warm-up writes it at 125% instead of reading it at
    # 10% (1.15 x s more), so 0.6 x (run_wide - s) - 1.15 x s <= one(5) - 1.5 x all(5) must hold.
    uncached_at_5 = (1.5 * all_at_5 - one_at_5 + 0.6 * run_wide) / 1.75
    return {
        "fixed_one": a1,
        "per_claim_one": b1,
        "fixed_all": a2,
        "per_claim_all": b2,
        "claims_at_target": (1.5 * a2 - a1) / (b1 - 1.5 * b2) if b1 > 1.5 * b2 else float("inf"),
        "ratio_at_5": one_at_5 / all_at_5,
        "one_at_5": one_at_5,
        "all_at_5": all_at_5,
        "run_wide_tokens": run_wide,
        "run_wide_tokens_all": run_wide_all,
        "context_tokens": context,
        "claim_read_per_claim": 0.1 * (run_wide + context),
        "run_wide_needed_at_5": needed_at_5,
        "min_cache_tokens": MIN_CACHE_TOKENS,
        "ratio_at_5_at_min": (one_at_5 - 0.6 * (run_wide - MIN_CACHE_TOKENS)) / all_at_5,
        "claims_at_target_at_min": (
            (1.5 * a2 - a1 + 0.1 * (run_wide - MIN_CACHE_TOKENS)) / denominator if denominator > 0 else float("inf")
        ),
        "run_wide_needed_uncached_at_5": uncached_at_5,
    }


def _pieces(c: dict[str, Any], mode: str) -> list[int] | None:
    """Tokens of the parts of a judge request (tools, system prompt, context part, claim), as the simulator
    counted them in the curve's first point; None in results saved before they were recorded."""
    return c["points"][0].get("pieces", {}).get(mode)


def render_p2_arithmetic(c: dict[str, Any]) -> list[str]:
    a = p2_arithmetic(c)
    pieces = _pieces(c, "cot-one")
    parts = f" (tools {pieces[0]:,}, system prompt {pieces[1]:,})" if pieces else ""
    lines = [
        f"- Fitted to the curve (billed input per response, cache-weighted): cot-one = {a['fixed_one']:,.0f} + "
        f"{a['per_claim_one']:,.0f} x claims, cot-all = {a['fixed_all']:,.0f} + {a['per_claim_all']:,.0f} x claims. "
        f"The ratio reaches 1.5 at **{a['claims_at_target']:.1f} claims** per response; at 5 claims the fit gives "
        f"{a['one_at_5']:,.0f} / {a['all_at_5']:,.0f} = **{a['ratio_at_5']:.2f}**.",
        f"- Where a one-claim response's input goes: the run-wide prefix, {a['run_wide_tokens']:,.0f} tokens{parts}, "
        f"is read at 10% by the warm-up and again by every claim; the context part ({a['context_tokens']:,.0f} tokens "
        "on average: the instruction line and the passages) is written at 125% by the warm-up and read at 10% by "
        f"every claim. So a claim costs at least {a['claim_read_per_claim']:,.0f} billed tokens of cache reads, "
        f"while it adds {a['per_claim_all']:,.0f} to an all-claims call, which reads its own run-wide prefix "
        f"({a['run_wide_tokens_all']:,.0f} tokens) and writes the context once per response.",
        f"- The arithmetic at 5 claims: each token taken off the one-claim run-wide prefix saves 0.1 x (1 + 5) = 0.6 "
        f"billed tokens, so 1.5 x {a['all_at_5']:,.0f} needs a run-wide prefix of "
        f"{a['run_wide_tokens']:,.0f} - ({a['one_at_5']:,.0f} - 1.5 x {a['all_at_5']:,.0f}) / 0.6 = "
        f"**{a['run_wide_needed_at_5']:,.0f} tokens**.",
    ]
    if a["run_wide_needed_at_5"] < a["min_cache_tokens"]:
        lines.append(
            f"  That is below the {a['min_cache_tokens']:,}-token minimum under which the providers cache nothing "
            "(Sonnet 4.5; Haiku and Opus 4.5 need more). Below it the run-wide part is not cached, each warm-up "
            "writes it at 125% instead of reading it at 10%, and the target would need a run-wide prefix of at most "
            f"{a['run_wide_needed_uncached_at_5']:,.0f} tokens, less than the tool schema and the label and subtype "
            f"definitions together. At exactly {a['min_cache_tokens']:,} tokens the ratio at 5 claims would be "
            f"**{a['ratio_at_5_at_min']:.2f}**, and the target would hold up to "
            f"{a['claims_at_target_at_min']:.1f} claims: with these contexts and this all-claims prompt, 1.5 at 5 "
            "claims is beyond what the providers' caching rules allow."
        )
    lines += [
        "- The warm-up itself costs one more cache read of the run-wide prefix, its context write (which the "
        "first claim used to pay) and one output token: the price of taking the warm-up off the critical path.",
        "",
    ]
    return lines


def render_why_p2(modes: dict[str, Any] | None, curve: dict[str, Any] | None) -> list[str]:
    """The "Why P2 is where it is" section: the measured numbers, then what drives them."""
    lines = ["## Why P2 is where it is", ""]
    measured = []
    if modes and "runs" in modes:
        run = next(iter(modes["runs"].values()))
        claims = run["modes"]["cot-one"]["claims_per_response"]
        measured.append(
            f"at {claims:.2f} claims per response (the P1/P2 table) P2 is **{run['p2_ratio_classify']:.2f}** on the "
            f"classify stage and {run['p2_ratio_total']:.2f} with extraction"
        )
    a = p2_arithmetic(curve) if curve else None
    if curve and a:
        at5 = next((p["p2_ratio_classify"] for p in curve["points"] if p["claims"] == 5), a["ratio_at_5"])
        over = at5 - 1.5
        measured.append(
            f"on the curve it reaches 1.5 at {a['claims_at_target']:.1f} claims (fit) and is **{at5:.2f}** at "
            f"5 claims (fit {a['ratio_at_5']:.2f}), {abs(over):.2f} {'above' if over > 0 else 'below'} the target "
            f"({abs(over) / 1.5:.0%} of it)"
        )
    if measured:
        lines += ["Measured: " + "; ".join(measured) + ".", ""]
    pieces = _pieces(curve, "cot-one") if curve else None
    now = f" to {pieces[0] + pieces[1]:,} (tools {pieces[0]:,} + system {pieces[1]:,})" if pieces else ""
    lines += [
        "A one-claim response carries its shared prefix once per claim, at the cache-read rate, where an all-claims "
        "response carries it once. The ratio therefore grows with the number of claims, and once caching and the "
        "warm-up are in place the one lever left is the length of that prefix. The v3 one-claim prompts shorten it "
        "without dropping a rule: one worked example instead of four, each judging rule stated once in fewer words "
        "(the label and subtype definitions, the evidence and quote rules and the untrusted-data delimiting are all "
        "kept), and tool schemas without pydantic's titles, without the subtype list repeated in the if/then rule and "
        "without field descriptions that restate the prompt. The run-wide prefix of cot-one went from 2,310 tokens "
        f"(tools 636 + system 1,674){now}; with the v2 prompts (measured at 592973c) P2 was 1.72 at 3.83 claims and "
        "2.01 at 5 claims, and 1.5 was reached at 2.3 claims.",
        "",
    ]
    if a and a["run_wide_needed_at_5"] < a["min_cache_tokens"]:
        lines += [
            "Five claims stay out of reach because of the providers' caching minimum (see the arithmetic under the "
            f"curve): the run-wide prefix would have to be {a['run_wide_needed_at_5']:,.0f} tokens, shorter than the "
            f"shortest prefix a provider caches ({a['min_cache_tokens']:,}), and below that minimum nothing of the "
            "run-wide part is cached.",
            "",
        ]
    elif a:
        lines += [
            f"The target at 5 claims needs a run-wide prefix of at most {a['run_wide_needed_at_5']:,.0f} tokens (see "
            "the arithmetic under the curve), which the providers' caching minimum allows.",
            "",
        ]
    if pieces:
        run_wide = pieces[0] + pieces[1]
        lines += [
            f"The v3 run-wide prefix ({run_wide:,} tokens) is cached on its own with Sonnet and Opus before 4.5 "
            "(1,024-token minimum), not with Claude 3.x Haiku (2,048) nor Haiku 4.5 and Opus 4.5 (4,096): there it is "
            "cached only with a context long enough to reach the minimum (each warm-up then writes both at 125%), or "
            "not at all. For Haiku 4.5 and Opus 4.5 that was already so with v2; for Claude 3.x Haiku the v2 prefix "
            "(2,310) was above the minimum, so there v3 costs more per response "
            f"(about 1.15 x {run_wide:,} - 0.1 x {2310 - run_wide:,} x (1 + claims) billed tokens).",
            "",
        ]
    lines += [
        "The ratio also depends on the context: it is written once in both modes and read at 10% by each claim, so "
        "the longer the context, the closer the ratio comes to (1.25 + 0.1 x claims) / 1.25, which is 1.4 at 5 "
        "claims; SummEval-sized contexts (under 1,200 tokens here) are short. The comparison is also sensitive to "
        "how all-claims is billed: its prompt marks the context as a cache prefix, which costs a 1.25x write that "
        "pays off only when a re-ask or a retry of forgotten claims follows; without that write all-claims would be "
        "cheaper and the ratio higher.",
        "",
    ]
    return lines


def render_limits(m: dict[str, Any]) -> list[str]:
    lines = [
        "cot-one, client `RateLimiter(rpm=R, tpm=T, burst=0.5 s)` against a simulator enforcing R requests and T "
        "input tokens per minute (uncached input + cache writes; cache reads free, as Anthropic counts them), 1 s "
        "burst, per-token latency. Bound = rate x elapsed + one second's burst; steady = the 10-90% window. "
        "The client estimates tokens as characters / 4 and the simulator counts words and punctuation (more "
        "tokens), so a few calls are refused with a 429 and sent again; none is lost.",
        "",
        "| simulator | R rpm | T tpm | binding | responses (at a time) | seconds | calls ok | 429s | lost rows "
        "| requests / min (ratio to bound, steady) | input tokens / min (ratio to bound, steady) | target |",
        "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, t in m.items():
        binding = key.split("/")[1]
        if binding == "rpm-binds":
            ok = t["request_ratio"] >= 0.95 and t["lost_rows"] == 0
            target = f">= 95% of R: {_mark(ok)}"
        else:
            ok = t["token_ratio"] >= 0.90 and t["lost_rows"] == 0
            target = f">= 90% of T: {_mark(ok)}"
        lines.append(
            f"| {t['provider']} | {t['rpm']:,.0f} | {t['tpm']:,.0f} | {'R' if binding == 'rpm-binds' else 'T'} | "
            f"{t['samples']} ({t.get('concurrency', 32)}) | {t['seconds']:.1f} | {t['calls_ok']} | "
            f"{t['throttled']} | {t['lost_rows']} | "
            f"{t['requests_per_minute']:,.0f} ({t['request_ratio']:.1%}, {t['steady_request_ratio']:.1%}) | "
            f"{t['tokens_per_minute']:,.0f} ({t['token_ratio']:.1%}, {t['steady_token_ratio']:.1%}) | {target} |"
        )
    return [*lines, ""]
