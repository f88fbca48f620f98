"""How the Ray runner shares a cluster out to embedding actors: a GPU each for a torch embedder
when the cluster has GPUs, else its CPUs less one for the read tasks. The decision reads only
``ray.cluster_resources()``, so a stand-in cluster tests it without Ray (and without a GPU)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from ragloom.config import Settings
from ragloom.errors import InvalidParameterError
from ragloom.ingest.distributed import RayRunner


class Cluster:
    """What the runner asks of ``ray``: the cluster's resources."""

    def __init__(self, **resources: float) -> None:
        self.resources = resources

    def cluster_resources(self) -> dict[str, float]:
        return dict(self.resources)


def components(provider: str, device: str = "auto", given: Any = None) -> Any:  # noqa: ANN401
    settings = Settings.load(environ={}, overrides={"embedding.provider": provider, "embedding.device": device})
    return SimpleNamespace(settings=settings, given_embedder=given)


@pytest.mark.parametrize(("provider", "device", "resources", "expected"), [
    ("sentence-transformers", "auto", {"CPU": 16, "GPU": 4}, True),
    ("sentence-transformers", "cuda", {"CPU": 16, "GPU": 1}, True),
    ("sentence-transformers", "cpu", {"CPU": 16, "GPU": 4}, False),   # told to stay on the CPU
    ("sentence-transformers", "auto", {"CPU": 16}, False),            # no GPU in the cluster
    ("onnx", "auto", {"CPU": 16, "GPU": 4}, False),                   # the ONNX embedder runs on CPUs
])
def test_embedding_actors_take_a_gpu_only_for_a_torch_embedder_on_a_cluster_that_has_one(
        provider: str, device: str, resources: dict[str, float], expected: bool) -> None:
    assert RayRunner._gpu_actors(Cluster(**resources), components(provider, device)) is expected


def test_an_embedder_given_in_code_is_never_moved_to_a_gpu() -> None:
    given = object()
    assert not RayRunner._gpu_actors(Cluster(CPU=16, GPU=4), components("sentence-transformers", given=given))


def test_actors_and_their_cpus_follow_the_cluster() -> None:
    assert RayRunner()._actors(Cluster(CPU=16, GPU=4), gpu=True) == (4, 1)        # one actor per GPU
    assert RayRunner()._actors(Cluster(CPU=3), gpu=False) == (2, 1)               # one CPU kept for reading
    assert RayRunner(workers=1)._actors(Cluster(CPU=3), gpu=False) == (1, 2)      # one actor, both cores
    assert RayRunner(workers=2)._actors(Cluster(CPU=17, GPU=4), gpu=True) == (2, 1)


def test_more_workers_than_the_cluster_has_is_a_clear_error() -> None:
    with pytest.raises(InvalidParameterError, match=r"--workers 4 or fewer"):
        RayRunner(workers=8)._actors(Cluster(CPU=16, GPU=4), gpu=True)
    with pytest.raises(InvalidParameterError, match=r"--workers 3 or fewer"):
        RayRunner(address="auto", workers=5)._actors(Cluster(CPU=4), gpu=False)
    # a local Ray is started with as many CPUs as the workers asked for
    assert RayRunner(workers=5)._actors(Cluster(CPU=4), gpu=False) == (5, 1)
