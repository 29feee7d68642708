"""The `offline` model: a deterministic, seeded, non-LLM policy for every role. `backend`
answers with the policy registered for the role the facts name (`POLICIES`); `search` picks
changes; `solo` is the policy of a role without its own. The roles' own policies live with the
roles and are registered with their agent (`aiscientist.agent.registry.register_agent`).
"""

from aiscientist.llm.offline import solo  # noqa: F401  (registers the default policy)
from aiscientist.llm.offline.backend import BANNER, OfflineBackend, PolicyContext, PolicyReply, register_role_policy

__all__ = ["BANNER", "OfflineBackend", "PolicyContext", "PolicyReply", "register_role_policy"]
