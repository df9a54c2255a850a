"""caplab as a user installs it: the release wheel (maturin, abi3) in a virtual environment of its
own, outside the repository, run with an environment that knows nothing of the checkout — so a
file the package forgot to ship, or an import that only works from the source tree, fails here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEV_BIN = Path(sys.executable).parent
BUILD_TIMEOUT_S = 900  # the engine compiled from cold, where no build of it is cached


def engine_profile(venv: Path = DEV_BIN.parent) -> str:
    """The cargo profile of the engine built into the development venv, from the Makefile's stamp
    (``make test`` builds release-nolto, ``make dev`` release, ``make check`` dev): the wheel is built
    with it, so Cargo reuses that build instead of compiling the engine again in another profile
    (release's fat LTO took two minutes of both cores, beside the other tests)."""
    for profile, stamp in (("release-nolto", "release-nolto"), ("dev", "debug")):
        if (venv / f".stamp-{stamp}").exists():
            return profile
    return "release"


def install_wheel(into: Path) -> Path:
    """Builds the wheel (Cargo reuses the venv's own build of the engine: seconds) and installs it
    with its dependencies (from uv's cache) into a new virtual environment under ``into``; returns
    the environment's ``bin`` directory."""
    wheels = into / "wheels"
    subprocess.run(
        [str(DEV_BIN / "maturin"), "build", "--profile", engine_profile(), "--out", str(wheels)],
        cwd=ROOT,
        env=os.environ | {"VIRTUAL_ENV": str(DEV_BIN.parent)},
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=True,
    )
    [wheel] = wheels.glob("caplab-*.whl")
    venv = into / "venv"
    uv = str(DEV_BIN / "uv")
    subprocess.run([uv, "venv", "--quiet", "--python", sys.executable, str(venv)], check=True, timeout=120)
    subprocess.run(
        [uv, "pip", "install", "--quiet", "--python", str(venv / "bin" / "python"), str(wheel)],
        check=True,
        timeout=600,
    )
    return venv / "bin"


def user_environment(bin_dir: Path) -> dict[str, str]:
    """A shell's environment with the installed ``caplab`` first on PATH and nothing of the
    checkout: no PYTHONPATH, no activated development environment."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p and Path(p) != DEV_BIN]
    env["PATH"] = os.pathsep.join([str(bin_dir), *path])
    return env
