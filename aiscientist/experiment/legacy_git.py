"""Run folders made before the snapshot store kept the submission's history in
`state/submission.git` (or, older still, `submission/.git`). This reads a tag's files
from it with git's plumbing on the git directory alone: no work tree, no system or
global configuration, nothing that filters, hooks or pages. `snapshots.load` copies
them into the store once (this module knows nothing of the store)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass

from aiscientist.records.paths import RunPaths


class LegacyHistoryError(RuntimeError):
    """The run's legacy git history cannot be read."""


@dataclass(frozen=True)
class LegacyFile:
    """One file of a tag: its content (a link's target for a link) and git's mode."""

    rel: str
    data: bytes
    mode: str  # "100644", "100755" (executable) or "120000" (a symbolic link)

    @property
    def link(self) -> bool:
        return self.mode == "120000"


def _git(paths: RunPaths, *args: str) -> bytes:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "GIT_CONFIG_NOSYSTEM": "1"}
    env |= {"GIT_CONFIG_GLOBAL": os.devnull, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
    done = subprocess.run(
        ["git", f"--git-dir={paths.git_dir}", "-c", "core.hooksPath=/dev/null", *args],
        capture_output=True,
        env=env,
        stdin=subprocess.DEVNULL,
        cwd=paths.git_dir,
    )
    if done.returncode != 0:
        raise LegacyHistoryError(
            f"this run predates the snapshot store and its git history cannot be read "
            f"({paths.git_dir}: {done.stderr.decode(errors='replace').strip()})"
        )
    return done.stdout


def has_tag(paths: RunPaths, tag: str) -> bool:
    return bool(_git(paths, "tag", "--list", tag).strip())


def tag_files(paths: RunPaths, tag: str) -> Iterator[LegacyFile]:
    """Every file and link the legacy repository's `tag` holds."""
    listing = _git(paths, "ls-tree", "-r", "-z", "--full-tree", f"refs/tags/{tag}")
    for line in filter(None, listing.split(b"\0")):
        meta, _, name = line.partition(b"\t")
        mode, kind, oid = meta.decode().split()
        if kind == "blob":
            yield LegacyFile(os.fsdecode(name), _git(paths, "cat-file", "blob", oid), mode)
