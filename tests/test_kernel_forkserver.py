"""A kernel forked from the warmed helper (tests/kernel_forkserver.py) is the kernel jupyter_client would have
started: same working folder, environment, import path, hash seed, display settings and signal handling."""
from __future__ import annotations

import json
import os
import sys
import time

import pytest
from jupyter_client.manager import KernelManager
from jupyter_client.provisioning import local_provisioner

import kernel_forkserver

PROBE = """
import hashlib, json, os, sys
import pandas as pd
import matplotlib
facts = {"cwd": os.getcwd(), "path": sys.path, "probe": os.environ.get("FORK_PROBE"),
         "hash": hash("schema lab"), "pandas_columns": pd.get_option("display.max_columns"),
         "mpl_backend": matplotlib.get_backend(), "session_leader": os.getsid(0) == os.getpid(),
         "argv0": os.path.basename(sys.argv[0]), "ipython": type(get_ipython()).__name__,
         "main_is_user": sys.modules["__main__"].__dict__ is get_ipython().user_ns}
print(json.dumps(facts))
"""


def _facts(tmp_path, forked: bool, monkeypatch) -> dict:
    monkeypatch.setenv("FORK_PROBE", "seen")
    if not forked:
        monkeypatch.setattr(local_provisioner, "launch_kernel", _plain_launcher())
    km = KernelManager(kernel_name="python3")
    extra = os.pathsep.join([str(tmp_path / "extra"), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    km.start_kernel(cwd=str(tmp_path), env={**os.environ, "FORK_PROBE": "from env", "PYTHONPATH": extra})
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        assert isinstance(km.provisioner.process, kernel_forkserver.ForkedKernel) == forked
        out = []
        reply = kc.execute_interactive(PROBE, timeout=60, output_hook=lambda m: out.append(m))
        assert reply["content"]["status"] == "ok", reply["content"]
        text = "".join(m["content"].get("text", "") for m in out if m["msg_type"] == "stream")
        return json.loads(text)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def _plain_launcher():
    original = local_provisioner.launch_kernel
    while getattr(original, "forks_kernels", False):
        original = original.__wrapped__
    return original


@pytest.fixture(autouse=True)
def _installed():
    if not sys.platform.startswith("linux") or os.environ.get("SCHEMA_LAB_FORK_KERNELS") == "0":
        pytest.skip("kernels are forked on Linux only, unless SCHEMA_LAB_FORK_KERNELS=0 (tests/kernel_forkserver.py)")
    if os.environ.get("PYTHONHASHSEED") is None:
        pytest.skip("the suite runs with PYTHONHASHSEED set (dev.py test); without it kernels are not forked")
    kernel_forkserver.install()


def test_a_forked_kernel_is_the_kernel_jupyter_client_starts(tmp_path, monkeypatch):
    forked = _facts(tmp_path, True, monkeypatch)
    started = _facts(tmp_path, False, monkeypatch)
    assert forked == started
    assert forked["cwd"] == str(tmp_path) and forked["path"][0] == str(tmp_path / "extra")
    assert forked["probe"] == "from env" and forked["session_leader"]
    assert forked["pandas_columns"] == 20 and "inline" in forked["mpl_backend"]


def test_an_interrupt_reaches_the_kernel_and_not_the_test(tmp_path):
    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        assert isinstance(km.provisioner.process, kernel_forkserver.ForkedKernel)
        assert km.provisioner.pgid != os.getpgid(0)   # killpg(SIGINT) on it cannot reach pytest
        msg_id = kc.execute("import time\ntime.sleep(30)")
        time.sleep(0.5)
        km.interrupt_kernel()
        reply = kc.get_shell_msg(timeout=20)
        assert reply["parent_header"]["msg_id"] == msg_id
        assert reply["content"]["status"] == "error" and reply["content"]["ename"] == "KeyboardInterrupt"
        assert km.is_alive()
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert not km.is_alive()


def test_other_commands_and_hash_seeds_are_started_as_before(monkeypatch):
    python = os.path.realpath(kernel_forkserver.sys.executable)
    seed = kernel_forkserver._helper.seed
    assert kernel_forkserver._forkable([python, "-m", "ipykernel_launcher", "-f", "c.json"],
                                       {"PYTHONHASHSEED": seed}) == ["-f", "c.json"]
    assert kernel_forkserver._forkable([python, "-m", "ipykernel_launcher", "-f", "c.json"],
                                       {"PYTHONHASHSEED": seed + "1"}) is None
    assert kernel_forkserver._forkable(["/usr/bin/other-python", "-m", "ipykernel_launcher"],
                                       {"PYTHONHASHSEED": seed}) is None
    assert kernel_forkserver._forkable([python, "-m", "other_kernel", "-f", "c.json"],
                                       {"PYTHONHASHSEED": seed}) is None
