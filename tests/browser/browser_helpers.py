"""Servers (JupyterLab, Voila) and page helpers for the browser tests.

Everything here talks to 127.0.0.1 only. Servers run in their own process group, with temporary Jupyter
config/data/runtime directories, and are killed (the whole group) by ``Server.stop``.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
DOCS_IMAGES = ROOT / "docs" / "images"
# Screenshots go to build/screenshots/ (ignored by git) so that running the tests leaves the checkout clean;
# LABKIT_UPDATE_SCREENSHOTS=1 writes them to docs/images/ instead, to refresh the README's pictures.
SCREENSHOT_DIR = DOCS_IMAGES if os.environ.get("LABKIT_UPDATE_SCREENSHOTS") == "1" else ROOT / "build" / "screenshots"

NOTEBOOK_TIMEOUT_S = 120   # open + run all + checks, per notebook
SERVER_START_TIMEOUT_S = 60
SLIDER_TIMEOUT_S = 90      # from the key presses to the kernel's last new readout on the page (lessons may
                           # recompute for seconds per step on a loaded 2-core machine)

# Lab settings for a quiet, deterministic page: no news/update toast; every cell kept in the DOM
# (JupyterLab 4 otherwise virtualises long notebooks and only renders the cells on screen).
LAB_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False},
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}


# ------------------------------------------------------------------------------------- availability

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"]
INSTALL_HINT = ("install them with `sudo apt-get install chromium && .venv/bin/pip install playwright voila` "
                "(or `sudo tools/install_browser.sh` for chromium; `playwright install` is not needed: the tests "
                "drive Debian's /usr/bin/chromium; set SCHEMA_LAB_CHROMIUM=/path/to/chromium elsewhere)")
VIEWPORT = {"width": 1280, "height": 900}


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def chromium_path() -> str | None:
    """$SCHEMA_LAB_CHROMIUM when set (only that), else Debian's /usr/bin/chromium, else chromium on PATH."""
    override = os.environ.get("SCHEMA_LAB_CHROMIUM")
    candidates = [override] if override else ["/usr/bin/chromium", shutil.which("chromium")]
    for candidate in candidates:
        if candidate and os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def unavailable(what: str) -> None:
    """Skip (locally) or fail (CI=true) because ``what`` is missing."""
    message = f"browser tests need {what}; {INSTALL_HINT}"
    if in_ci():
        pytest.fail(f"{message}. CI=true, so this is a failure, not a skip.", pytrace=False)
    pytest.skip(message)


def require_module(name: str) -> None:
    if importlib.util.find_spec(name) is None:
        unavailable(f"the Python package {name!r} (not importable)")


# --------------------------------------------------------------------------------------------- servers

def free_port() -> int:
    """A port the OS just handed out on 127.0.0.1 (bind to port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def isolated_env(tmp: Path) -> dict[str, str]:
    """Environment for a Jupyter process that ignores the user's Jupyter/IPython setup and real servers."""
    env = dict(os.environ)
    for var in ("JUPYTER_PATH", "JUPYTER_PREFER_ENV_PATH", "JUPYTER_TOKEN", "MONGODB_URI", "LABKIT_DB_PREFIX"):
        env.pop(var, None)
    for name, var in (("config", "JUPYTER_CONFIG_DIR"), ("data", "JUPYTER_DATA_DIR"),
                      ("runtime", "JUPYTER_RUNTIME_DIR"), ("ipython", "IPYTHONDIR")):
        d = tmp / name
        d.mkdir(parents=True, exist_ok=True)
        env[var] = str(d)
    env["PYTHONHASHSEED"] = "0"
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    return env


@dataclass
class Server:
    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    port: int
    token: str
    proc: subprocess.Popen | None = None
    _log: object = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, ready_path: str, any_status: bool = False) -> "Server":
        """Start and wait until ``ready_path`` answers 200 (or anything at all, with ``any_status``)."""
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(self.argv, env=self.env, cwd=self.cwd, stdout=self._log,
                                     stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        url = f"{self.base_url}{ready_path}"
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited with {self.proc.returncode} before answering:\n{self.log()}")
            try:
                with urllib.request.urlopen(url, timeout=5) as resp:  # noqa: S310 - loopback only
                    if resp.status == 200:
                        return self
            except urllib.error.HTTPError:
                if any_status:
                    return self
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
                pass
            time.sleep(0.3)
        self.stop()
        raise TimeoutError(f"{self.name} did not answer {url} within {SERVER_START_TIMEOUT_S} s:\n{self.log()}")

    def log(self, tail: int = 4000) -> str:
        try:
            return self.log_path.read_text(errors="replace")[-tail:]
        except OSError:
            return "(no log)"

    def stop(self) -> None:
        """Kill the server's whole process group (server, kernels, anything they started)."""
        if self.proc is not None and self.proc.poll() is None:
            for sig, wait in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
                try:
                    os.killpg(self.proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    self.proc.wait(timeout=wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.proc is not None:
            try:  # kernels may outlive the server in the same group
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if self._log is not None:
            self._log.close()
            self._log = None


def _start_with_retries(make, ready_path: str, attempts: int = 3, any_status: bool = False) -> Server:
    """Start a server on a fresh free port; retry if it exited at once (another process took the port)."""
    error: Exception | None = None
    for _ in range(attempts):
        server = make(free_port())
        try:
            return server.start(ready_path, any_status)
        except RuntimeError as exc:  # e.g. "address already in use" (--port-retries=0)
            server.stop()
            error = exc
    raise error  # type: ignore[misc]


def copy_lab_root(dest: Path, extra: dict[str, Path] | None = None) -> Path:
    """A throwaway copy of what the notebooks need: notebooks/*.ipynb (+ data/), so the repo is never written."""
    (dest / "notebooks").mkdir(parents=True, exist_ok=True)
    for nb in NOTEBOOKS.glob("*.ipynb"):
        shutil.copy2(nb, dest / "notebooks" / nb.name)
    if (ROOT / "data").is_dir():
        shutil.copytree(ROOT / "data", dest / "data", dirs_exist_ok=True)
    return dest


def start_lab(root_dir: Path, tmp: Path) -> Server:
    """One isolated JupyterLab server serving ``root_dir``; its kernels are forked from a warmed helper as the
    suite's are (tests/kernel_forkserver.py, installed by the server's config file; the lessons run in them as
    in started kernels), unless ``SCHEMA_LAB_FORK_KERNELS=0``."""
    env = isolated_env(tmp)
    (Path(env["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.py").write_text(
        f"import sys\nsys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})\n"
        "import kernel_forkserver\nkernel_forkserver.install()\n")
    settings = tmp / "app-settings"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "overrides.json").write_text(json.dumps(LAB_OVERRIDES, indent=2))
    token = secrets.token_hex(24)

    def make(port: int) -> Server:
        argv = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                "--port-retries=0", f"--ServerApp.token={token}", f"--ServerApp.root_dir={root_dir}",
                "--ServerApp.allow_root=True", "--LabApp.expose_app_in_browser=True",
                f"--LabApp.app_settings_dir={settings}", "--ServerApp.open_browser=False"]
        return Server("JupyterLab", argv, env, root_dir, tmp / f"lab-{port}.log", port, token)

    return _start_with_retries(make, f"/api/status?token={token}")


def copy_learner_checkout(dest: Path) -> Path:
    """A throwaway copy of what `python3 dev.py lab` serves a learner: dev.py, CONTENTS.md and the READMEs,
    students/ and notebooks/ (the .ipynb and README), data/, and the JupyterLab settings dev.py passes."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("dev.py", "CONTENTS.md", "README.md", "INSTRUCTOR.md"):
        shutil.copy2(ROOT / name, dest / name)
    (dest / "students").mkdir(exist_ok=True)
    for path in (ROOT / "students").iterdir():
        shutil.copy2(path, dest / "students" / path.name)
    (dest / "notebooks").mkdir(exist_ok=True)
    for path in [*NOTEBOOKS.glob("*.ipynb"), NOTEBOOKS / "README.md"]:
        shutil.copy2(path, dest / "notebooks" / path.name)
    shutil.copytree(ROOT / "data", dest / "data", dirs_exist_ok=True)
    shutil.copytree(ROOT / "tools" / "jupyterlab-settings", dest / "tools" / "jupyterlab-settings", dirs_exist_ok=True)
    return dest


def start_dev_lab(checkout: Path, tmp: Path) -> Server:
    """`python3 dev.py lab` in ``checkout`` (dev.py told to use this test's Python: nothing is installed), on a free
    port with a known token; the lab settings are dev.py's plus the browser tests' (LAB_OVERRIDES)."""
    env = isolated_env(tmp)
    env["SCHEMA_LAB_PYTHON"] = sys.executable
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(ROOT), env.get("PYTHONPATH", "")] if p)
    settings = tmp / "dev-app-settings"
    settings.mkdir(parents=True, exist_ok=True)
    merged = json.loads((checkout / "tools" / "jupyterlab-settings" / "overrides.json").read_text())
    merged.update(LAB_OVERRIDES)
    (settings / "overrides.json").write_text(json.dumps(merged, indent=2))
    token = secrets.token_hex(24)

    def make(port: int) -> Server:
        argv = [sys.executable, str(checkout / "dev.py"), "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
                "--port-retries=0", f"--IdentityProvider.token={token}", "--LabApp.expose_app_in_browser=True",
                f"--LabApp.app_settings_dir={settings}"]
        return Server("dev.py lab", argv, env, checkout, tmp / f"dev-lab-{port}.log", port, token)

    return _start_with_retries(make, f"/api/status?token={token}")


def start_voila(notebook: Path, tmp: Path) -> Server:
    """Voila rendering one notebook, sources stripped, as in demo mode."""
    env = isolated_env(tmp)
    token = secrets.token_hex(24)

    def make(port: int) -> Server:
        argv = [sys.executable, "-m", "voila", str(notebook), "--no-browser", f"--port={port}",
                "--Voila.ip=127.0.0.1", "--Voila.port_retries=0", "--strip_sources=True", f"--token={token}",
                "--show_tracebacks=True"]
        return Server("Voila", argv, env, notebook.parent, tmp / f"voila-{port}.log", port, token)

    # Any answer (404 included) from a path that is not the notebook: GET / would execute the notebook.
    return _start_with_retries(make, f"/schema-lab-ready-probe?token={token}", any_status=True)


# ----------------------------------------------------------------------------------------- lab helpers

def squash(text: str) -> str:
    """Text with all whitespace removed: how rendered HTML is compared with the kernel's HTML string."""
    return re.sub(r"\s+", "", text or "")


# Runs in the page. Finds the panel opened for ``path`` (stored on window.__schemaLab).
_PANEL_JS = """
const app = window.jupyterapp;
const panel = (window.__schemaLab || {})[path];
if (!panel) throw new Error('notebook ' + path + ' is not open');
"""

_STATE_JS = """async (path) => {""" + _PANEL_JS + """
  const kernel = panel.sessionContext.session && panel.sessionContext.session.kernel;
  const cells = [];
  const problems = [];
  panel.content.widgets.forEach((cell, i) => {
    const m = cell.model;
    const tags = (m.getMetadata && m.getMetadata('tags')) || [];
    if (m.type !== 'code') return;
    const source = m.sharedModel.getSource();
    const prompt = (cell.node.querySelector('.jp-InputPrompt') || {}).textContent || '';
    const info = {index: i, count: m.executionCount, empty: source.trim() === '', running: prompt.includes('*'),
                  tags: tags, widgetOutputs: 0, widgetModelIds: []};
    const raises = tags.includes('raises-exception');
    for (let k = 0; k < m.outputs.length; k++) {
      const out = m.outputs.get(k).toJSON();
      if (out.output_type === 'error' && !raises) {
        const note = tags.length ? ` (cell tags ${JSON.stringify(tags)}; JupyterLab's Run All ignores every tag `
                                   + `but raises-exception, so a learner's Run All stops here)` : '';
        problems.push(`cell ${i}${note}: ${out.ename}: ${out.evalue}\\n` + (out.traceback || []).join('\\n')
                      .replace(/\\u001b\\[[0-9;]*m/g, ''));
      }
      const view = out.data && out.data['application/vnd.jupyter.widget-view+json'];
      if (view) { info.widgetOutputs += 1; info.widgetModelIds.push(view.model_id); }
    }
    if (!raises) {
      cell.node.querySelectorAll(
        ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").forEach(el => {
          if (el.textContent.includes('Traceback')) problems.push(`cell ${i}: traceback on stderr:\\n` + el.textContent);
      });
      cell.node.querySelectorAll(
        ".jp-RenderedText[data-mime-type='application/vnd.jupyter.error']").forEach(el => {
          const t = 'cell ' + i + ': error output: ' + el.textContent.slice(0, 2000);
          if (!problems.some(p => p.startsWith('cell ' + i + ':'))) problems.push(t);
      });
    }
    info.widgetsRendered = cell.node.querySelectorAll(
      '.jp-OutputArea-output .jupyter-widgets, .jp-OutputArea-output [class*="widget-"]').length;
    const text = (cell.node.querySelector('.jp-Cell-outputWrapper') || {}).innerText || '';
    info.loadingWidget = text.includes('Loading widget...');
    info.errorDisplayingWidget = text.includes('Error displaying widget');
    cells.push(info);
  });
  const body = document.body.innerText;
  const banners = [];
  for (const needle of ['Javascript Error', 'No renderer could be found', 'Error displaying widget',
                        'Failed to load', 'is not installed', 'Build Recommended', 'Kernel Error']) {
    if (body.includes(needle)) banners.push(needle);
  }
  const dialogs = Array.from(document.querySelectorAll('.jp-Dialog')).map(d => d.innerText.slice(0, 500));
  const toasts = Array.from(document.querySelectorAll('.Toastify__toast')).map(d => d.innerText.slice(0, 300));
  return {kernel: kernel ? kernel.status : 'none', cells, problems, banners, dialogs, toasts};
}"""


@dataclass
class LabNotebook:
    """A notebook open in a Lab page (``page``), addressed by its path relative to the server root."""
    page: object
    path: str

    def is_open(self) -> bool:
        try:
            return self.page.evaluate("(path) => !!((window.__schemaLab || {})[path])", self.path)
        except Exception:  # noqa: BLE001 - page reloaded or closed
            return False

    def kernel_status(self) -> str:
        return self.page.evaluate("""(path) => {""" + _PANEL_JS + """
            const s = panel.sessionContext.session; return s && s.kernel ? s.kernel.status : 'none'; }""", self.path)

    def activate(self) -> None:
        """Bring this notebook's tab to the front (keyboard input and visibility need it)."""
        self.page.evaluate("""(path) => {""" + _PANEL_JS + """ app.shell.activateById(panel.id); }""", self.path)

    def state(self) -> dict:
        return self.page.evaluate(_STATE_JS, self.path)

    def kernel_exec(self, code: str, timeout_s: float = 30) -> str:
        """Run ``code`` in this notebook's kernel (not in a cell) and return its stdout."""
        js = """async ([path, code, timeoutMs]) => {""" + _PANEL_JS + """
          const kernel = panel.sessionContext.session.kernel;
          const future = kernel.requestExecute({code, silent: false, store_history: false});
          let out = '', err = '';
          future.onIOPub = msg => {
            if (msg.header.msg_type === 'stream') out += msg.content.text;
            if (msg.header.msg_type === 'error') err += msg.content.ename + ': ' + msg.content.evalue;
          };
          const timer = new Promise((_, reject) => setTimeout(() => reject(new Error('kernel_exec timed out')),
                                                              timeoutMs));
          await Promise.race([future.done, timer]);
          if (err) throw new Error(err);
          return out;
        }"""
        return self.page.evaluate(js, [self.path, code, int(timeout_s * 1000)])


def ensure_lab_loaded(page, lab: Server) -> None:
    """Load Lab into ``page`` (fresh workspace) unless it is already there and healthy; close any dialog."""
    try:
        healthy = page.url.startswith(lab.base_url) and page.evaluate(
            "() => !!(window.jupyterapp && window.jupyterapp.commands)")
    except Exception:  # noqa: BLE001 - a crashed or closed page
        healthy = False
    if not healthy:
        page.goto(f"{lab.base_url}/lab?reset&token={lab.token}", wait_until="domcontentloaded")
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.commands", timeout=60_000)
        page.evaluate("async () => { await window.jupyterapp.restored; }")
    for _ in range(3):  # a dialog left over by a failed test would block the next one
        dialogs = page.locator(".jp-Dialog")
        if not dialogs.count():
            break
        page.keyboard.press("Escape")
        page.wait_for_timeout(300)


def open_notebook(page, lab: Server, path: str) -> LabNotebook:
    """Open ``path`` as a notebook in the Lab page and wait for an idle kernel."""
    ensure_lab_loaded(page, lab)
    page.evaluate("""async (path) => {
        const app = window.jupyterapp;
        await app.restored;
        const panel = await app.commands.execute('docmanager:open', {path, factory: 'Notebook'});
        await panel.context.ready;
        await panel.sessionContext.ready;
        app.shell.activateById(panel.id);
        if (app.shell.collapseLeft) app.shell.collapseLeft();
        window.__schemaLab = Object.assign(window.__schemaLab || {}, {[path]: panel});
    }""", path)
    nb = LabNotebook(page, path)
    wait_for(page, lambda: nb.state()["kernel"] == "idle", 60, f"kernel of {path} to be idle")
    return nb


def wait_for(page, predicate, timeout_s: float, what: str, poll_s: float = 0.25):
    """Poll ``predicate`` (may use the page) until true; fail with ``what`` after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        page.wait_for_timeout(poll_s * 1000)
    raise AssertionError(f"timed out after {timeout_s:.0f} s waiting for {what}")


def run_all_and_wait(nb: LabNotebook, timeout_s: float = NOTEBOOK_TIMEOUT_S) -> dict:
    """Run all cells as a learner would and wait until every code cell ran and the kernel is idle.

    Fails early, with the traceback, as soon as a cell shows an error (Lab stops a run-all there).
    """
    page = nb.page
    page.evaluate("""(path) => {""" + _PANEL_JS + """
        app.shell.activateById(panel.id);
        // not awaited: progress is polled from Python with a deadline
        app.commands.execute('notebook:run-all-cells');
    }""", nb.path)
    deadline = time.monotonic() + timeout_s
    state: dict = {}
    idle_since = None
    while time.monotonic() < deadline:
        state = nb.state()
        assert not state["problems"], f"{nb.path}: error output after run-all:\n" + "\n\n".join(state["problems"])
        done = all(c["count"] is not None and not c["running"] for c in state["cells"] if not c["empty"])
        if done and state["kernel"] == "idle":
            idle_since = idle_since or time.monotonic()
            if time.monotonic() - idle_since > 0.5:  # idle and stayed idle: no queued comm updates
                return state
        else:
            idle_since = None
        page.wait_for_timeout(300)
    unrun = [c["index"] for c in state.get("cells", []) if not c["empty"] and c["count"] is None]
    raise AssertionError(f"{nb.path}: run-all did not finish within {timeout_s} s "
                         f"(kernel {state.get('kernel')!r}, code cells without execution count: {unrun}, "
                         f"dialogs: {state.get('dialogs')})")


LIVE_MODELS_PROBE = """\
def __schema_lab_live(ids):
    import json
    try:
        from ipywidgets.widgets.widget import _instances as inst
    except ImportError:
        from ipywidgets import Widget
        inst = Widget.widgets
    print(json.dumps([i for i in ids if i in inst]))
__schema_lab_live(%s)
del __schema_lab_live
"""


def live_widget_ids(nb: LabNotebook, ids: list[str]) -> set[str]:
    """The widget model ids that still exist in the kernel (a closed widget, e.g. a finished tqdm bar with
    ``leave=False``, is removed from the page by design)."""
    if not ids:
        return set()
    out = nb.kernel_exec(LIVE_MODELS_PROBE % json.dumps(sorted(ids)))
    return set(json.loads(out.strip().splitlines()[-1]))


def assert_clean(nb: LabNotebook, state: dict, timeout_s: float = 30) -> dict:
    """No errors, no banners/dialogs, every live widget rendered (waiting a bounded time for late ones)."""
    alive = live_widget_ids(nb, [m for c in state["cells"] for m in c["widgetModelIds"]])

    def live(cell):
        return bool(set(cell["widgetModelIds"]) & alive)

    def settled():
        s = nb.state()
        pending = [c for c in s["cells"] if live(c) and (c["loadingWidget"] or not c["widgetsRendered"])]
        return s if not pending else None

    try:
        state = wait_for(nb.page, settled, timeout_s, "widgets to render")
    except AssertionError:
        state = nb.state()
    assert not state["problems"], f"{nb.path}: error output:\n" + "\n\n".join(state["problems"])
    assert not state["dialogs"], f"{nb.path}: dialog(s) open: {state['dialogs']}"
    assert not state["banners"], f"{nb.path}: page shows {state['banners']}"
    for c in state["cells"]:
        where = f"{nb.path} cell {c['index']}"
        assert not c["errorDisplayingWidget"], f"{where}: shows 'Error displaying widget'"
        if live(c):
            assert c["widgetsRendered"] > 0, f"{where}: widget output but no .jupyter-widgets/.widget-* element"
            assert not c["loadingWidget"], f"{where}: still shows 'Loading widget...'"
    state["live_widget_cells"] = [c["index"] for c in state["cells"] if live(c)]
    return state


def close_notebook(nb: LabNotebook) -> None:
    """Shut the kernel down and close the panel without saving (the served files are copies anyway)."""
    try:
        nb.page.evaluate("""async (path) => {""" + _PANEL_JS + """
            // not awaited (saves 1-3 s a notebook); the server kills what is left at the end of the session
            panel.sessionContext.shutdown().catch(() => {});
            panel.context.model.dirty = false;
            panel.close();
            delete window.__schemaLab[path];
        }""", nb.path)
    except Exception:  # noqa: BLE001 - the page may be gone; the server teardown kills kernels anyway
        pass


def scroll_to_top(nb: LabNotebook) -> None:
    nb.page.evaluate("""(path) => {""" + _PANEL_JS + """
        panel.content.activeCellIndex = 0;
        panel.content.deselectAll();
        panel.content.scrollToItem && panel.content.scrollToItem(0, 'start');
        for (const el of [panel.content.node, ...panel.content.node.querySelectorAll('.jp-WindowedPanel-outer')]) {
          el.scrollTop = 0;
        }
        if (document.activeElement) document.activeElement.blur();
    }""", nb.path)
    nb.page.wait_for_timeout(300)


def lab_screenshot(nb: LabNotebook, name: str) -> Path:
    """<SCREENSHOT_DIR>/<name>.png of this notebook in Lab's single-document mode (no tabs of other notebooks)."""
    page = nb.page
    nb.activate()
    page.evaluate("() => { window.jupyterapp.shell.mode = 'single-document'; }")
    page.wait_for_timeout(400)
    try:
        return screenshot(page, name)
    finally:
        page.evaluate("() => { window.jupyterapp.shell.mode = 'multiple-document'; }")
        nb.activate()


def screenshot(page, name: str, fit_content: bool = False) -> Path:
    """Write <SCREENSHOT_DIR>/<name>.png (deterministic name, overwritten each run).

    ``fit_content``: crop the viewport's height to the page's content (for pages that don't fill it).
    """
    SCREENSHOT_DIR.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOT_DIR / f"{name}.png"
    page.mouse.move(0, 0)  # no hover highlight
    clip = None
    if fit_content:
        size = page.viewport_size
        bottom = page.evaluate("""() => Math.max(...Array.from(document.body.querySelectorAll('*'))
            .filter(e => e.offsetParent !== null).map(e => e.getBoundingClientRect().bottom), 0)""")
        clip = {"x": 0, "y": 0, "width": size["width"], "height": min(size["height"], max(200, int(bottom) + 24))}
    page.screenshot(path=str(path), clip=clip)
    return path


# ------------------------------------------------------------------------------------------- sliders

@dataclass
class SliderReading:
    slider_before: str
    slider_after: str
    readout_before: str   # visible text, whitespace removed
    readout_after: str
    readout_locator: object = None


# Kernel-side probe: every ipywidgets HTML value and IntSlider value currently alive in the kernel.
KERNEL_PROBE = """\
def __schema_lab_probe():
    import json, re, html as h
    try:
        from ipywidgets.widgets.widget import _instances as inst
    except ImportError:
        from ipywidgets import Widget
        inst = Widget.widgets
    texts, sliders = [], []
    for wdg in list(inst.values()):
        name = type(wdg).__name__
        if name in ('HTML', 'HTMLMath', 'Label') and isinstance(getattr(wdg, 'value', None), str):
            texts.append(re.sub(r'\\s+', '', h.unescape(re.sub(r'<[^>]*>', ' ', wdg.value))))
        elif name == 'Output':
            for o in wdg.outputs:
                t = o.get('text') or (o.get('data') or {}).get('text/html') or (o.get('data') or {}).get('text/plain') or ''
                texts.append(re.sub(r'\\s+', '', h.unescape(re.sub(r'<[^>]*>', ' ', t if isinstance(t, str) else ''.join(t)))))
        if name.endswith('Slider'):
            sliders.append(str(wdg.value))
    print(json.dumps({'texts': texts, 'sliders': sliders}))
__schema_lab_probe()
del __schema_lab_probe
"""


def _slider(root, slider_index: int):
    sliders = root.locator(".widget-slider")
    count = sliders.count()
    assert count > slider_index, f"expected at least {slider_index + 1} slider(s) on the page, found {count}"
    return sliders.nth(slider_index)


def _readout_for(root, slider, readout_selector: str):
    """The readout shown with the slider: in the same output area if there is one there, else the first."""
    area = slider.locator("xpath=ancestor::div[contains(@class,'jp-OutputArea-output')][1]")
    if area.count() and area.locator(readout_selector).count():
        return area.locator(readout_selector).first
    loc = root.locator(readout_selector)
    assert loc.count() > 0, f"no readout matching {readout_selector!r} on the page"
    return loc.first


def move_slider_and_read(page, notebook: LabNotebook | None, slider_index: int, presses: int,
                         readout_selector: str = ".labkit-readout", key: str = "ArrowRight",
                         timeout_s: float = SLIDER_TIMEOUT_S, max_presses: int = 0) -> SliderReading:
    """Move the ``slider_index``-th slider as a user would (focus its handle, press ``key`` ``presses`` times;
    ArrowRight becomes ArrowLeft when the slider starts at its maximum) and read the readout next to it.

    ``notebook`` scopes the search to that Lab notebook panel (``None``: the whole page, e.g. Voila). After the
    presses, waits until the readout text has been stable for 1 s (and, in Lab, the kernel is idle: with
    ``continuous_update=False`` every key press is one recomputation in the kernel). If the readout has not
    changed yet (a lesson whose readout moves in coarse steps) and ``max_presses`` allows, presses again in
    doubling bursts, as a learner nudging the slider further would, up to ``max_presses`` presses in all.
    """
    if notebook is not None:
        notebook.activate()
    root = page.locator(f"#{_panel_id(notebook)}") if notebook is not None else page.locator("body")
    slider = _slider(root, slider_index)
    slider.scroll_into_view_if_needed()
    value_box = slider.locator(".widget-readout")
    readout = _readout_for(root, slider, readout_selector)
    slider_before = value_box.inner_text().strip()
    readout_before = squash(readout.inner_text())
    handle = slider.locator(".noUi-handle, .ui-slider-handle").first
    now, top = handle.get_attribute("aria-valuenow"), handle.get_attribute("aria-valuemax")
    if key == "ArrowRight" and now is not None and now == top:
        key = "ArrowLeft"  # already at its maximum: move it down instead
    deadline = time.monotonic() + timeout_s
    done, burst = 0, presses
    while True:
        handle.focus()
        for _ in range(burst):
            page.keyboard.press(key)
            page.wait_for_timeout(50)
        done += burst
        if done == burst:
            wait_for(page, lambda: value_box.inner_text().strip() != slider_before, timeout_s,
                     f"slider {slider_index} to move from {slider_before}")
        text = _settled_text(page, notebook, readout, max(5.0, deadline - time.monotonic()))
        if text != readout_before or done + burst * 2 > max_presses or time.monotonic() > deadline:
            break
        burst *= 2
    slider_after = value_box.inner_text().strip()
    assert text != readout_before, (f"readout {readout_selector!r} did not change after {done} x {key} "
                                    f"(slider {slider_before} -> {slider_after}): {readout_before!r}")
    return SliderReading(slider_before, slider_after, readout_before, text, readout)


def _settled_text(page, notebook: LabNotebook | None, readout, timeout_s: float) -> str:
    """The readout's text once stable for 1 s (and, in Lab, with the kernel idle)."""
    stable = {"text": None, "since": 0.0}

    def settled():
        text = squash(readout.inner_text())
        now = time.monotonic()
        if text != stable["text"] or (notebook is not None and notebook.kernel_status() != "idle"):
            stable.update(text=text, since=now)
            return False
        return now - stable["since"] > 1.0

    wait_for(page, settled, timeout_s, "the readout to settle after the slider moved")
    return stable["text"]


def _panel_id(nb: LabNotebook) -> str:
    return nb.page.evaluate("""(path) => {""" + _PANEL_JS + """ return panel.id; }""", nb.path)


def panel_locator(nb: LabNotebook):
    """Playwright locator of the notebook's panel (its cells and outputs)."""
    return nb.page.locator(f"#{_panel_id(nb)}")


def kernel_widget_state(nb: LabNotebook) -> dict:
    """Readout texts (whitespace removed) and slider values as the kernel holds them now."""
    out = nb.kernel_exec(KERNEL_PROBE)
    return json.loads(out.strip().splitlines()[-1])


def assert_readout_matches_kernel(nb: LabNotebook, reading: SliderReading, timeout_s: float = SLIDER_TIMEOUT_S):
    """The page's readout equals a readout the kernel computed, for the slider value the page shows."""
    expected_slider = reading.slider_after.replace(",", "")
    last: dict = {}

    def agrees():
        nonlocal last
        if nb.state()["kernel"] != "idle":
            return False
        last = kernel_widget_state(nb)
        page_text = squash(reading.readout_locator.inner_text())
        if expected_slider in [v.replace(",", "") for v in last["sliders"]] and page_text in last["texts"]:
            reading.readout_after = page_text
            return True
        return False
    try:
        wait_for(nb.page, agrees, timeout_s, "the kernel and the page to agree")
    except AssertionError as exc:
        raise AssertionError(f"{exc}: page slider {reading.slider_after}, page readout {reading.readout_after!r}, "
                             f"kernel state {last}") from None
