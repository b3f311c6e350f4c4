"""Every command the README shows in a ```bash block runs as written (issue 28): a newcomer copies them.

The blocks are parsed from README.md, so a command added there is run here too. They run in order, with bash,
from a throw-away checkout (a copy of dev.py beside links to everything else, so files a command writes land
there), with dev.py pointed at this test's Python (``SCHEMA_LAB_PYTHON``: nothing is installed) and a scratch
HOME and Jupyter directories:

- ``export NAME=VALUE`` lines hold for the later lines, as in a shell;
- ``python3 dev.py lab`` / ``demo`` start JupyterLab / Voila and must answer over HTTP (the lab's file browser
  listing is checked: CONTENTS.md, students/, notebooks/ and the READMEs, nothing of the developer tree); they
  are stopped then;
- ``python3 dev.py serve`` must print the URIs to connect with; the one on the default port keeps running for
  the lines after it (the README's session uses it), the others are stopped;
- ``python3 dev.py mongosh ...`` gets a ping on its standard input and must answer it (telemetry off first);
- ``python3 dev.py test`` runs the suite this test belongs to: it is run with ``--collect-only`` (it must
  collect the tests, the lessons and the student copies without an error) and ``--assert=plain`` (collecting
  needs no assertion rewriting, which costs about 7 s of CPU here: the throw-away checkout's test files are
  new paths to Python, so nothing compiled for the suite's own run is reused);
- every other line must exit 0.

The README's review examples need a database named ``shop``: one is seeded on the served engine first.
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from served_helpers import mongosh_path, unavailable

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
START_TIMEOUT_S = 120
RUN_TIMEOUT_S = 300
DEFAULT_PORT = 27017


def readme_commands(text: str) -> list[str]:
    """The command lines of every ```bash block, in order: comments dropped, continuation lines joined."""
    lines: list[str] = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S):
        pending = ""
        for raw in block.splitlines():
            line = pending + raw
            if line.rstrip().endswith("\\"):
                pending = line.rstrip()[:-1] + " "
                continue
            pending = ""
            command = _strip_comment(line).strip()
            if command:
                lines.append(command)
    return lines


def _strip_comment(line: str) -> str:
    """``line`` without a trailing ``# comment`` (a ``#`` inside quotes is kept)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i]
    return line


def test_parser_reads_blocks_comments_and_continuations():
    text = ("x\n```bash\npython3 dev.py lab   # opens it\n\nexport A=\"b#c\"  # set\n"
            "python3 dev.py seed \\\n  social\n```\n```text\nnot me\n```\n")
    assert readme_commands(text) == ["python3 dev.py lab", 'export A="b#c"', "python3 dev.py seed    social"]


def test_the_readme_shows_the_newcomer_commands():
    commands = readme_commands(README.read_text())
    for needed in ("python3 dev.py lab", "python3 dev.py doctor", "python3 dev.py serve", "python3 dev.py test"):
        assert needed in commands
    assert any(c.startswith("python3 dev.py mongosh ") for c in commands)
    assert not [c for c in commands if re.search(r"\[--", c)], "no [optional] brackets: they are not shell"


# --- running them ------------------------------------------------------------------------------------------

def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


class Session:
    """Runs README lines one after another in a throw-away checkout, like a newcomer's terminal."""

    def __init__(self, tmp: Path):
        self.checkout = tmp / "schema-lab"
        self.checkout.mkdir()
        for entry in ROOT.iterdir():
            if entry.name in {".git", ".venv", "build", "dev.py"} or entry.name.endswith(".egg-info"):
                continue
            (self.checkout / entry.name).symlink_to(entry)
        shutil.copy2(ROOT / "dev.py", self.checkout / "dev.py")
        home = tmp / "home"
        env = {k: v for k, v in os.environ.items() if not k.startswith(("MONGODB_URI", "LABKIT_", "JUPYTER"))}
        env.update(HOME=str(home), SCHEMA_LAB_PYTHON=sys.executable, PYTHONHASHSEED="0", BROWSER="true",
                   PYTHONPATH=str(ROOT), LABKIT_PROGRESS_FILE=str(tmp / "progress.json"), CI=env.get("CI", ""))
        for name, var in (("config", "JUPYTER_CONFIG_DIR"), ("data", "JUPYTER_DATA_DIR"),
                          ("runtime", "JUPYTER_RUNTIME_DIR"), ("ipython", "IPYTHONDIR")):
            (home / name).mkdir(parents=True, exist_ok=True)
            env[var] = str(home / name)
        exe = mongosh_path()
        if exe:
            env["SCHEMA_LAB_MONGOSH"] = exe
        self.env = env
        self.exports: list[str] = []
        self.background: list[subprocess.Popen] = []
        self.server_uri: str | None = None

    def _bash(self, line: str) -> list[str]:
        return ["bash", "-c", "; ".join([*self.exports, line])]

    def run(self, line: str, stdin: str | None = None, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
        return subprocess.run(self._bash(line), cwd=self.checkout, env=self.env, input=stdin, capture_output=True,
                              text=True, timeout=timeout)

    def start(self, line: str, ready: re.Pattern) -> tuple[subprocess.Popen, re.Match, str]:
        """Start ``line`` in its own process group and wait until its output matches ``ready``."""
        log = self.checkout / f"bg-{len(self.background)}.log"
        proc = subprocess.Popen(self._bash(line), cwd=self.checkout, env=self.env, stdout=log.open("wb"),
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.background.append(proc)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            text = log.read_text(errors="replace")
            found = ready.search(text)
            if found:
                return proc, found, text
            if proc.poll() is not None:
                break
            time.sleep(0.3)
        self.stop(proc)
        pytest.fail(f"{line!r} did not get ready ({ready.pattern!r}):\n{log.read_text(errors='replace')[-3000:]}")

    @staticmethod
    def stop(proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 15), (signal.SIGKILL, 5)):
                try:
                    os.killpg(proc.pid, sig)
                    proc.wait(timeout=wait)
                    break
                except (ProcessLookupError, subprocess.TimeoutExpired):
                    continue

    def close(self) -> None:
        for proc in self.background:
            self.stop(proc)


def _get(url: str, attempts: int = 20) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never through a proxy
    for attempt in range(attempts):
        try:
            with opener.open(url, timeout=30) as resp:
                return resp.status, resp.read()
        except urllib.error.URLError:
            if attempt == attempts - 1:
                raise
            time.sleep(0.5)
    raise AssertionError("unreachable")


def check_lab(session: Session, line: str) -> str:
    proc, found, _ = session.start(line, re.compile(r"(http://127\.0\.0\.1:\d+)/lab\?token=(\w+)"))
    try:
        base, token = found.group(1), found.group(2)
        status, _ = _get(f"{base}/lab?token={token}")
        assert status == 200
        listing = json.loads(_get(f"{base}/api/contents?token={token}")[1])
        names = {item["name"] for item in listing["content"]}
        assert names == {"CONTENTS.md", "README.md", "INSTRUCTOR.md", "students", "notebooks"}, names
        lessons = json.loads(_get(f"{base}/api/contents/notebooks?token={token}")[1])
        assert "src" not in {item["name"] for item in lessons["content"]}, "the lessons' .py sources are hidden"
        first = json.loads(_get(f"{base}/api/contents/students/00_start_here.ipynb?content=0&token={token}")[1])
        assert first["type"] == "notebook"
        return "JupyterLab answered; the file browser shows only the learner's entries"
    finally:
        session.stop(proc)


def check_demo(session: Session, line: str) -> str:
    proc, found, _ = session.start(line, re.compile(r"Voil[aà] is running at:\s*(http://\S+)"))
    session.stop(proc)
    return f"Voila answered at {found.group(1)}"


def check_serve(session: Session, line: str) -> str:
    args = shlex.split(line)
    port = int(args[args.index("--port") + 1]) if "--port" in args else DEFAULT_PORT
    if port and not _port_free(port):
        unavailable(f"port {port} is in use on this machine, so `{line}` cannot run as written")
    # a simulated sharded cluster (--shards) prints one URI, a mongos's: "connect with:"
    ready = r"connect with:\s+(mongodb://\S+)" if "--shards" in args else r"or \(drivers\):\s+(mongodb://\S+)"
    proc, found, _ = session.start(line, re.compile(ready))
    if port == DEFAULT_PORT and session.server_uri is None:
        session.server_uri = found.group(1)  # the README's session runs against it: keep it
        from pymongo import MongoClient

        from labkit import seed
        with MongoClient(session.server_uri, serverSelectionTimeoutMS=5000) as client:
            seed.social(client["shop"], users=300, seed=5, progress=False)  # what the review examples read
    else:
        session.stop(proc)
    return f"served at {found.group(1)}"


class Missing(Exception):
    """A tool this machine lacks (the line is reported; under CI=true that fails the test)."""


def check_mongosh(session: Session, line: str) -> str:
    if mongosh_path() is None:
        raise Missing("mongosh not found; python3 dev.py mongosh installs it into .tools/ (needs npm), or set "
                      "SCHEMA_LAB_MONGOSH")
    out = session.run(line, stdin="db.runCommand({ping: 1}).ok\n", timeout=180)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "telemetry is off" in out.stdout and re.search(r"(^|> )1\s*$", out.stdout, re.M), out.stdout[-2000:]
    return "mongosh answered the ping"


def check_test(session: Session, line: str) -> str:
    out = session.run(f"{line} --collect-only -q -n 0 -p no:cacheprovider --assert=plain", timeout=RUN_TIMEOUT_S)
    assert out.returncode == 0, (out.stdout + out.stderr)[-3000:]
    assert re.search(r"\d+ tests? collected", out.stdout), out.stdout[-1000:]
    assert "students/00_start_here.ipynb" in out.stdout, "the student copies are part of the suite"
    return "the suite collects"


SPECIAL = [
    (re.compile(r"(^|\s)python3 dev\.py lab\b"), check_lab),
    (re.compile(r"(^|\s)python3 dev\.py demo\b"), check_demo),
    (re.compile(r"(^|\s)python3 dev\.py serve\b"), check_serve),
    (re.compile(r"(^|\s)python3 dev\.py mongosh\b"), check_mongosh),
    (re.compile(r"(^|\s)python3 dev\.py test\b"), check_test),
]


def test_every_readme_command_runs_as_written(tmp_path):
    commands = readme_commands(README.read_text())
    session = Session(tmp_path)
    done: list[str] = []
    missing: list[str] = []
    try:
        for line in commands:
            if line.startswith("export "):
                session.exports.append(line)
                continue
            assert line.startswith(("python3 dev.py", "MONGODB_URI=")), (
                f"the README shows {line!r}: teach this test how to run it (or write it as python3 dev.py ...)")
            check = next((fn for pattern, fn in SPECIAL if pattern.search(line)), None)
            if check is not None:
                try:
                    done.append(f"{line}: {check(session, line)}")
                except Missing as exc:
                    missing.append(f"{line}: {exc}")
                continue
            out = session.run(line)
            assert out.returncode == 0, f"{line!r} exited {out.returncode}:\n{(out.stdout + out.stderr)[-3000:]}"
            assert "Traceback" not in out.stderr, out.stderr[-3000:]
            done.append(line)
    finally:
        session.close()
    assert (session.checkout / "review.md").read_text().startswith("# Schema review: shop")
    print("\n".join(done))
    if missing:
        unavailable(f"{len(done)} README commands ran as written; not run for lack of a tool: {'; '.join(missing)}")
