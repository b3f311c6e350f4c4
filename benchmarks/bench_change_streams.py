"""Benchmark: what change streams cost the writes, and how fast an event reaches an open stream.

Usage:  .venv/bin/python benchmarks/bench_change_streams.py [--n N] [--rounds R]

Part 1 (in-process): the same writes -- N insert_one, N update_one ($set by _id), one insert_many of N
documents, N delete_one -- on a fresh collection, in three states run interleaved round by round (best of R):
  none    no change stream open (the engine records nothing: repl/oplog.py)
  open    one collection change stream open, not read while the writes run
  read    one change stream open and read to the end after each kind of write (events built and returned)
Ratios are within one run ("open / none" is the cost of recording, "read / none" adds building the events).

Part 2 (over the wire): a pymongo change stream on ``serve_in_thread()`` waits in a getMore (maxAwaitTimeMS
5000) while another connection inserts; reported: the time from the insert's reply to the event, and the number of
getMore commands the watching client sent between the insert and the event (command monitoring): 1 means the
event reached the cursor within the getMore that was waiting.

Prints a table; nothing is written.
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from pymongo import MongoClient, monitoring  # noqa: E402

from labkit.engine import EmbeddedClient  # noqa: E402
from labkit.engine.transport.wire import serve_in_thread  # noqa: E402


def _writes(coll, n: int, stream) -> dict[str, float]:
    """Seconds per kind of write (the stream, if any, read to the end after each kind when ``stream`` reads)."""
    out = {}

    def drain():
        if stream is not None and stream[1]:
            while stream[0].try_next() is not None:
                pass

    gc.collect()
    t0 = time.perf_counter()
    for i in range(n):
        coll.insert_one({"_id": i, "a": i, "s": "x"})
    drain()
    out["insert_one"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(n):
        coll.update_one({"_id": i}, {"$set": {"a": -i}})
    drain()
    out["update_one"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    coll.insert_many([{"_id": n + i, "a": i, "s": "y"} for i in range(n)])
    drain()
    out["insert_many"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    for i in range(n):
        coll.delete_one({"_id": i})
    drain()
    out["delete_one"] = time.perf_counter() - t0
    return out


def part1(n: int, rounds: int) -> None:
    best: dict[str, dict[str, float]] = {s: {} for s in ("none", "open", "read")}
    for r in range(rounds):
        for state in ("none", "open", "read"):
            client = EmbeddedClient()
            coll = client.bench["c%d" % r]
            stream = None
            if state != "none":
                stream = (coll.watch(max_await_time_ms=0), state == "read")
            times = _writes(coll, n, stream)
            if stream is not None:
                stream[0].close()
            for k, v in times.items():
                best[state][k] = min(best[state].get(k, float("inf")), v)
    print("Part 1: writes on the embedded engine, N = %d, best of %d rounds (microseconds per document)" % (n, rounds))
    print("%-12s %10s %10s %10s %12s %12s" % ("write", "none", "open", "read", "open/none", "read/none"))
    for k in best["none"]:
        a, b, c = (best[s][k] / n * 1e6 for s in ("none", "open", "read"))
        print("%-12s %10.2f %10.2f %10.2f %12.2f %12.2f" % (k, a, b, c, b / a, c / a))


class _Count(monitoring.CommandListener):
    def __init__(self) -> None:
        self.get_mores = 0

    def started(self, event) -> None:
        if event.command_name == "getMore":
            self.get_mores += 1

    def succeeded(self, event) -> None:
        pass

    def failed(self, event) -> None:
        pass


def part2(trials: int) -> None:
    latencies, get_mores = [], []
    with serve_in_thread() as server:
        counter = _Count()
        watcher = MongoClient(server.uri, event_listeners=[counter])
        writer = MongoClient(server.uri)
        coll = watcher.bench.wire
        writer.bench.wire.insert_one({"_id": "warm"})
        for i in range(trials):
            with coll.watch(max_await_time_ms=5000) as stream:
                stamp: dict[str, float] = {}

                def write() -> None:
                    time.sleep(0.2)  # the watcher is inside its getMore by then
                    stamp["before"] = counter.get_mores
                    writer.bench.wire.insert_one({"_id": i})
                    stamp["t"] = time.perf_counter()

                t = threading.Thread(target=write)
                t.start()
                ev = stream.next()
                got = time.perf_counter()
                t.join()
                assert ev["documentKey"] == {"_id": i}
                latencies.append((got - stamp["t"]) * 1000)
                # the getMore in flight when the write happened was counted before it: no further one was sent
                get_mores.append(counter.get_mores - stamp["before"] + 1)
        watcher.close()
        writer.close()
    print()
    print("Part 2: over the wire, an insert by another connection while the stream waits (%d trials)" % trials)
    print("  insert reply -> event: median %.2f ms, max %.2f ms" % (statistics.median(latencies), max(latencies)))
    print("  getMores from the insert to the event: %s" % sorted(set(get_mores)))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--trials", type=int, default=10)
    args = ap.parse_args()
    part1(args.n, args.rounds)
    part2(args.trials)


if __name__ == "__main__":
    main()
