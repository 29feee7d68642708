"""The `offline` model: a deterministic, seeded, non-LLM policy for every role.

`backend` answers a conversation with the policy registered for the role its facts
name; `search` picks changes; `solo` (single-conversation agents: the default, flat,
linear, basic, iterative), `specialists`, `orchestrator` and `baselines` (AIDE-style,
AI-Scientist-style) hold the roles' policies. Importing the package registers them all.
"""

from aiscientist.offline import baselines, orchestrator, solo, specialists  # noqa: F401  (register their roles)
from aiscientist.offline.backend import BANNER, OfflineBackend, PolicyContext, PolicyReply, register_role_policy

__all__ = ["BANNER", "OfflineBackend", "PolicyContext", "PolicyReply", "register_role_policy"]
