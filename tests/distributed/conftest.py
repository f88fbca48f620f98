"""A real S3-compatible server for the object-storage tests: moto in server mode on
127.0.0.1 at a free port, started by the test session and stopped after it (never a network
address); and a local Ray, started once per session with two workers' CPUs."""

from __future__ import annotations

import importlib.util
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator

import pytest


def needs(*modules: str) -> None:
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}: install the extra with pip install 'ragloom[distributed]'")


@pytest.fixture(scope="session")
def s3_server() -> Iterator[str]:
    """The endpoint URL of a moto S3 server on the loopback interface."""
    needs("moto", "boto3", "obstore")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    try:
        import boto3

        client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id="test", aws_secret_access_key="test",
                              region_name="us-east-1")
        deadline = time.monotonic() + 30
        while True:
            try:
                client.list_buckets()
                break
            except Exception:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the moto S3 server did not start") from None
                time.sleep(0.1)
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture
def s3_env(s3_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """Credentials and endpoint of the local server in the environment, as a user sets them;
    returns a fresh bucket's URI."""
    import boto3

    for key, value in {"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "us-east-1",
                       "AWS_ENDPOINT_URL": s3_server}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ALLOW_HTTP", raising=False)
    bucket = f"ragloom-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=s3_server, region_name="us-east-1").create_bucket(Bucket=bucket)
    return f"s3://{bucket}"


@pytest.fixture
def cache_dir(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> str:
    """A private RAGLOOM_CACHE_DIR, so the local stand-ins of remote workspaces are the test's own."""
    folder = str(tmp_path_factory.mktemp("cache"))
    monkeypatch.setenv("RAGLOOM_CACHE_DIR", folder)
    return folder


@pytest.fixture(scope="session")
def local_ray() -> Iterator[None]:
    """A local Ray for the session, as the runner starts one for two workers (two embedding
    actors and the read tasks), on the loopback interface; the runner uses it and leaves it."""
    needs("ray")
    import logging

    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(num_cpus=3, object_store_memory=512 * 1024**2, include_dashboard=False, log_to_driver=False,
                 logging_level=logging.ERROR, _node_ip_address="127.0.0.1")
    try:
        yield
    finally:
        if started:
            ray.shutdown()
