"""Kernels for the suite's notebooks, forked from one warmed process instead of each started from nothing.

nbval (the lessons and student copies) and nbclient (tests/test_notebooks_served.py) start a fresh ipykernel
for every notebook: about 100 kernels a run, each a new Python that imports ipykernel, IPython, pymongo, numpy,
pandas and labkit again before the first cell. Here each pytest process starts one helper process (this file run
as a script) that imports those modules once and then forks a child per kernel. The child is the same kernel: it
sets the environment, working folder, ``sys.argv`` and ``sys.path`` the kernel command would have had
(``python -m ipykernel_launcher -f <connection file>``), starts its own session as jupyter_client's launcher
does, and runs ``ipykernel.kernelapp``; the notebook's cells run in it exactly as in a started kernel. Nothing
is pre-imported that looks at its surroundings when imported, except pandas: matplotlib reads ``MPLBACKEND``,
which the kernel sets, and ipywidgets and tqdm look for a running IPython, so they decide that inside the kernel;
pandas asks only whether ``get_ipython()`` has a kernel (then its tables show 20 columns at most), and the helper
imports it with one that has, as every kernel would answer.

Only the kernel command jupyter_client builds for this Python is forked, and only when the kernel's
``PYTHONHASHSEED`` is the helper's (a forked child keeps its parent's hash seed); any other command is started
as before. Linux only (elsewhere every kernel is started as before); ``SCHEMA_LAB_FORK_KERNELS=0`` turns it
off. Installed by :func:`install` from tests/pytest_boot.py (every pytest process) and from the config file of
the browser tests' JupyterLab (tests/browser/browser_helpers.py).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from typing import Any

WARM_IMPORTS = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell", "ipykernel.debugger",
                "IPython.core.interactiveshell", "jupyter_client.session", "zmq", "tornado.ioloop", "pymongo", "bson",
                "numpy", "pandas", "labkit")


def _warm(names: list[str]) -> None:
    """In the helper: import ``names`` once for every kernel it will fork."""
    import builtins
    import types

    saved_err = os.dup(2)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 2)  # debugpy's notice on import goes where a kernel's stderr goes under nbval: nowhere
    # what pandas sees when imported in a kernel: an IPython with a kernel (its tables then get 20 columns at most)
    builtins.get_ipython = lambda: types.SimpleNamespace(kernel=True)  # type: ignore[attr-defined]
    try:
        for name in names:
            __import__(name)
    finally:
        del builtins.get_ipython  # type: ignore[attr-defined]
        os.dup2(saved_err, 2)
        os.close(saved_err)
        os.close(null)


def _serve(requests: Any, answers: Any) -> None:
    """In the helper: one JSON request a line (args, env, cwd, ...) -> fork a kernel, answer its pid."""
    import signal

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # children are reaped by the system: no zombies
    for line in requests:
        req = json.loads(line)
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(ready_r)
            _become_kernel(req, ready_w)  # never returns
        os.close(ready_w)
        os.read(ready_r, 1)  # the child leads its own session before its pid is handed out (signals go to it)
        os.close(ready_r)
        answers.write(f"{pid}\n")
        answers.flush()


def _become_kernel(req: dict, ready_w: int) -> None:
    """In a forked child: become the kernel ``python -m ipykernel_launcher <args>`` would have started."""
    import signal
    import traceback

    code = 0
    try:
        os.setsid()  # as jupyter_client's launcher does (start_new_session): interrupts go to the kernel's group
        os.write(ready_w, b"s")
        os.close(ready_w)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null if req["quiet_out"] else 2, 1)
        if req["quiet_err"]:
            os.dup2(null, 2)
        os.close(null)
        os.environ.clear()
        os.environ.update(req["env"])
        os.chdir(req["cwd"])
        del sys.path[0]  # the helper script's folder: ipykernel_launcher drops its own folder's entry too
        extra = [p for p in req["env"].get("PYTHONPATH", "").split(os.pathsep) if p and p not in sys.path]
        sys.path[0:0] = extra  # where Python puts PYTHONPATH: before the standard library
        sys.argv = [req["launcher"], *req["args"]]
        from ipykernel import kernelapp

        kernelapp.launch_new_instance(argv=[*req["args"], f"--IPKernelApp.parent_handle={os.getppid()}"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0
    except BaseException:  # noqa: BLE001 - reported on the kernel's stderr, as a failed kernel start would be
        traceback.print_exc()
        code = 1
    finally:
        os._exit(code)


class ForkedKernel:
    """The part of :class:`subprocess.Popen` jupyter_client's LocalProvisioner uses, for a kernel the helper
    forked (a child of the helper, so it is polled by pid, not waited for)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.stdin = self.stdout = self.stderr = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                os.kill(self.pid, 0)
            except ProcessLookupError:
                self.returncode = 0
            except PermissionError:
                pass
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired([str(self.pid)], timeout)
            time.sleep(0.01)
        return self.returncode  # type: ignore[return-value]

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self) -> None:
        self.send_signal(15)

    def kill(self) -> None:
        self.send_signal(9)


class _Helper:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.proc: subprocess.Popen | None = None
        self.seed = os.environ.get("PYTHONHASHSEED")

    def fork(self, request: dict) -> int:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self.proc = subprocess.Popen([sys.executable, __file__, *WARM_IMPORTS], stdin=subprocess.PIPE,
                                             stdout=subprocess.PIPE, text=True, bufsize=1)
            assert self.proc.stdin and self.proc.stdout
            self.proc.stdin.write(json.dumps(request) + "\n")
            self.proc.stdin.flush()
            answer = self.proc.stdout.readline()
        if not answer.strip().isdigit():
            raise RuntimeError(f"the kernel fork helper did not answer (exit status {self.proc.poll()})")
        return int(answer)


_helper = _Helper()


def _forkable(cmd: list[str], env: dict[str, str]) -> list[str] | None:
    """The kernel's arguments if ``cmd`` is ``<this python> -m ipykernel_launcher ...`` with our hash seed."""
    if len(cmd) < 3 or cmd[1:3] != ["-m", "ipykernel_launcher"]:
        return None
    if os.path.realpath(cmd[0]) != os.path.realpath(sys.executable):
        return None
    if env.get("PYTHONHASHSEED") != _helper.seed or _helper.seed is None:
        return None
    return cmd[3:]


def install() -> None:
    """Make jupyter_client's local kernel launcher fork kernels from the warmed helper (see the module's text)."""
    if os.environ.get("SCHEMA_LAB_FORK_KERNELS", "1") == "0" or not sys.platform.startswith("linux"):
        return  # macOS forbids some libraries in a forked child of a process that loaded them; Windows has no fork
    from jupyter_client.provisioning import local_provisioner

    original = local_provisioner.launch_kernel
    if getattr(original, "forks_kernels", False):
        return
    import ipykernel_launcher

    def launch_kernel(cmd: list[str], stdin: Any = None, stdout: Any = None, stderr: Any = None,
                      env: dict[str, str] | None = None, independent: bool = False, cwd: str | None = None,
                      **kw: Any) -> Any:
        full_env = dict(os.environ if env is None else env)
        args = _forkable(cmd, full_env)
        if args is None or kw:
            return original(cmd, stdin=stdin, stdout=stdout, stderr=stderr, env=env, independent=independent,
                            cwd=cwd, **kw)
        if not independent:
            full_env["JPY_PARENT_PID"] = str(os.getpid())
        pid = _helper.fork({"args": args, "env": full_env, "cwd": os.path.abspath(cwd or os.getcwd()),
                            "launcher": ipykernel_launcher.__file__,
                            "quiet_out": stdout == subprocess.DEVNULL or _is_devnull(stdout),
                            "quiet_err": stderr == subprocess.DEVNULL or _is_devnull(stderr)})
        return ForkedKernel(pid)

    launch_kernel.forks_kernels = True  # type: ignore[attr-defined]
    launch_kernel.__wrapped__ = original  # type: ignore[attr-defined]
    local_provisioner.launch_kernel = launch_kernel


def _is_devnull(stream: Any) -> bool:
    name = getattr(stream, "name", None)
    return isinstance(name, str) and name == os.devnull


if __name__ == "__main__":  # the helper: python kernel_forkserver.py <module to import> ...
    _warm(sys.argv[1:])
    _serve(sys.stdin, sys.stdout)
