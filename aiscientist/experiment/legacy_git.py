"""Run folders made before the snapshot store kept the submission's history in
`state/submission.git` (or, older still, `submission/.git`). Their tags are copied
into the store once, with git's plumbing on the git directory alone: no work tree,
no system or global configuration, nothing that filters, hooks or pages."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime

from aiscientist.experiment import snapshots
from aiscientist.records.paths import RunPaths, write_atomic

_TAGS = (snapshots.BASELINE_TAG, snapshots.BEST_TAG)


def _git(paths: RunPaths, *args: str, binary: bool = False) -> bytes:
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
        raise snapshots.SnapshotError(
            f"this run predates the snapshot store and its git history cannot be read "
            f"({paths.git_dir}: {done.stderr.decode(errors='replace').strip()})"
        )
    return done.stdout


def import_legacy(paths: RunPaths) -> None:
    """Copy the legacy repository's `baseline` and `best` tags into the store."""
    store = paths.snapshots
    tags: dict[str, str] = {}
    for tag in _TAGS:
        if not _git(paths, "tag", "--list", tag).strip():
            continue
        snap = snapshots.Snapshot(message=f"{tag} (from the run's git history)", at=datetime.now(UTC).isoformat())
        listing = _git(paths, "ls-tree", "-r", "-z", "--full-tree", f"refs/tags/{tag}")
        for line in filter(None, listing.split(b"\0")):
            meta, _, name = line.partition(b"\t")
            mode, kind, oid = meta.decode().split()
            if kind != "blob":
                continue
            data = _git(paths, "cat-file", "blob", oid)
            rel = os.fsdecode(name)
            if mode == "120000":
                snap.files[rel] = snapshots.Item(link=os.fsdecode(data))
                continue
            sha = snapshots.put_bytes(paths, data)
            snap.files[rel] = snapshots.Item(sha=sha, size=len(data), exec=mode == "100755")
        tags[tag] = snapshots.save_tree(paths, snap)
    store.mkdir(parents=True, exist_ok=True)
    write_atomic(store / "tags.json", json.dumps(tags, indent=1, sort_keys=True))
