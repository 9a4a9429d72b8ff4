"""`make install` prints nothing but errors (issue 28): its editable installs of chatui
and of the runtime client raise no setuptools warning a newcomer would wonder about."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.live import ROOT

MAKEFILE_INSTALL = re.compile(r"pip install -q (-e \S+(?: -e \S+)*)")


def make_install_arguments() -> list[str]:
    """The `pip install -e …` arguments of the Makefile's install step, extras dropped
    (the test installs no dependencies: they are not what warns)."""
    found = MAKEFILE_INSTALL.search((ROOT / "Makefile").read_text())
    assert found, "the Makefile's install step is not `pip install -q -e … -e …` any more"
    return [re.sub(r"\[.*\]", "", part).strip('"') for part in found.group(1).split()]


def test_make_install_editable_installs_print_no_setuptools_warning(tmp_path: Path):
    # A copy of what the install builds, so no egg-info is left in the checkout.
    source = tmp_path / "source"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    ignore = shutil.ignore_patterns("*.egg-info", "__pycache__")
    shutil.copytree(ROOT / "chatui", source / "chatui", ignore=ignore)
    shutil.copytree(ROOT / "clients", source / "clients", ignore=ignore)
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("PIP_")}
    # This pip (a recent one, as `make install` upgrades to) installs into the new venv.
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install"]
    done = subprocess.run(
        [*pip, "-q", "--disable-pip-version-check", "--no-deps", *make_install_arguments()],
        cwd=source,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    output = done.stdout + done.stderr
    # (pip's own notes about the package indexes of this machine are not setuptools'.)
    lines = [line for line in output.splitlines() if "is ignored: it is neither" not in line]
    assert not [line for line in lines if "Warning" in line], "\n".join(lines)
    # Both importable from anywhere, from the copy (editable; found, not imported:
    # their dependencies are not installed here).
    names = ("chatui", "chatui_client")
    find = f"import importlib.util as u; print(*(u.find_spec(n).origin for n in {names!r}))"
    probe = subprocess.run(
        [venv / "bin" / "python", "-c", find],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert probe.returncode == 0, probe.stderr
    assert probe.stdout.split() == [
        str(source / "chatui" / "__init__.py"),
        str(source / "clients" / "python" / "chatui_client" / "__init__.py"),
    ]
