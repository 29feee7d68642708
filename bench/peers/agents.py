"""The peers as bench agents: `peer-<name>` is the peer's released code; `<name>` (where it
exists) is our re-implementation on the kernel. A peer makes its model calls with its own
client, so its tool-set row lists what its driver offers the model."""

from __future__ import annotations

from aiscientist.agent.toolsets import register_toolset
from bench.peers.adapter import PeerAgent


class PeerMiniSweAgent(PeerAgent):
    name = "peer-mini-swe-agent"
    peer = "mini-swe-agent"


class PeerAide(PeerAgent):
    name = "peer-aide"
    peer = "aide"


class PeerOpenEvolve(PeerAgent):
    name = "peer-openevolve"
    peer = "openevolve"


register_toolset("peer-mini-swe-agent", {"peer": ("bash", "run_experiment")})
register_toolset("peer-aide", {"peer": ("write_file", "run_experiment")})
register_toolset("peer-openevolve", {"peer": ("write_file", "run_experiment")})
