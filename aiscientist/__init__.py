"""AiScientist: long-horizon ML research engineering over a File-as-Bus workspace."""

import os

# litellm otherwise fetches its cost map from the network at import time.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

__version__ = "0.1.0"
