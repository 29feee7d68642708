"""The peers as bench agents: `peer-<name>` is the peer's released code; `<name>` (where it
exists) is our re-implementation on the kernel. A peer makes its model calls with its own
client, so its tool-set row lists what its driver offers the model (documentation: no toolbox is built from it)."""

from __future__ import annotations

from aiscientist.agent.registry import register_agent
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


register_agent("peer-mini-swe-agent", PeerMiniSweAgent, {"peer": ("bash", "run_experiment")})
register_agent("peer-aide", PeerAide, {"peer": ("write_file", "run_experiment")})
register_agent("peer-openevolve", PeerOpenEvolve, {"peer": ("write_file", "run_experiment")})
