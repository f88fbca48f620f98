"""The web app: ``ragloom ui`` serves a Streamlit app over the :class:`~ragloom.engine.Engine`.

The app itself (``app.py`` and ``pages/``) imports Streamlit; this module does not, so that
``ragloom --help`` stays fast and the CLI works without the ``ui`` extra installed.
"""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from ragloom.errors import ConfigError, MissingExtraError
from ragloom.workspace import check_folder, resolve_workspace

__all__ = ["APP", "exposure_warning", "launch", "streamlit_command"]

#: The Streamlit script ``ragloom ui`` runs.
APP = Path(__file__).with_name("app.py")
#: Seconds the server has to stop after Ctrl-C before it is killed.
STOP_TIMEOUT = 10.0


def streamlit_command(*, port: int, host: str, max_upload_mb: float = 50.0) -> list[str]:
    """The command line that serves the app (the current interpreter's Streamlit). The uploader
    takes files up to ``max_upload_mb`` (``ingest.max_file_mb``: what ingest reads at most),
    not Streamlit's own 200 MB, so that a person is told at once, not after the upload."""
    return [
        sys.executable, "-m", "streamlit", "run", str(APP),
        "--server.port", str(port),
        "--server.address", host,
        "--server.headless", "true",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        "--server.maxUploadSize", str(max(1, math.ceil(max_upload_mb))),  # whole MB
    ]


def _check_streamlit() -> None:
    MissingExtraError.require("ui", "ragloom ui", {"streamlit": "streamlit", "streamlit-agraph": "streamlit_agraph"})


def exposure_warning(host: str, port: int, workspace: Path) -> str:
    """What ``ragloom ui --insecure`` says when it listens beyond this machine."""
    return (f"ragloom ui: WARNING: listening on {host or 'every interface'}:{port}, beyond this machine. The web app "
            f"has no login: anyone who can reach this port can read every document in {workspace}, ingest into it "
            "and delete from it. The Settings page keeps the language model's base URL and key variable read-only; "
            "set them in ragloom.toml.")


def launch(workspace: str | Path | None = None, *, config: str | Path | None = None, port: int = 8501,
           host: str = "127.0.0.1", insecure: bool = False) -> int:
    """Serve the web app on ``host:port`` over ``workspace`` until the server stops or Ctrl-C;
    returns the server's exit status (0 after Ctrl-C).

    The app has no login, so an address beyond this machine (not loopback) is refused unless
    ``insecure``; then a warning says who can read what."""
    _check_streamlit()
    if not 0 < port < 65536:
        raise ConfigError(f"--port ({port}) must be between 1 and 65535")
    env = dict(os.environ)
    path = check_folder(resolve_workspace(workspace).resolve())
    env["RAGLOOM_WORKSPACE"] = str(path)
    env.setdefault("STREAMLIT_CLIENT_TOOLBAR_MODE", "minimal")  # no "Deploy" button in a local tool
    if config is not None:
        config_path = Path(config).resolve()
        if not config_path.is_file():
            raise ConfigError(f"config file {config} does not exist; pass an existing TOML file")
        env["RAGLOOM_CONFIG"] = str(config_path)
    from ragloom.server import listening

    with listening(host, port):  # a taken port or an unknown host is said here, in ragloom's words
        pass
    from ragloom.httpguard import is_loopback

    if not is_loopback(host):
        if not insecure:
            raise ConfigError(
                f"--host {host!r} listens beyond this machine, and the web app has no login: anyone who can reach "
                f"port {port} could read every document in the workspace, ingest into it and delete from it; serve "
                "it on 127.0.0.1 (the default) and reach it through an SSH tunnel or a proxy that asks for a login, "
                "or pass --insecure to serve it as it is")
        print(exposure_warning(host, port, path), file=sys.stderr, flush=True)
    shown = "localhost" if host in ("0.0.0.0", "::", "") else host
    print(f"ragloom ui: http://{shown}:{port}  (workspace {path}; Ctrl-C to stop)", flush=True)
    from ragloom.config import Settings

    limit = Settings.load(path, config_file=env.get("RAGLOOM_CONFIG")).ingest.max_file_mb
    process = subprocess.Popen(streamlit_command(port=port, host=host, max_upload_mb=limit), env=env)
    previous = _forward_sigterm(process)
    try:
        return process.wait()
    except KeyboardInterrupt:
        # From a terminal the server got the same SIGINT (one process group); when only this
        # process was interrupted, pass it on. Then give the server time to close its sessions.
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.terminate()
            try:
                process.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        print("ragloom ui: stopped", flush=True)
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _forward_sigterm(process: subprocess.Popen[bytes]) -> Any:  # noqa: ANN401 - a signal handler
    """Stop the server too when ``ragloom ui`` itself is terminated (not only on Ctrl-C), so that
    no orphan keeps the port. Returns the handler it replaced (None outside the main thread)."""
    def stop(signum: int, frame: FrameType | None) -> None:
        process.terminate()
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, stop)
    except ValueError:  # not the main thread: signals cannot be handled here
        return None
