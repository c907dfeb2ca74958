"""Fresh virtual environments for install, cluster and Connect tests.

A test venv is created with ``--without-pip`` and a ``.pth`` line naming the running
interpreter's site-packages, so it gets every dependency without downloading anything — but not
the project itself: a ``.pth`` line only adds a directory, it does not run that directory's
``.pth`` files, so an editable install of the project in the parent venv stays invisible.
:func:`assert_project_absent` checks that, so the tests cannot pass through a leak.
The project is installed with the parent's pip (``pip --python``), ``--no-deps
--no-build-isolation`` (offline), from a copy of the source tree (pip builds write ``build/``
and ``*.egg-info`` next to the sources; the copy keeps the checkout clean)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
#: What a source distribution of the project holds (pyproject's packages and module).
PROJECT_FILES = ("pyproject.toml", "README.md", "pyspark_asyncapi_kafka.py", "wireformat", "registry",
                 "connector")


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without anything that would make the project importable from
    the checkout (PYTHONPATH) or pick an interpreter (PYSPARK_*), plus ``extra``."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "VIRTUAL_ENV", "PYTHONHOME")}
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    env.update(extra)
    return env


def copy_project(dst: Path) -> Path:
    """Copy the project's sources (what an sdist holds) to ``dst``; returns ``dst``."""
    dst.mkdir(parents=True, exist_ok=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for name in PROJECT_FILES:
        src = REPO / name
        if src.is_dir():
            shutil.copytree(src, dst / name, ignore=ignore)
        else:
            shutil.copy2(src, dst / name)
    return dst


def make_venv(path: Path, *, inherit: bool = True) -> Path:
    """Create a venv at ``path``; returns its python. ``inherit`` adds the running interpreter's
    site-packages (the dependencies) through a ``.pth`` line."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=120)
    python = path / "bin" / "python"
    if inherit:
        purelib = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                 check=True, capture_output=True, text=True, timeout=60).stdout.strip()
        parents = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
        Path(purelib, "_asyncapi_kafka_test_parent.pth").write_text("\n".join(sorted(parents)) + "\n")
    return python


def pip_install(python: Path, *args: str, cwd: Path | None = None) -> None:
    """``pip install --no-deps --no-build-isolation ARGS`` into the venv of ``python``."""
    proc = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "-q",
                           "--no-deps", "--no-build-isolation", *args],
                          capture_output=True, text=True, timeout=600, cwd=cwd, env=clean_env())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]


def assert_project_absent(python: Path, cwd: Path) -> None:
    """The venv must not see the project before it is installed (no leak from the checkout)."""
    proc = subprocess.run([str(python), "-c", "import pyspark_asyncapi_kafka"], capture_output=True, text=True,
                          timeout=120, cwd=cwd, env=clean_env())
    assert proc.returncode != 0 and "No module named 'pyspark_asyncapi_kafka'" in proc.stderr, proc.stderr
