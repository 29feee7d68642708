"""The sandbox backends the parametrised tests run on, each skipped (reason printed)
where it cannot run on this machine."""

from __future__ import annotations

import pytest

from aiscientist.sandbox import bwrap_works
from aiscientist.sandbox.docker import docker_problem

_DOCKER_PROBLEM = docker_problem()
BACKENDS = [
    "local",
    pytest.param(
        "bwrap", marks=pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is not usable on this machine")
    ),
    pytest.param(
        "docker", marks=pytest.mark.skipif(_DOCKER_PROBLEM is not None, reason=f"no Docker engine: {_DOCKER_PROBLEM}")
    ),
]
