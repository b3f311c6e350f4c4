"""`python -m labkit serve` as a subprocess: prints its URIs, serves pymongo, stops cleanly on SIGTERM."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from pymongo import MongoClient

ROOT = Path(__file__).resolve().parents[1]


def _start(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT), PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "labkit", "serve", *args], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_serve_port_zero_then_signal(sig):
    proc = _start("--port", "0")
    try:
        lines = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                break
            lines.append(line)
            if "Ctrl-C" in line:
                break
        text = "".join(lines)
        m = re.search(r"mongodb://127\.0\.0\.1:(\d+)/\?directConnection=true", text)
        assert m, text
        port = int(m.group(1))
        assert port > 0 and "mongodb://127.0.0.1:%d\n" % port in text
        c = MongoClient("mongodb://127.0.0.1:%d" % port, serverSelectionTimeoutMS=5000)
        c.lab.x.insert_one({"_id": 1})
        assert c.lab.x.find_one() == {"_id": 1}
        c.close()
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=20)
        assert proc.returncode == 0, err
        assert "Stopped." in out
        assert "Traceback" not in err
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_serve_refuses_remote_host_without_flag():
    proc = _start("--host", "0.0.0.0", "--port", "0")
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 2
    assert "--allow-remote" in err and "no authentication" in err


def test_serve_help():
    from labkit.__main__ import main
    with pytest.raises(SystemExit) as info:
        main(["serve", "--help"])
    assert info.value.code == 0


def test_serve_warns_when_not_on_loopback(monkeypatch):
    # The warning path without listening beyond this machine: is_loopback is made to say no for 127.0.0.1.
    import io
    import threading

    from labkit.engine.transport import wire

    monkeypatch.setattr(wire, "is_loopback", lambda host: False)
    started: list = []
    real_start = wire.Server.start

    def start(self):
        started.append(self)
        return real_start(self)

    monkeypatch.setattr(wire.Server, "start", start)
    out = io.StringIO()
    t = threading.Thread(target=wire.serve, args=("127.0.0.1", 0), kwargs={"allow_remote": True, "out": out})
    t.start()
    deadline = time.monotonic() + 20
    while "Ctrl-C" not in out.getvalue() and time.monotonic() < deadline:
        time.sleep(0.05)
    started[0]._stopped.set()
    t.join(20)
    text = out.getvalue()
    assert "WARNING" in text and "no authentication" in text and "Stopped." in text
    # and without allow_remote the same host is refused
    assert wire.serve("127.0.0.1", 0, allow_remote=False, out=io.StringIO()) == 2
