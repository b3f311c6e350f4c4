"""Delivering the course (issue 28): Binder and nbgitpuller links, the lab environment, and a JupyterLab set up by
postBuild and started the way Binder starts it, as far as this machine allows (no conda, Binder or hub here).

Facts used: nbgitpuller's links are ``<hub>/hub/user-redirect/git-pull?repo=...&branch=...&urlpath=...`` with the
repository cloned into a folder named after it (nbgitpuller docs, "Link generator"); mybinder.org builds
``/v2/gh/OWNER/REPO/BRANCH`` (or ``/v2/git/URL/BRANCH``) and opens ``?urlpath=`` (Binder docs, "Use Binder"),
from ``environment.yml`` then ``postBuild`` (repo2docker docs, "Configuration files").
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

from labkit import workshop
from labkit.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


def test_links_open_lesson_00_of_the_student_copies():
    got = workshop.links("https://github.com/acme/schema-lab", branch="spring-2027", hub="https://hub.example.edu/")
    binder = urlsplit(got["binder"])
    assert (binder.netloc, binder.path) == ("mybinder.org", "/v2/gh/acme/schema-lab/spring-2027")
    assert parse_qs(binder.query)["urlpath"] == ["lab/tree/students/00_start_here.ipynb"]
    pull = urlsplit(got["nbgitpuller"])
    assert (pull.netloc, pull.path) == ("hub.example.edu", "/hub/user-redirect/git-pull")
    query = parse_qs(pull.query)
    assert query == {"repo": ["https://github.com/acme/schema-lab"], "branch": ["spring-2027"],
                     "urlpath": ["lab/tree/schema-lab/students/00_start_here.ipynb"]}
    assert (ROOT / unquote(query["urlpath"][0]).split("/", 3)[3]).exists(), "the link opens a file that exists"
    other = workshop.links("https://gitlab.example.org/team/schema-lab.git")
    assert other["binder"].startswith("https://mybinder.org/v2/git/https%3A%2F%2Fgitlab.example.org%2Fteam%2F")
    assert "nbgitpuller" not in other


@pytest.mark.parametrize("kwargs, named", [
    ({"repo": "acme/schema-lab"}, "repo="), ({"repo": "https://github.com/acme"}, "repo="),
    ({"repo": "https://github.com/a/b", "branch": "x y"}, "branch="),
    ({"repo": "https://github.com/a/b", "hub": "hub.example.edu"}, "hub="),
])
def test_links_refuse_what_would_not_open(kwargs, named):
    with pytest.raises(ValueError, match=named):
        workshop.links(**kwargs)


def test_cli_prints_the_links(capsys):
    assert main(["workshop", "links", "--repo", "https://github.com/acme/schema-lab", "--hub",
                 "https://hub.example.edu"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in out] == ["binder", "nbgitpuller"]


def test_environment_yml_is_what_binder_builds_from():
    """repo2docker reads environment.yml and then runs postBuild, both at the repository's top level (no
    binder/ folder, which would make it ignore them)."""
    assert (ROOT / "environment.yml").exists() and os.access(ROOT / "postBuild", os.X_OK)
    assert not (ROOT / "binder").exists() and not (ROOT / ".binder").exists()
    assert "dev.py\" lab-setup" in (ROOT / "postBuild").read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> bytes:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for attempt in range(60):
        try:
            with opener.open(url, timeout=30) as resp:
                return resp.read()
        except (urllib.error.URLError, ConnectionError):
            if attempt == 59:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def test_a_binder_style_launch_shows_the_learner_what_dev_py_lab_shows(tmp_path):
    """Binder: copy of the repository as the server's root, postBuild run once (here its `lab-setup` writes into a
    scratch prefix found through JUPYTER_CONFIG_PATH), then `jupyter lab` with no arguments but the link's
    urlpath. The file browser must list only the learner's entries and the lesson must open."""
    pytest.importorskip("jupyterlab")
    repo = tmp_path / "repo"
    shutil.copytree(ROOT, repo, ignore=shutil.ignore_patterns(".git", ".venv", "build", ".tools", "*.egg-info",
                                                               "__pycache__", ".pytest_cache"), symlinks=True)
    prefix = tmp_path / "prefix"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("JUPYTER", "MONGODB_URI", "LABKIT_"))}
    env.update(SCHEMA_LAB_PYTHON=sys.executable, PYTHONPATH=str(ROOT), HOME=str(tmp_path / "home"))
    fake_python = tmp_path / "python-with-prefix"  # the image's Python, as far as lab-setup is concerned
    fake_python.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; print(\"{prefix}\")'\n")
    fake_python.chmod(0o755)
    out = subprocess.run([sys.executable, str(repo / "dev.py"), "lab-setup"], capture_output=True, text=True,
                         env=dict(env, SCHEMA_LAB_PYTHON=str(fake_python)), timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    # lab-setup asks the environment's Python for its sys.prefix: this stand-in answers with the scratch prefix
    config = json.loads((prefix / "etc/jupyter/jupyter_server_config.json").read_text())
    hidden = set(config["ContentsManager"]["hide_globs"])
    assert {"labkit", "tests", "tools", "postBuild", "dev.py", "src"} <= hidden
    settings = json.loads((prefix / "share/jupyter/lab/settings/overrides.json").read_text())
    assert settings["@jupyterlab/docmanager-extension:plugin"]["defaultViewers"]["markdown"] == "Markdown Preview"

    port, token = _free_port(), "binder-style-test"
    for name in ("config", "data", "runtime"):
        (tmp_path / "home" / name).mkdir(parents=True, exist_ok=True)
    lab_env = dict(env, JUPYTER_CONFIG_PATH=str(prefix / "etc/jupyter"), JUPYTER_CONFIG_DIR=str(tmp_path / "home/config"),
                   JUPYTER_DATA_DIR=str(tmp_path / "home/data"), JUPYTER_RUNTIME_DIR=str(tmp_path / "home/runtime"))
    proc = subprocess.Popen([sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                             "--port-retries=0", f"--IdentityProvider.token={token}", "--allow-root",
                             f"--ServerApp.root_dir={repo}"], cwd=repo, env=lab_env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        lab_page = _get(f"{base}/lab/tree/students/00_start_here.ipynb?token={token}")
        assert b"JupyterLab" in lab_page
        listing = json.loads(_get(f"{base}/api/contents?token={token}"))
        assert {i["name"] for i in listing["content"]} == {"CONTENTS.md", "README.md", "INSTRUCTOR.md", "students",
                                                           "notebooks"}
        lesson = json.loads(_get(f"{base}/api/contents/students/00_start_here.ipynb?token={token}"))
        assert lesson["type"] == "notebook" and lesson["content"]["cells"]
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
