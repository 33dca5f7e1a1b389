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

from hallumeasure.labels import Policy
from hallumeasure.models.anthropic import AnthropicAPI
from hallumeasure.models.bedrock import BedrockAPI
from hallumeasure.models.limits import RateLimiter
from hallumeasure.models.model import Model
from hallumeasure.pipeline.classify import LLMJudge
from hallumeasure.pipeline.extract import LLMExtractor
from hallumeasure.pipeline.run import measure_sample, measure_samples
from hallumeasure.pricing import billed_input_tokens, cost, price_for
from hallumeasure.testing import AnthropicServer, BedrockServer, Tokens
from hallumeasure.testing.accounting import Latency, PromptCache, RateLimits
from hallumeasure.text import split_sentences
from hallumeasure.types import Mode, Sample, Usage

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
    """Why P2 is where it is: the curve's fixed and per-claim parts, and what the cache rules allow."""
    points = c["points"]
    ks = [float(p["claims"]) for p in points]
    a1, b1 = _fit(ks, [p["billed_classify"]["cot-one"] for p in points])
    a2, b2 = _fit(ks, [p["billed_classify"]["cot-all"] for p in points])
    # The prefix every one-claim call carries: cache reads of the claim calls per claim (the warm-up reads
    # only the run-wide part, which cot-all reads once too).
    reads_one = [
        p["tokens"]["cot-one"]["cache_read_tokens"] - p["tokens"]["cot-all"]["cache_read_tokens"] for p in points
    ]
    prefix = sum(r / k for r, k in zip(reads_one, ks, strict=True)) / len(ks)
    # The least a claim can add in one-claim mode: one cache read of the prefix (10% of the input price).
    floor_per_claim = 0.1 * prefix
    at5_floor = (a1 + 5 * floor_per_claim) / (a2 + 5 * b2)
    return {
        "fixed_one": a1,
        "per_claim_one": b1,
        "fixed_all": a2,
        "per_claim_all": b2,
        "claims_at_target": (1.5 * a2 - a1) / (b1 - 1.5 * b2) if b1 > 1.5 * b2 else float("inf"),
        "prefix_tokens": prefix,
        "floor_per_claim": floor_per_claim,
        "ratio_at_5_floor": at5_floor,
        "prefix_needed_at_5": max(0.0, (1.5 * (a2 + 5 * b2) - a1) / 5 / 0.1),
    }


def render_p2_arithmetic(c: dict[str, Any]) -> list[str]:
    a = p2_arithmetic(c)
    return [
        f"- Fitted to the curve (billed input per response, cache-weighted): cot-one = {a['fixed_one']:,.0f} + "
        f"{a['per_claim_one']:,.0f} x claims, cot-all = {a['fixed_all']:,.0f} + {a['per_claim_all']:,.0f} x claims. "
        f"The ratio reaches 1.5 at **{a['claims_at_target']:.1f} claims** per response.",
        f"- Every one-claim call carries the whole cacheable prefix (tools, system prompt with its examples, the "
        f"context): {a['prefix_tokens']:,.0f} tokens here. The cheapest way any provider rule lets a call carry it "
        f"is a cache read, billed at 10% of input: {a['floor_per_claim']:,.0f} billed tokens per claim at the "
        f"least, while a claim adds {a['per_claim_all']:,.0f} to an all-claims call. Even with nothing else per "
        f"claim, 5 claims give ({a['fixed_one']:,.0f} + 5 x {a['floor_per_claim']:,.0f}) / ({a['fixed_all']:,.0f} + "
        f"5 x {a['per_claim_all']:,.0f}) = **{a['ratio_at_5_floor']:.2f}**: the 1.5 target at 5 claims is beyond "
        "what prompt caching allows for these prompts. It would need a prefix of at most "
        f"{a['prefix_needed_at_5']:,.0f} tokens (a shorter system prompt: fewer examples), which is the prompts' "
        "business, not the client's.",
        "- The warm-up itself costs one more cache read of the run-wide prefix, its context write (which the "
        "first claim used to pay) and one output token: the price of taking the warm-up off the critical path.",
        "",
    ]


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
