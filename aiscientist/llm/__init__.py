"""Model access: one client over litellm with retries, budgets, accounting,
record/replay, and two offline models (`scripted:PATH`, `offline`).

See docs/contracts.md, "Model client". A typical agent loop:

    client = make_client(model, run_dir, role="implementation")
    c = client.complete(messages, tools)
    messages.append(c.message)
    for call in c.tool_calls:
        result = tool_error_message(call) if call.error else run_tool(call)
"""

from aiscientist.llm.budget import read_records
from aiscientist.llm.client import LLMClient, make_client
from aiscientist.llm.config import BudgetLimits, LLMConfig, load_llm_config
from aiscientist.llm.messages import tool_error_message
from aiscientist.llm.types import (
    BudgetExhausted,
    Completion,
    ContextOverflow,
    ModelConfigError,
    ModelError,
    ModelUnavailable,
    ReplayMiss,
    ScriptExhausted,
)

__all__ = [
    "BudgetExhausted",
    "BudgetLimits",
    "Completion",
    "ContextOverflow",
    "LLMClient",
    "LLMConfig",
    "ModelConfigError",
    "ModelError",
    "ModelUnavailable",
    "ReplayMiss",
    "ScriptExhausted",
    "load_llm_config",
    "make_client",
    "read_records",
    "tool_error_message",
]
