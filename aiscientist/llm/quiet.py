"""litellm, imported quietly: told a model name it cannot place (a `local/` model's, priced and counted by the
models file and the default encoding instead), it prints a red "Provider List" line to stdout at every lookup -
68 of them in a 3-step run of the local 1.5B model - unless its `suppress_debug_info` is set."""

from __future__ import annotations

from types import ModuleType


def litellm() -> ModuleType:
    """The litellm module, its debug prints off (imported on first use: ~4 s of CPU)."""
    import litellm as module

    module.suppress_debug_info = True
    return module
