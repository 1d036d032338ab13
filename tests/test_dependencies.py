"""What a fresh machine gets: the versions a new virtual environment resolves to are the ones
this suite runs with (so a release that breaks Upstream fails here, not on a user's machine),
and the README names every Debian package the suite needs."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from tests.conftest import IN_CI, system_packages

ROOT = Path(__file__).resolve().parents[1]


def _canonical(name: str) -> str:
    """A distribution's name as the package index compares them (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirements() -> list[str]:
    """Every requirement of the project and of its `dev` extra, as pyproject.toml states it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return [*project["dependencies"], *project["optional-dependencies"]["dev"]]


def _fresh_resolution(tmp_path: Path) -> dict[str, str]:
    """The version of each distribution pip would install into an empty environment.

    `--dry-run --report` resolves without installing; `--ignore-installed` makes it ignore
    what this environment already has. The requirements are passed directly rather than as
    `.[dev]`, which spares building the project (a third of the time)."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text("\n".join(_requirements()) + "\n", encoding="utf-8")
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            str(report),
            "-r",
            str(requirements),
        ],
        capture_output=True,
        text=True,
        timeout=290,  # about 20 s on an idle machine; the test's own limit is 300 s
        check=False,
    )
    if done.returncode != 0:
        reason = f"pip could not resolve the requirements: {done.stderr.strip()[-500:]}"
        if IN_CI:
            pytest.fail(reason)
        pytest.skip(f"{reason} (no package index reachable?)")
    installs = json.loads(report.read_text(encoding="utf-8"))["install"]
    return {_canonical(item["metadata"]["name"]): item["metadata"]["version"] for item in installs}


@pytest.mark.slow
def test_a_fresh_environment_gets_the_versions_under_test(tmp_path: Path) -> None:
    fresh = _fresh_resolution(tmp_path)
    here = {_canonical(d.metadata["Name"]): d.version for d in metadata.distributions()}
    assert {"pytest", "schemathesis", "fastapi"} <= set(fresh), sorted(fresh)
    differing = {
        name: f"a fresh install gets {version}, this suite runs {here.get(name, 'nothing')}"
        for name, version in sorted(fresh.items())
        if here.get(name) != version
    }
    assert not differing, (
        "this environment is not what a fresh install gets, so the suite does not test what "
        "users install; `bash scripts/test` upgrades it (if the newer release breaks Upstream, "
        f"give it an upper bound in pyproject.toml): {differing}"
    )


def test_the_readme_names_every_system_package() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for program, package in system_packages().items():
        assert f"`{package}`" in readme, f"README.md must say the tests need {package}"
        assert f"`{program}`" in readme or program == package, program
