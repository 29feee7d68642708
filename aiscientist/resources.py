"""Files the program reads at run time, shipped inside the package and found through
importlib.resources, so a wheel installed anywhere works like the source tree."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from aiscientist.task import TaskError

PACKAGE_ROOT = Path(str(files("aiscientist")))
CONFIGS_DIR = PACKAGE_ROOT / "configs"
WORKSPACE_TEMPLATE = PACKAGE_ROOT / "workspace_template"


def resolve_config(name: str | Path) -> Path:
    """A `--config` value: an existing file path, else a packaged config's bare name
    (`flat`, `ablations/flat`, `flat.yaml`)."""
    path = Path(name)
    if path.is_file():
        return path
    shipped = {path.stem: path for path in sorted(CONFIGS_DIR.rglob("*.yaml")) if path.stem != "models"}
    key = path.name.removesuffix(".yaml").removesuffix(".yml")
    if key in shipped and (path.parent == Path(".") or shipped[key].parent.name == path.parent.name):
        return shipped[key]
    raise TaskError(name, "--config", f"no such file, nor a packaged config (packaged: {', '.join(shipped)})")
