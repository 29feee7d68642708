"""Peers' own released code in the bench (AIDE's `aideml`, OpenEvolve, mini-swe-agent),
each in its own virtual environment, driven through its own entry point, with our
sandbox running what it executes and our experiment engine measuring what it proposes."""

from bench.peers.specs import PEERS, PeerEnvError, ensure, install

__all__ = ["PEERS", "PeerEnvError", "ensure", "install"]
