"""``asyncapi-kafka peek``: cold process start to the first decoded record, per sandbox channel.

The sandbox of ``examples/shop.yaml`` (embedded Kafka and registry) runs in this process; each
measurement starts the ``asyncapi-kafka`` console script in a fresh process and times the moment
its first record line arrives on stdout (the line after the table's header), and its exit.
Channels alternate, and so do three ways of starting:

* ``peek``: the command as users run it;
* ``peek, gc on``: the same read with the interpreter's cyclic collector left as is (what the
  command turns off for ``peek``) — the baseline for that choice;
* ``python -c pass``: the interpreter alone, the floor.

Run: ``python -m benchmarks.peek_bench [--runs N]``. Medians of ``runs`` per cell.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_SCRIPT = os.path.join(os.path.dirname(sys.executable), "asyncapi-kafka")
# main(argv) with argv given keeps the collector (the command line's own argv=None turns it off).
_GC_ON = "import sys; from connector.cli import main; sys.exit(main(sys.argv[1:]))"


def _args(channel: dict) -> list[str]:
    out = ["peek", channel["options"]["asyncapi"], "--channel", channel["channel"]]
    for k, v in channel["options"].items():
        if k not in ("asyncapi", "channel"):
            out += ["-o", f"{k}={v}"]
    return out


def _time(cmd: list[str], lines_before: int) -> tuple[float, float]:
    """(seconds to the first record line, seconds to exit)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=_ROOT)
    assert p.stdout is not None
    for _ in range(lines_before):
        p.stdout.readline()
    first = p.stdout.readline()
    t1 = time.perf_counter()
    _, err = p.communicate(timeout=120)
    t2 = time.perf_counter()
    if p.returncode != 0 or (lines_before and not first.strip()):
        raise RuntimeError(f"{cmd[:4]} failed ({p.returncode}): {err[-1000:]}")
    return t1 - t0, t2 - t0


def run(runs: int = 5) -> dict:
    from connector.cli._sandbox import Sandbox

    out: dict = {}
    with Sandbox(os.path.join(_ROOT, "connector", "examples", "shop.yaml"), messages=10) as box:
        channels = [c for c in box.channels if c["messages"]]
        for _ in range(runs):
            for c in channels:
                args = _args(c)
                for kind, cmd, skip in (("peek", [_SCRIPT, *args], 1),
                                        ("peek, gc on", [sys.executable, "-c", _GC_ON, *args], 1)):
                    out.setdefault((c["channel"], kind), []).append(_time(cmd, skip))
            out.setdefault(("-", "python -c pass"), []).append(_time([sys.executable, "-c", "pass"], 0))
    return out


def report(out: dict) -> None:
    print(f"  {'channel':10s} {'command':16s} {'first record (median, min-max)':34s} exit (median)")
    for (channel, kind), ts in out.items():
        firsts = [a for a, _ in ts]
        print(f"  {channel:10s} {kind:16s} {statistics.median(firsts):5.2f} s ({min(firsts):.2f}-{max(firsts):.2f})"
              f"{'':17s} {statistics.median(b for _, b in ts):5.2f} s")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=5)
    a = ap.parse_args()
    load = os.getloadavg()
    print(f"peek: cold start to first record, {a.runs} alternating runs per cell")
    out = run(a.runs)
    report(out)
    print(f"  load average {load[0]:.1f} -> {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
