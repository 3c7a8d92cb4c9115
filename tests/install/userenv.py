"""A new user's environment: the wheel of this checkout in a fresh venv without extras, ``scrapy startproject``.

The project gets the README's one line (``ADDONS``) and the spider modules
of this directory (``user_spiders.py``, ``feature_spiders.py``), as a user
writes spiders into ``userproj/spiders/``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from offline import build_failed

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
README_LINE = 'ADDONS = {"scrapy_iri.Addon": 0}'
SPIDER_MODULES = ("user_spiders.py", "feature_spiders.py")


def run(cmd: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, **kwargs)


@dataclass
class UserEnv:
    venv: Path
    project: Path

    def bin(self, name: str) -> str:
        return str(self.venv / "bin" / name)

    def crawl(self, spider: str, start: str, tmp: Path, env: dict[str, str] | None = None, **settings: str):
        """``scrapy crawl``; lowercase keywords are spider arguments (``-a``), the others settings (``-s``)."""
        out = tmp / f"{spider}.json"
        cmd = [self.bin("scrapy"), "crawl", spider, "-a", f"start={start}", "-a", f"out={out}"]
        for name in [name for name in settings if name.islower()]:
            cmd += ["-a", f"{name}={settings.pop(name)}"]
        for name, value in {"TELNETCONSOLE_ENABLED": "False", "REMOTE_CONTROL_ENABLED": "False", "LOG_LEVEL": "INFO", **settings}.items():
            cmd += ["-s", f"{name}={value}"]
        process = run(cmd, cwd=self.project, env={**clean_env(), **(env or {})})
        result = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
        return process, result


def clean_env() -> dict[str, str]:
    """The environment without this checkout on the path and without proxies."""
    skip = {"PYTHONPATH", "VIRTUAL_ENV", "http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy", "NO_PROXY"}
    return {k: v for k, v in os.environ.items() if k not in skip}


def make_user_env(tmp_path_factory: pytest.TempPathFactory) -> UserEnv:
    root = tmp_path_factory.mktemp("user")
    wheels = root / "wheels"
    source = root / "scrapy-iri"  # a copy: building writes build/ and *.egg-info next to the sources
    shutil.copytree(REPO / "scrapy_iri", source / "scrapy_iri", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, source / name)
    built = run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source)])
    if built.returncode != 0:
        build_failed("cannot build the wheel", built.stderr)
    venv = root / "venv"
    run([sys.executable, "-m", "venv", str(venv)]).check_returncode()
    wheel = next(wheels.glob("scrapy_iri-*.whl"))
    installed = run([str(venv / "bin" / "pip"), "install", "-q", str(wheel)], env=clean_env())
    if installed.returncode != 0:
        build_failed("pip install of the wheel failed", installed.stderr)
    created = run([str(venv / "bin" / "scrapy"), "startproject", "userproj"], cwd=root, env=clean_env())
    assert created.returncode == 0, created.stderr
    project = root / "userproj"
    settings = project / "userproj" / "settings.py"
    settings.write_text(settings.read_text(encoding="utf-8") + f"\n{README_LINE}\n", encoding="utf-8")
    for name in SPIDER_MODULES:
        shutil.copy2(HERE / name, project / "userproj" / "spiders" / name)
    return UserEnv(venv, project)
