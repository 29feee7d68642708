"""A snapshot of the submission: one manifest in the snapshot store (`RunPaths.snapshot_trees`),
written and read by `aiscientist.experiment.snapshots`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class Item(BaseModel):
    """One manifest entry: a regular file or a link."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    sha: str = ""
    """sha256 of the file's bytes (its blob's name); empty for a link."""
    size: int = 0
    """Bytes of the file."""
    exec: bool = False
    """Whether the file is executable."""
    link: str | None = None
    """A link's target, as it was written (never followed); None for a regular file."""


class Snapshot(BaseModel):
    """`trees/<sha256>.json`: the submission's regular files and links at one moment."""

    model_config = ConfigDict(use_attribute_docstrings=True)

    message: str
    """Why it was taken (`baseline`, a step's hypothesis, ...)."""
    at: str
    """When it was taken (ISO 8601, UTC)."""
    files: dict[str, Item] = Field(default_factory=dict)
    """Every file and link by its path inside the submission."""
    skipped: list[str] = Field(default_factory=list)
    """Files left out: too large or over the quota."""
