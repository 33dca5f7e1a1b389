"""The ``serve`` command: the real-time guard over HTTP (needs the ``serve`` extra)."""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from typing import Annotated, Any

import typer

from hallumeasure.cli.common import EXIT_USAGE, app, console, fail, one_line
from hallumeasure.cli.options import with_settings
from hallumeasure.guard.settings import GuardSettings, read_keys


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@app.command()
@with_settings(
    GuardSettings,
    file_section="serve",
    discover=False,
    exclude={"api_keys": "secrets stay off the command line: --api-key-file and $HALLUMEASURE_API_KEYS give them"},
)
def serve(
    host: Annotated[
        str, typer.Option(help="Address to bind. Without API keys only a loopback address is allowed.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8080,
    api_key_file: Annotated[
        Path | None,
        typer.Option(
            help="File of API keys, one per line ('#' starts a comment line only); also read: $HALLUMEASURE_API_KEYS."
        ),
    ] = None,
    workers: Annotated[
        int, typer.Option(min=1, help="Worker processes (the keyless judges are CPU-bound: one per core).")
    ] = 1,
    *,
    settings: GuardSettings,
) -> None:
    """Serve the guard: POST /v1/check and /v1/check/stream, GET /healthz, /readyz and /metrics.

    The options from --judge on can also be set in the [serve] table of the file --config names.
    """
    try:
        import uvicorn

        from hallumeasure.guard.app import create_app
        from hallumeasure.guard.connections import uvicorn_options
    except ImportError as exc:
        raise fail(f"serve needs the serve extra: pip install 'hallumeasure[serve]' ({exc.name} is missing)") from None
    try:
        settings = settings.model_validate({**dict(settings), "api_keys": read_keys(api_key_file)})
    except (OSError, ValueError) as exc:
        raise fail(one_line(exc)) from None
    if not settings.api_keys:
        if not _loopback(host):
            raise fail(
                f"no API key is configured, so the guard binds to loopback only (asked: {host}); give "
                "--api-key-file FILE or HALLUMEASURE_API_KEYS to serve other machines",
                EXIT_USAGE,
            )
        console.print(
            "[bold yellow]WARNING: no API key configured: anyone on this machine can call the guard "
            f"(bound to {host} only)[/]"
        )
    console.print(
        f"guard: judge {settings.judge}, policy {settings.policy.value}"
        + (f" ({settings.action.value})" if settings.policy.value == "detect" else "")
        + f", threshold {settings.threshold:g}, at most {settings.max_concurrency} checks at once"
        + (f" in each of {workers} workers" if workers > 1 else "")
        + "; "
        f"http://{host}:{port}/docs",
        markup=False,
        highlight=False,
    )
    guard_log = logging.getLogger("hallumeasure.guard")
    guard_log.setLevel(logging.INFO)
    if not guard_log.handlers:  # uvicorn configures its own loggers only
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s:     %(message)s"))
        guard_log.addHandler(handler)
        guard_log.propagate = False  # once, whatever else configured the root logger
    options: dict[str, Any] = {}
    if workers > 1:
        import json
        import os

        from hallumeasure.guard.app import SETTINGS_ENV

        # Worker processes rebuild the app from the settings (keys included) in their inherited environment.
        data = settings.model_dump(mode="json")
        data["api_keys"] = [k.get_secret_value() for k in settings.api_keys]
        os.environ[SETTINGS_ENV] = json.dumps(data)
        target: Any = "hallumeasure.guard.app:app_from_env"
        options = {"factory": True, "workers": workers}
    else:
        target = create_app(settings)
    run_options: dict[str, Any] = {
        "host": host,
        "port": port,
        **options,
        **_fast_protocols(),
        **uvicorn_options(),  # deadlines on request heads, caps on connections (guard/connections.py)
        "log_level": "info",
        # SIGTERM: the app drains first (guard/app.py), then uvicorn stops accepting and lets in-flight checks finish.
        "timeout_graceful_shutdown": 30,
        # The guard logs each request itself (client, method, path, status, time), never the query string
        # (it may hold a key pasted into a URL) nor the body; uvicorn's access log would print the query.
        "access_log": False,
    }
    if workers > 1:
        uvicorn.run(target, **run_options)
    else:
        _settled_server(uvicorn.Server)(uvicorn.Config(target, **run_options)).run()


def _settled_server(base: Any) -> Any:
    """uvicorn's server, with a pause between closing the listening socket and closing idle connections:
    a client that connected just before the listener closed has its request read and answered rather
    than its connection reset."""

    class SettledServer(base):  # type: ignore[misc]
        async def shutdown(self, sockets: Any = None) -> None:
            import asyncio

            for server in self.servers:
                server.close()
            await asyncio.sleep(0.5)
            await super().shutdown(sockets)

    return SettledServer


def _fast_protocols() -> dict[str, str]:
    """uvloop and httptools when installed (the serve extra brings them): less overhead per request."""
    import importlib.util

    found = {name: importlib.util.find_spec(name) is not None for name in ("uvloop", "httptools")}
    return {"loop": "uvloop" if found["uvloop"] else "asyncio", "http": "httptools" if found["httptools"] else "h11"}
