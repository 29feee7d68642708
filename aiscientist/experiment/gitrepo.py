"""Host-side git on the submission, treating it as untrusted data.

The repository's git directory lives in `state/submission.git`, outside every
sandbox mount, so experiment code cannot plant hooks, an fsmonitor command or
filter drivers in it. Every call also switches off whatever in git can run a
program (hooks, fsmonitor, external diff, text conversion, pagers) and ignores
system and global configuration.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from aiscientist.records.paths import RunPaths

_SAFE_CONFIG = (
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    "core.pager=cat",
    "diff.external=",
    "protocol.allow=never",
    "user.name=aiscientist",
    "user.email=aiscientist@localhost",
    "commit.gpgsign=false",
    "tag.gpgsign=false",
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL=os.devnull, GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0")
    return env


def git(paths: RunPaths, *args: str) -> str:
    """Run git on the run's submission; raise with git's message on failure."""
    adopt_legacy_git_dir(paths)
    safe = [word for setting in _SAFE_CONFIG for word in ("-c", setting)]
    command = ["git", f"--git-dir={paths.git_dir}", f"--work-tree={paths.submission}", *safe, *args]
    done = subprocess.run(
        command, cwd=paths.submission, capture_output=True, text=True, env=_env(), stdin=subprocess.DEVNULL
    )
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def init(paths: RunPaths) -> None:
    paths.git_dir.parent.mkdir(parents=True, exist_ok=True)
    git(paths, "init", "-q", "-b", "main")
    # a `.git` the experiment code creates inside the submission must stay untracked data
    (paths.git_dir / "info").mkdir(exist_ok=True)
    (paths.git_dir / "info" / "exclude").write_text(".git\n")


def adopt_legacy_git_dir(paths: RunPaths) -> None:
    """Run folders made before the git directory moved kept it in `submission/.git`;
    move it out of the sandbox's reach (its hooks and config are dropped)."""
    legacy = paths.submission / ".git"
    if paths.git_dir.exists() or not legacy.is_dir() or legacy.is_symlink():
        return
    shutil.move(str(legacy), str(paths.git_dir))
    shutil.rmtree(paths.git_dir / "hooks", ignore_errors=True)
    (paths.git_dir / "config").write_text("[core]\n\trepositoryformatversion = 0\n\tbare = false\n")
