"""Peak memory of the server backend against the row count (issue 2's acceptance: the backend's
memory must not grow with the rows the way a per-row Python structure would).

For each size, an Adult-like table (sampled from Adult, `pganon dataset load adult_synthetic`) is
published with MMDCF-MSLF at d = 5 in a fresh connection; the backend's peak resident memory
(VmHWM) and the seconds per phase are recorded, next to the seconds of a `CREATE TABLE AS` of the
same columns. A per-row Python object (a tuple of 10 values) costs about 0.5 KiB, so per-row
Python state would add ~500 MiB per million rows.

    .venv/bin/python benchmarks/memory_scaling.py [--sizes 125000 250000 500000 1000000 2000000]

Writes benchmarks/results/memory_scaling.{md,json}.
"""

from __future__ import annotations

import argparse
import json
import platform
import threading
import time
from pathlib import Path

import psycopg

from common import fresh_database
from pganon import datasets, releases
from run import ctas_seconds, peak_kib

RESULTS = Path(__file__).resolve().parent / "results"


class PeakSampler(threading.Thread):
    """Samples /proc/<pid>/status every 0.1 s: peak RssAnon (the backend's private memory:
    Python objects, work_mem areas, local buffers of temp tables) and peak RssShmem (shared
    buffers the backend touched, which VmHWM counts too but which belong to the server)."""

    def __init__(self, pid):
        super().__init__(daemon=True)
        self.pid, self.peak, self.stop = pid, {"RssAnon": 0, "RssShmem": 0}, threading.Event()

    def run(self):
        while not self.stop.is_set():
            try:
                for line in Path(f"/proc/{self.pid}/status").read_text().splitlines():
                    key = line.split(":")[0]
                    if key in self.peak:
                        self.peak[key] = max(self.peak[key], int(line.split()[1]))
            except OSError:
                pass
            time.sleep(0.1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[125_000, 250_000, 500_000, 1_000_000, 2_000_000])
    ap.add_argument("--method", default="mmdcf_mslf")
    ap.add_argument("--d", type=int, default=5)
    args = ap.parse_args()
    dsn = fresh_database("pganon_bench_mem")
    with psycopg.connect(dsn, autocommit=True) as c:
        datasets.load(c, "adult")
    out = []
    for n in args.sizes:
        with psycopg.connect(dsn, autocommit=True) as c:
            datasets.load(c, "adult_synthetic", rows=n, replace=True)
        ctas = ctas_seconds(dsn, "adult_synthetic", args.d)
        with psycopg.connect(dsn, autocommit=True) as c:
            pid = c.execute("SELECT pg_backend_pid()").fetchone()[0]
            idle = peak_kib(pid)
            sampler = PeakSampler(pid)
            sampler.start()
            t0 = time.perf_counter()
            rid = releases.publish(c, "adult_synthetic", args.method, {"d": args.d})
            wall = time.perf_counter() - t0
            peak = peak_kib(pid)
            sampler.stop.set()
            sampler.join()
            rel = releases.get(c, release=rid)
            c.execute("SELECT pganon.drop_release(%s)", (rid,))
        row = {"rows": n, "seconds": round(wall, 2), "ctas_seconds": round(ctas, 3), "ratio": round(wall / ctas, 1),
               "peak_rss_mib": round(peak / 1024, 1) if peak else None,
               "idle_rss_mib": round(idle / 1024, 1) if idle else None,
               "peak_private_mib": round(sampler.peak["RssAnon"] / 1024, 1),
               "peak_shared_mib": round(sampler.peak["RssShmem"] / 1024, 1),
               "groups": rel["groups"], "phases": rel["phase_seconds"]}
        out.append(row)
        print(json.dumps(row), flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "memory_scaling.json").write_text(json.dumps(out, indent=1))
    lines = [f"# Backend memory against rows ({args.method}, d = {args.d})", "",
             f"Run {time.strftime('%Y-%m-%d %H:%M:%S')} on {platform.platform()}. Peak RSS is the backend's "
             "VmHWM after the publish (fresh connection per size). Settings: work_mem 64MB, temp_buffers "
             "256MB (set by publish), shared_buffers 256MB.", "",
             "| rows | publish s | CTAS s | ratio | peak RSS MiB (VmHWM) | peak private MiB (RssAnon) | peak shared-buffer MiB (RssShmem) | private MiB per 100k rows above the smallest | groups | plan s | verify s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    base = out[0]
    for r in out:
        extra = ((r["peak_private_mib"] - base["peak_private_mib"]) / ((r["rows"] - base["rows"]) / 100_000)
                 if r is not base else None)
        lines.append(f"| {r['rows']:,} | {r['seconds']} | {r['ctas_seconds']} | {r['ratio']} | {r['peak_rss_mib']} | "
                     f"{r['peak_private_mib']} | {r['peak_shared_mib']} | "
                     f"{'' if extra is None else f'{extra:.1f}'} | {r['groups']} | {r['phases'].get('plan')} | "
                     f"{r['phases'].get('verify')} |")
    (RESULTS / "memory_scaling.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {RESULTS / 'memory_scaling.md'}")


if __name__ == "__main__":
    main()
