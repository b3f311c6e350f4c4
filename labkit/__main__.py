"""Command line: ``python -m labkit doctor | seed | reset | workshop | progress | review | serve`` (``--help`` on each)."""
from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import os
import platform
import re
import sys
from typing import Any, Callable, NoReturn, Sequence

from pymongo.errors import PyMongoError

from labkit.connection import (EMBEDDED, ENV_URI, LabConnectionError, connect, describe, is_embedded, redact_uri,
                               scrub)
from labkit.databases import _FORBIDDEN, ENV_PREFIX, MAX_DB_NAME, UnsafeDatabaseError, db_name, fresh_db, reset_db
from labkit.seed import MAX_USERS
from labkit.workshop import TIERS

_VERSIONS = ["labkit", "pymongo", "mongomock", "jsonschema", "pandas", "ipywidgets", "matplotlib", "tqdm",
             "jupyterlab", "voila"]


def _version(module: str) -> str:
    dist = "schema-lab-labkit" if module == "labkit" else module
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _widgets_status() -> tuple[bool, str]:
    """Whether JupyterLab can render ipywidgets: the jupyterlab_widgets lab extension must be present."""
    try:
        import jupyterlab_widgets  # noqa: F401
        from pathlib import Path
        ext = Path(sys.prefix, "share", "jupyter", "labextensions", "@jupyter-widgets", "jupyterlab-manager")
        if ext.is_dir():
            return True, f"yes (lab extension at {ext})"
        return False, "jupyterlab_widgets is installed but its lab extension is missing; reinstall ipywidgets"
    except ImportError:
        return False, "no: install ipywidgets (pip install ipywidgets) so sliders render in JupyterLab"


def cmd_doctor(args: argparse.Namespace) -> int:
    ok = True
    print("Schema Lab doctor")
    print(f"  python      {platform.python_version()} ({sys.executable})")
    for mod in _VERSIONS:
        print(f"  {mod:<11} {_version(mod)}")
    uri = (args.uri or os.environ.get(ENV_URI, "")).strip()
    if uri:
        print(f"  {'--uri' if args.uri else ENV_URI} = {redact_uri(uri)}")
        try:
            client = connect(uri, timeout_ms=args.timeout_ms)
            print(f"  engine      {describe(client)}: answers ping")
            client.close()
        except LabConnectionError as exc:
            ok = False
            print(f"  engine      server NOT reachable: {exc}")
        except Exception as exc:  # noqa: BLE001 - doctor reports, it never shows a traceback
            ok = False
            print(f"  engine      cannot use {ENV_URI}: {type(exc).__name__}: {scrub(str(exc), uri)}")
    else:
        print(f"  engine      {describe(connect())} ({ENV_URI} is not set)")
    wok, wmsg = _widgets_status()
    ok = ok and wok
    print(f"  widgets     {wmsg}")
    print("  status      " + ("OK" if ok else "PROBLEMS FOUND (see above)"))
    return 0 if ok else 1


def _client(args: argparse.Namespace) -> Any:
    return connect(args.uri, timeout_ms=args.timeout_ms) if args.uri else connect(timeout_ms=args.timeout_ms)


def cmd_seed(args: argparse.Namespace) -> int:
    from labkit import seed

    client = _client(args)
    names = [args.db] if args.learners == 1 else [f"{args.db}_{i:02d}" for i in range(1, args.learners + 1)]
    print(f"Seeding {len(names)} database(s) on {describe(client)}")
    for name in names:
        db = fresh_db(name, client=client)
        if args.dataset == "social":
            summary = seed.social(db, users=args.users, seed=args.seed)
        else:
            summary = seed.sensors(db, sensors=args.sensors, hours=args.hours, seed=args.seed)
        counts = ", ".join(f"{k}={v}" for k, v in summary.counts.items())
        print(f"  {db.name}: {counts}")
    _warn_if_embedded(client, "seeded")
    return 0


def _warn_if_embedded(client: Any, what: str) -> None:
    """The embedded engine lives in this process: say that its data are gone when the command ends."""
    if is_embedded(client):
        print(f"NOTE: this ran on the embedded engine, which lives inside this command's process: the {what} "
              f"data are gone now that it exits. To keep them, run `python -m labkit serve` in another terminal "
              f"and pass --uri mongodb://127.0.0.1:27017 (or set {ENV_URI} to a real server).")


def cmd_reset(args: argparse.Namespace) -> int:
    client = _client(args)
    full = db_name(args.name, client)
    if reset_db(args.name, client=client):
        print(f"Dropped labkit database '{full}'.")
    else:
        print(f"Nothing to do: database '{full}' does not exist.")
    return 0


def cmd_workshop(args: argparse.Namespace) -> int:
    from labkit import seed, workshop

    if args.action == "plan":  # measured numbers from data/workshop_footprint.json: no server needed
        room = {"lessons": args.lessons, "shared": args.shared, "sharded": args.sharded}
        result = workshop.plan(args.learners, args.tier, **room)
        print(workshop.format_plan(result))
        best = workshop.recommend_tier(args.learners, **room)
        most = None if result["fits"] else workshop.max_learners(args.tier, **room)
        print(workshop.format_recommendation(result, best, most))
        return 0 if result["fits"] else 3
    if args.action == "links":  # no server needed
        if not args.repo:
            print(f"{_prog()} workshop: error: argument --repo: required by links; allowed: the repository's https "
                  "URL, e.g. https://github.com/OWNER/REPO", file=sys.stderr)
            return 2
        for name, url in workshop.links(args.repo, branch=args.branch, hub=args.hub or "").items():
            print(f"{name:<12} {url}")
        return 0
    client = _client(args)
    print(f"Workshop on {describe(client)}")
    if args.action == "prepare":
        seeder = (lambda db: seed.social(db, users=args.users, seed=args.seed)) if args.users else None
        rows = workshop.prepare(client, args.learners, base=args.base, seed_db=seeder)
        for r in rows:
            print(f"  learner {r['learner']:>3}: LABKIT_DB_PREFIX={r['LABKIT_DB_PREFIX']:<16} "
                  f"{r['database']} ({r['documents']} documents)")
        print("Each learner sets MONGODB_URI, their LABKIT_DB_PREFIX and LABKIT_SHARED=1 (shared-cluster mode: "
              "the lessons that would load a shared cluster most scale their demonstrations down and say so) "
              "before starting Jupyter, e.g.")
        if rows:
            print(f"  MONGODB_URI=... LABKIT_DB_PREFIX={rows[0]['LABKIT_DB_PREFIX']} LABKIT_SHARED=1 python3 dev.py lab")
        print(f"Size the room first: {_prog()} workshop plan --learners {args.learners} --shared (it names a tier)")
        _warn_if_embedded(client, "prepared")
        return 0
    if args.action == "check":
        rows = workshop.check(client, args.learners, base=args.base)
        for r in rows:
            state = "ready" if r["ready"] else "NOT READY (run: workshop prepare)"
            print(f"  learner {r['learner']:>3}: {r['LABKIT_DB_PREFIX']:<16} {state}, {r['databases']} database(s)")
        missing = sum(not r["ready"] for r in rows)
        print(f"{len(rows) - missing} of {len(rows)} learners ready.")
        return 0 if missing == 0 else 1
    if args.action == "progress":
        table = workshop.room_progress(client, args.learners, base=args.base)
        print(workshop.format_room_progress(table))
        return 0
    result = workshop.cleanup(client, base=args.base)
    for name in result["dropped"]:
        print(f"  dropped {name}")
    for name in result["kept"]:
        print(f"  kept {name} (not created by labkit)")
    print(f"Dropped {len(result['dropped'])} database(s); kept {len(result['kept'])}.")
    return 0


def cmd_progress(args: argparse.Namespace) -> int:
    from labkit import tracking

    if args.uri or os.environ.get(ENV_URI, "").strip():
        client = _client(args)
        coll = client[db_name(tracking.PROGRESS_DB, client)][tracking.PROGRESS_COLLECTION]
        where = f"{describe(client)}, database {coll.database.name}"
    else:
        coll, where = None, str(tracking.progress_file())
    df = tracking.progress(coll)
    if args.lesson:
        df = df[df["lesson"].str.startswith(args.lesson)]
    print(f"Exercise progress ({where})")
    print(df.to_string(index=False) if len(df) else "  no exercises match")
    print(tracking.summary(coll))
    return 0


def cmd_review(args: argparse.Namespace) -> int:
    """``review``: the read-only schema review of one database, as a table, Markdown or JSON."""
    from pymongo.errors import PyMongoError

    client = _client(args)
    try:
        return _review_report(args, client)
    except PyMongoError as exc:
        print(f"error: the server refused a read the review needs: {exc}", file=sys.stderr)
        return 1


def _review_report(args: argparse.Namespace, client: Any) -> int:
    from labkit.connection import is_embedded
    from labkit.review import ReviewInputError, review

    if args.db not in client.list_database_names():
        print(f"error: database {args.db!r} does not exist on {describe(client)}.", file=sys.stderr)
        if is_embedded(client):
            print("The embedded engine lives inside this process, so a new command starts with no databases. "
                  "Review a notebook's database from the notebook (labkit.review(db)), or serve the engine "
                  "with `python -m labkit serve` and pass --uri (or set MONGODB_URI).", file=sys.stderr)
        return 1
    try:
        result = review(client[args.db], sample=args.sample, query_log=args.query_log, full=args.full)
    except ReviewInputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = {"table": result.to_table, "markdown": result.to_markdown, "json": result.to_json}[args.format]()
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        except OSError as exc:
            print(f"error: cannot write {args.output!r}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        print(f"Wrote the review of {args.db!r} ({len(result.findings)} finding(s)) to {args.output}")
    else:
        print(text)
    return 0


def cmd_serve(args: argparse.Namespace) -> int:
    from labkit.engine.transport.wire import serve
    argv = ["python -m labkit serve", "--host", args.host, "--port", str(args.port)]
    if args.shards is not None:
        argv += ["--shards", str(args.shards)]
    return serve(args.host, args.port, allow_remote=args.allow_remote, argv=argv, shards=args.shards)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: ``prog: error: argument --x: what is wrong; the allowed values`` (exit 2)."""

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required:"):
            named = [a for a in self._actions if a.required and a.choices and
                     (a.dest in message or any(o in message for o in a.option_strings))]
            message += "".join(f"; allowed {a.dest}: {', '.join(map(str, a.choices))}" for a in named)
        self.exit(2, f"{self.prog}: error: {message} ({self.prog} --help shows every option)\n")


def _int_in(lo: int, hi: int, also: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number from ``lo`` to ``hi`` (``also``: what else is allowed, said aloud)."""
    allowed = f"allowed: {lo:,} to {hi:,}{also}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number; {allowed}") from None
        if not lo <= value <= hi:
            raise argparse.ArgumentTypeError(f"{value:,} is out of range; {allowed}")
        return value

    return parse


def _users_or_none(text: str) -> int:
    """``workshop prepare --users``: 0 (no seed data) or a number of users the social seeder accepts."""
    value = _int_in(0, MAX_USERS, " (0 seeds nothing; otherwise at least 2)")(text)
    if value == 1:
        raise argparse.ArgumentTypeError(f"1 is out of range; allowed: 0 (seed nothing) or 2 to {MAX_USERS:,}")
    return value


def _database(text: str) -> str:
    """A database name as MongoDB's naming rules allow it (before any learner prefix is added)."""
    bad = sorted(set(text) & _FORBIDDEN)
    if not text or bad or len(text.encode()) > MAX_DB_NAME:
        why = (f"contains {''.join(bad)!r}" if bad else "is empty" if not text else
               f"is {len(text.encode())} bytes")
        raise argparse.ArgumentTypeError(
            f"{text!r} {why}; allowed: 1 to {MAX_DB_NAME} bytes, none of / \\ . space \" $ * < > : | ? or NUL "
            "(letters, digits, '_' and '-' are always fine)")
    return text


def _base(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_-]{1,40}", text):
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: 1 to 40 letters, digits, '_' or '-' (it starts every "
                                         "learner's database names, e.g. sl_learner)")
    return text


def _uri(text: str) -> str:
    if text != EMBEDDED and not text.startswith(("mongodb://", "mongodb+srv://")):
        raise argparse.ArgumentTypeError(f"{redact_uri(text)!r}: allowed: a URI starting with mongodb:// or "
                                         f"mongodb+srv://, or '{EMBEDDED}' for the embedded engine")
    return text


def _https_url(text: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(text)
    if parts.scheme not in ("https", "http") or not parts.netloc:
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: an http(s) URL, e.g. https://github.com/OWNER/REPO")
    return text


def _branch(text: str) -> str:
    if not re.fullmatch(r"[\w./-]+", text):
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: a branch name (letters, digits, '.', '_', '-', '/')")
    return text


def _prog() -> str:
    return os.environ.get("LABKIT_PROG", "python -m labkit")


def _lessons(text: str) -> list[str]:
    """``workshop plan --lessons``: comma-separated lesson numbers (or names) that have a measured footprint."""
    from labkit.workshop import load_footprint

    measured = load_footprint()["lessons"]
    known = sorted({fp["lesson"] for fp in measured.values()})
    chosen = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [x for x in chosen if x not in known and x not in measured]
    if not chosen or unknown:
        raise argparse.ArgumentTypeError(f"{', '.join(unknown) or repr(text)}: not a lesson; allowed: lesson numbers "
                                         f"separated by commas, from {', '.join(known)}")
    return chosen


def _lesson_prefix(text: str) -> str:
    from labkit import exercises

    lessons = sorted({exercises.get(i).lesson for i in exercises.ids()})
    if not any(name.startswith(text) for name in lessons):
        raise argparse.ArgumentTypeError(f"{text!r} matches no lesson; allowed: the start of a lesson's name, e.g. "
                                         f"{', '.join(sorted({n[:2] for n in lessons}))}")
    return text


def _existing_file(text: str) -> str:
    if not os.path.isfile(text):
        raise argparse.ArgumentTypeError(f"{text!r}: no such file; allowed: the path of a JSON-lines query log")
    return text


def _output_file(text: str) -> str:
    folder = os.path.dirname(os.path.abspath(text))
    if os.path.isdir(text) or not os.path.isdir(folder):
        raise argparse.ArgumentTypeError(f"{text!r}: allowed: a file path in an existing folder "
                                         f"({'it is a folder' if os.path.isdir(text) else 'no folder ' + folder})")
    return text


def build_parser() -> argparse.ArgumentParser:
    # LABKIT_PROG: how the user typed the command (`python3 dev.py` sets it), so errors and --help say the same
    p = _Parser(prog=_prog(), description="Schema Lab's helper commands.")
    sub = p.add_subparsers(dest="command", required=True)

    common = _Parser(add_help=False)
    common.add_argument("--uri", type=_uri, help=f"MongoDB URI (default: ${ENV_URI}, else the embedded engine)")
    common.add_argument("--timeout-ms", type=_int_in(1, 600_000), default=3000,
                        help="how long to wait for a server, in ms (default 3000)")

    def command(name: str, func: Callable, help: str, description: str | None = None,
                parents: Sequence[argparse.ArgumentParser] = (common,)) -> argparse.ArgumentParser:
        """A subcommand that runs ``func(args)``; ``parents``: the options it shares (--uri, --timeout-ms)."""
        cmd = sub.add_parser(name, parents=list(parents), help=help, description=description)
        cmd.set_defaults(func=func)
        return cmd

    command("doctor", cmd_doctor, help="versions, engine, server reachability, widgets")

    s = command(
        "seed", cmd_seed,
        help="create and seed labkit databases (e.g. one per learner on a shared cluster)",
        description=f"Create fresh labkit databases and seed them. Names get the per-learner prefix "
                    f"(${ENV_PREFIX}). With --learners N, databases NAME_01..NAME_N are created.",
    )
    s.add_argument("dataset", choices=["social", "sensors"])
    s.add_argument("--db", type=_database, default="workshop", help="database name (default: workshop)")
    s.add_argument("--learners", type=_int_in(1, 500), default=1, help="how many databases to prepare (default 1)")
    s.add_argument("--users", type=_int_in(2, MAX_USERS), default=1000, help="social: number of users (default 1000)")
    s.add_argument("--sensors", type=_int_in(1, 100_000), default=10, help="sensors: number of sensors (default 10)")
    s.add_argument("--hours", type=_int_in(1, 366 * 24), default=24, help="sensors: hours of readings (default 24)")
    s.add_argument("--seed", type=_int_in(0, 2**64 - 1), default=42, help="random seed (default 42)")

    w = command(
        "workshop", cmd_workshop,
        help="per-learner databases on a shared cluster: plan, prepare, check, progress, cleanup, links",
        description="Learner n uses LABKIT_DB_PREFIX=<base><nn>_ . plan sizes the room against a cluster tier from "
                    "measured lesson footprints (no server needed; exit 3 when it does not fit); prepare creates "
                    "and seeds one marked database per learner; check reports readiness; progress shows the "
                    "room's exercises learner by learner; cleanup drops only labkit-marked databases of the "
                    "workshop; links prints the Binder and nbgitpuller links that open lesson 00's student copy.",
    )
    w.add_argument("action", choices=["plan", "prepare", "check", "progress", "cleanup", "links"])
    w.add_argument("--learners", type=_int_in(1, 500), default=30, help="number of learners (default 30)")
    w.add_argument("--base", type=_base, default="sl_learner", help="prefix base (default sl_learner -> sl_learner07_)")
    w.add_argument("--users", type=_users_or_none, default=200,
                   help="prepare: users to seed per learner, 0 = none (default 200)")
    w.add_argument("--seed", type=_int_in(0, 2**64 - 1), default=42, help="prepare: random seed (default 42)")
    w.add_argument("--tier", default="free", choices=list(TIERS),
                   help="plan: the cluster tier whose limits apply (default free)")
    w.add_argument("--lessons", type=_lessons, default=[], help="plan: only these lessons, e.g. 30,31,32,35,37,38,39")
    w.add_argument("--shared", action="store_true", help="plan: with LABKIT_SHARED=1 (lessons scaled down)")
    w.add_argument("--sharded", action="store_true",
                   help="plan: the cluster is a sharded cluster (a mongos), so the Scale out lessons run on it "
                        "(M30 and up on Atlas); without it they run on labkit's simulated cluster")
    w.add_argument("--repo", type=_https_url, help="links: the repository learners get, e.g. https://github.com/OWNER/REPO")
    w.add_argument("--branch", default="main", type=_branch, help="links: its branch (default main)")
    w.add_argument("--hub", type=_https_url, default=None, help="links: your JupyterHub's URL (adds an nbgitpuller link)")

    g = command(
        "progress", cmd_progress, help="which exercises you have passed, attempted or not started",
        description="On the embedded engine: this machine's record (LABKIT_PROGRESS_FILE, default "
                    "~/.schema-lab/progress.json). With --uri or MONGODB_URI: the record kept in your database "
                    "on that server.",
    )
    g.add_argument("--lesson", type=_lesson_prefix, default="", help="only lessons whose name starts with this, e.g. 03")

    v = command(
        "review", cmd_review, help="read-only schema review of a database: anti-patterns with evidence",
        description="Samples every collection ($sample, $collStats, $indexStats, validators), reads the profiler "
                    "(system.profile) or --query-log, and reports findings with evidence, fix and lesson. "
                    "Never writes anything.",
    )
    v.add_argument("--db", type=_database, required=True, help="the database to review (its exact name)")
    v.add_argument("--format", choices=["table", "markdown", "json"], default="table", help="default: table")
    v.add_argument("--output", type=_output_file, help="write the report to this file instead of the terminal")
    v.add_argument("--query-log", type=_existing_file,
                   help="JSON lines of profiler documents (system.profile shape), instead of "
                                       "the database's own profiler")
    v.add_argument("--sample", type=_int_in(1, 100_000), default=1000,
                   help="documents sampled per collection (default 1000)")
    v.add_argument("--full", action="store_true", help="read every document instead of a sample")

    r = command("reset", cmd_reset, help="drop a database labkit created (never anything else)")
    r.add_argument("name", type=_database, help="the name given to fresh_db (the learner prefix is added)")

    sv = command(
        "serve", cmd_serve, parents=(),
        help="serve the embedded engine over MongoDB's wire protocol (mongosh, Compass, pymongo)",
        description="Serve one in-memory embedded engine over MongoDB's wire protocol until Ctrl-C / SIGTERM. "
                    "No authentication: listens on loopback unless --allow-remote is given.",
    )
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    sv.add_argument("--port", type=_int_in(0, 65_535, " (0 picks a free port)"), default=27017,
                    help="port (default 27017; 0 picks a free port)")
    sv.add_argument("--allow-remote", action="store_true",
                    help="allow a non-loopback --host (anyone who can reach it can read and change the data)")
    from labkit.engine.s.cluster import MAX_SHARDS
    sv.add_argument("--shards", type=_int_in(1, MAX_SHARDS), default=None, metavar="N",
                    help="serve a simulated sharded cluster of N shards as a mongos (hello says msg: isdbgrid; "
                         "sh.status(), sh.shardCollection() work) instead of one replica-set member")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (LabConnectionError, UnsafeDatabaseError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except PyMongoError as exc:  # a server refusing an operation: one line, no traceback, no secret
        uri = getattr(args, "uri", None) or os.environ.get(ENV_URI, "")
        print(f"error: {type(exc).__name__}: {scrub(str(exc), uri)}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
