"""The distribution: the built wheel holds everything a server needs, installs into a fresh
virtual environment and serves from there; the `upstream` command refuses bad settings."""

from __future__ import annotations

import email
import os
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port
from upstream import __version__

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`python -m build`: the sdist, then the wheel built from that sdist (so both are whole)."""
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    (built,) = out.glob("upstream_lineage-*-py3-none-any.whl")
    return built


@pytest.fixture(scope="module")
def wheel_names(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as archive:
        return archive.namelist()


@pytest.mark.slow
def test_wheel_holds_the_web_ui_and_the_migrations(wheel_names: list[str]) -> None:
    names = set(wheel_names)
    assert "upstream/web/static/index.html" in names
    assets = [n for n in names if n.startswith("upstream/web/static/")]
    assert any(n.endswith(".js") for n in assets), assets
    assert any(n.endswith(".css") for n in assets), assets
    assert "upstream/store/migrations/env.py" in names
    assert "upstream/store/migrations/script.py.mako" in names
    migrations = sorted(
        n
        for n in names
        if n.startswith("upstream/store/migrations/versions/") and n.endswith(".py")
    )
    on_disk = sorted(
        f"upstream/store/migrations/versions/{p.name}"
        for p in (ROOT / "src/upstream/store/migrations/versions").glob("*.py")
    )
    assert migrations == on_disk
    assert "upstream/py.typed" in names
    assert not any("/tests/" in n or n.startswith("tests/") for n in names)


@pytest.mark.slow
def test_wheel_metadata(wheel: Path, wheel_names: list[str]) -> None:
    (metadata_name,) = [n for n in wheel_names if n.endswith(".dist-info/METADATA")]
    with zipfile.ZipFile(wheel) as archive:
        metadata = email.message_from_bytes(archive.read(metadata_name))
        entry_points = archive.read(metadata_name.replace("METADATA", "entry_points.txt"))
    assert metadata["Name"] == "upstream-lineage"
    assert metadata["Version"] == __version__
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Requires-Python"] == ">=3.11"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in wheel_names)
    requirements = metadata.get_all("Requires-Dist") or []
    core = [r for r in requirements if "extra ==" not in r]
    for needed in ("fastapi", "uvicorn", "sqlalchemy", "alembic", "psycopg", "prometheus-client"):
        assert any(r.startswith(needed) for r in core), (needed, core)
    assert any('extra == "dev"' in r for r in requirements)
    assert b"upstream = upstream.cli:main" in entry_points


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; it sees the dependencies already installed here
    (--system-site-packages), so pip resolves them without downloading. It sees this pip too,
    which installs into the venv it runs in: `--without-pip` spares copying pip into it
    (ensurepip, 3.6 s of CPU of the module's setup)."""
    root = tmp_path_factory.mktemp("venv") / "env"
    subprocess.run(
        [sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", str(root)],
        check=True,
        timeout=120,
    )
    subprocess.run(
        [str(root / "bin/python"), "-m", "pip", "install", "-q", str(wheel)],
        check=True,
        capture_output=True,
        timeout=240,
    )
    return root


def _clean_env() -> dict[str, str]:
    """The environment minus anything that would point Python back at this source tree."""
    return {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "VIRTUAL_ENV") and not k.startswith("UPSTREAM_")
    }


@pytest.mark.slow
def test_installed_wheel_is_the_one_imported(venv: Path, tmp_path: Path) -> None:
    found = subprocess.run(
        [str(venv / "bin/python"), "-c", "import upstream; print(upstream.__file__)"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(found).is_relative_to(venv), found
    version = subprocess.run(
        [str(venv / "bin/python"), "-m", "upstream", "--version"],
        cwd=tmp_path,
        env=_clean_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert version == __version__


@pytest.fixture
def installed_server(venv: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    log = (tmp_path / "server.log").open("wb")
    process = subprocess.Popen(
        [str(venv / "bin/upstream"), "serve", "--port", str(port)],
        cwd=tmp_path,
        env=_clean_env(),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60  # a fresh venv's first imports compile bytecode
        while True:
            assert process.poll() is None, (tmp_path / "server.log").read_text()
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the installed server did not start in 60 s"
            time.sleep(0.1)
        yield url
    finally:
        process.terminate()
        process.wait(15)
        log.close()


@pytest.mark.slow
def test_installed_server_serves_api_ui_and_metrics(installed_server: str, tmp_path: Path) -> None:
    health = httpx.get(f"{installed_server}/health").json()
    assert health["status"] == "ok"
    assert health["version"] == __version__
    assert health["store"] == "sqlite"
    # The default store is ./upstream.db in the working directory, migrated on start.
    assert (tmp_path / "upstream.db").is_file()
    assert httpx.get(f"{installed_server}/ready").json() == {"status": "ready"}
    assert httpx.get(f"{installed_server}/metrics").status_code == 200
    page = httpx.get(f"{installed_server}/")
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]


@pytest.mark.parametrize(
    ("variable", "value"),
    [("UPSTREAM_PORT", "eighty"), ("UPSTREAM_LOG_FORMAT", "xml"), ("UPSTREAM_WORKERS", "0")],
)
def test_serve_refuses_an_invalid_setting_naming_it(
    variable: str, value: str, tmp_path: Path
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "upstream", "serve", "--db", f"sqlite:///{tmp_path}/x.db"],
        env={**_clean_env(), variable: value},
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: invalid setting: ")
    assert variable in lines[0]
    assert not (tmp_path / "x.db").exists()  # nothing was started
