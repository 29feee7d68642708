"""The `offline` model: a deterministic, seeded, non-LLM policy for every role. `backend`
answers with the policy registered for the role the facts name; `search` picks changes;
`solo` and `specialists` hold the roles' policies (importing the package registers them).
"""

from aiscientist.llm.offline import solo, specialists  # noqa: F401  (register their roles)
from aiscientist.llm.offline.backend import BANNER, OfflineBackend, PolicyContext, PolicyReply, register_role_policy

__all__ = ["BANNER", "OfflineBackend", "PolicyContext", "PolicyReply", "register_role_policy"]
