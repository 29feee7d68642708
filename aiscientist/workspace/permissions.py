"""Roles and what they may touch, from `permissions.yaml`, enforced in code.

A `Policy` answers one question: may this role do this operation on this
run-relative path, and if not, why. Path *resolution* (absolute paths, `..`,
symlinks) happens in `scope.py`; this module sees clean relative paths only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from aiscientist.records.paths import LOGS, PRISTINE, SUBMISSION, in_submission, submission_rel
from aiscientist.task import Task, glob_match

Op = Literal["read", "write"]
EDITABLE = f"{SUBMISSION}/{{editable}}"  # the task's editable files, in permissions.yaml


class RoleRules(BaseModel):
    model_config = ConfigDict(extra="forbid")
    read: list[str] = []
    write: list[str] = []
    append: list[str] = []


class Area(BaseModel):
    model_config = ConfigDict(extra="forbid")
    holds: str
    main: str | None = None


class PermissionsFile(BaseModel):
    model_config = ConfigDict(extra="forbid")
    areas: dict[str, Area]
    logs: dict[str, str]
    aliases: dict[str, str] = {}
    sets: dict[str, dict[str, RoleRules]]

    @classmethod
    def load(cls, path: Path) -> PermissionsFile:
        try:
            text = path.read_text()
        except OSError as err:
            raise ValueError(f"{path}: unusable permissions file: {err}") from None
        return cls.parse(text, str(path))

    @classmethod
    def parse(cls, text: str, path: str) -> PermissionsFile:
        """The permissions in `text` (`path` names it in errors)."""
        try:
            data = cls.model_validate(yaml.safe_load(text))
        except (yaml.YAMLError, ValidationError) as err:
            raise ValueError(f"{path}: unusable permissions file: {err}") from None
        for name in ("file_bus", "file_bus_off"):
            if name not in data.sets:
                raise ValueError(f"{path}: sets: missing permission set {name!r}")
        for name, rules_by_role in data.sets.items():
            for alias, target in data.aliases.items():
                if target not in rules_by_role:
                    raise ValueError(f"{path}: aliases.{alias}: role {target!r} is missing from set {name!r}")
            for role, rules in rules_by_role.items():
                unknown = set(rules.append) - set(data.logs)
                if unknown:
                    raise ValueError(f"{path}: sets.{name}.{role}.append: unknown log(s) {', '.join(sorted(unknown))}")
        return data


class UnknownRole(ValueError):
    pass


class Policy:
    """One role's rights under one permission set, for one task."""

    def __init__(self, perms: PermissionsFile, set_name: str, role: str, task: Task):
        canonical = perms.aliases.get(role, role)
        rules = perms.sets[set_name].get(canonical)
        if rules is None:
            known = sorted(perms.sets[set_name]) + sorted(perms.aliases)
            raise UnknownRole(f"unknown role {role!r}; known roles: {', '.join(known)}")
        self.role, self.task, self.logs = role, task, perms.logs
        self.read_globs = _expand(rules.read, task)
        self.write_globs = _expand(rules.write, task)
        self.append_logs = list(rules.append)
        self.system = canonical == "system"

    def refusal(self, op: Op, rel: str) -> str | None:
        """Why `op` on `rel` is refused, or None when it is allowed."""
        inside = submission_rel(rel)
        if inside and self.task.is_hidden(inside):
            return "hidden test asset"
        if reason := self._off_limits(rel):
            return reason
        if op == "write":
            if inside and self.task.is_protected(inside):
                return "protected file"
            if rel == LOGS or rel.startswith(LOGS + "/"):
                return "logs are append-only (use append_log)"
            if not any(glob_match(rel, g) for g in self.write_globs):
                return f"outside the files this role may write ({', '.join(self.write_globs) or 'none'})"
            return None
        if not any(glob_match(rel, g) for g in self.read_globs):
            return f"outside the areas this role may read ({', '.join(self.read_globs) or 'none'})"
        return None

    def dir_refusal(self, rel: str) -> str | None:
        """Why listing or searching folder `rel` is refused ("." is the run folder)."""
        if rel == ".":
            return None
        if reason := self._off_limits(rel):
            return reason
        if any(_dir_may_hold(rel, g) for g in self.read_globs):
            return None
        return f"outside the areas this role may read ({', '.join(self.read_globs) or 'none'})"

    def _off_limits(self, rel: str) -> str | None:
        """Refused for files and folders alike."""
        if rel == PRISTINE or rel.startswith(PRISTINE + "/"):
            return "pristine copies of protected files are off limits"
        inside = submission_rel(rel)
        if inside is not None and (inside == ".git" or inside.startswith(".git/")) and not self.system:
            return "git internals are not part of the file API"
        return None

    def log_refusal(self, log: str) -> str | None:
        if log not in self.logs:
            return f"unknown log; choose one of {', '.join(self.logs)}"
        if log not in self.append_logs:
            return "this role may not append to it (" + (", ".join(self.append_logs) or "no logs") + ")"
        return None


def _expand(globs: list[str], task: Task) -> list[str]:
    out: list[str] = []
    for glob in globs:
        out += [in_submission(p) for p in task.editable_globs] if glob == EDITABLE else [glob]
    return out


def _static_prefix(glob: str) -> tuple[str, bool]:
    """The folders of `glob` before its first wildcard, and whether any follow."""
    parts = glob.split("/")
    for i, part in enumerate(parts):
        if any(ch in part for ch in "*?["):
            return "/".join(parts[:i]), True
    return "/".join(parts[:-1]), False


def _dir_may_hold(rel: str, glob: str) -> bool:
    """Whether folder `rel` is, or leads to, a place where `glob` matches."""
    prefix, wild = _static_prefix(glob)
    if prefix == rel or prefix.startswith(rel + "/"):
        return True
    inside = prefix == "" or rel.startswith(prefix + "/")
    return wild and inside and ("**" in glob or rel.count("/") < glob.count("/"))
