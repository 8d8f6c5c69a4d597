"""What fanning a sweep out costs: N runs of a 1 s scenario (Samaraweera's, one flow,
`duration=1s`, seeds 1..N) through each way satpep offers, wall time per way.

    python bench/python/sweep_overhead.py target/release/satpep [N] [JOBS]

Needs the satpep wheel and Ray installed for this python. Prints a markdown table for
docs/performance.md ("Python and Ray sweeps"). The runs are the same in every row (checked:
every way's total goodput column is identical), so differences are overhead: process start,
scenario loading, pickling, scheduling.
"""

import os
import pathlib
import platform
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pandas as pd

import satpep

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios/samaraweera/samaraweera.toml"
RAY = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main():
    cli = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else os.cpu_count()
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="satpep-overhead-"))
    rows, goodputs = [], {}

    def cli_loop(parallel):
        d = tmp / f"loop-{parallel}"
        d.mkdir()
        cmds = [[cli, "sim", str(SCENARIO), "--set", "duration=1s", "--seed", str(i),
                 "--out", str(d / f"run-{i}"), "--quiet"] for i in range(1, n + 1)]
        running = []
        for c in cmds:
            running.append(subprocess.Popen(c))
            if len(running) >= parallel:
                assert running.pop(0).wait() == 0
        for p in running:
            assert p.wait() == 0
        return [pd.read_json(d / f"run-{i}" / "summary.json", typ="series")["flows"][0]["goodput_bps"]
                for i in range(1, n + 1)]

    def cli_sweep():
        d = tmp / "cli-sweep"
        seeds = "[" + ",".join(map(str, range(1, n + 1))) + "]"
        subprocess.run([cli, "sim", str(SCENARIO), "--set", "duration=1s", "--set", f"sweep.seed={seeds}",
                        "--out", str(d), "--quiet", "--jobs", str(jobs)], check=True)
        return list(pd.read_csv(d / "sweep.csv")["total_goodput_bps"])

    def py(executor, **kw):
        s = satpep.sweep(SCENARIO, seeds=n, duration="1s", executor=executor, jobs=jobs, **kw)
        return list(s.rows["total_goodput_bps"])

    ways = [
        (f"`satpep sim` with a `[sweep]` of {n} seeds (Rust threads, --jobs {jobs})", cli_sweep),
        ("CLI loop, one `satpep sim --seed i --out DIR` per run, one at a time", lambda: cli_loop(1)),
        (f"CLI loop, {jobs} at a time", lambda: cli_loop(jobs)),
        (f"`satpep.sweep(..., executor=\"process\")`, {jobs} workers", lambda: py("process")),
        ("`satpep.sweep(..., executor=\"serial\")` (one Python process)", lambda: py("serial")),
    ]
    for name, f in ways:
        secs, g = timed(f)
        goodputs[name] = [round(x, 1) for x in g]
        rows.append((name, secs))

    port = None
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.perf_counter()
    subprocess.run(RAY + ["start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
                          f"--num-cpus={jobs}", "--include-dashboard=false", "--disable-usage-stats"],
                   check=True, capture_output=True)
    start = time.perf_counter() - t
    try:
        import ray
        ray.init(address=f"127.0.0.1:{port}", log_to_driver=False)
        py("ray")  # warm-up: workers started, satpep imported in each
        name = f"`satpep.sweep(..., executor=\"ray\")`, local cluster of {jobs} CPUs (warm workers)"
        secs, g = timed(lambda: py("ray"))
        goodputs[name] = [round(x, 1) for x in g]
        rows.append((name, secs))
        ray.shutdown()
        name = f"the same, first sweep of a new driver (connect + cold workers)"
        secs, g = timed(lambda: py("ray", ray_address=f"127.0.0.1:{port}"))
        rows.append((name, secs))
    finally:
        subprocess.run(RAY + ["stop", "--force"], capture_output=True)
    ref = next(iter(goodputs.values()))
    for name, g in goodputs.items():
        assert g == ref, f"{name}: different results"

    print(f"{n} runs of a 1 s scenario; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} cores, Python {platform.python_version()}, satpep {satpep.__version__}; "
          f"`ray start --head` took {start:.1f} s\n")
    print("| way | wall (s) | per run (ms) |\n|---|---|---|")
    for name, secs in rows:
        print(f"| {name} | {secs:.1f} | {secs / n * 1e3:.1f} |")
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
