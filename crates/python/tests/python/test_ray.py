"""Samaraweera Fig 11 on a local Ray cluster (`ray start --head` here, stopped after): one Ray
task per run, rows merged into one DataFrame, and sweep.csv identical to the CLI's sweep of the
same scenario (scenarios/samaraweera/fig11.toml, 32 runs of 60 s)."""

import os
import socket
import subprocess
import sys

import pandas as pd
import pytest
import ray  # noqa: F401  (a missing Ray fails this module: it must run in CI)

import satpep
from test_sweep import as_in_csv

RAY_CLI = [sys.executable, "-c", "from ray.scripts.scripts import main; main()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def ray_cluster(tmp_path):
    """A one-node Ray cluster of this venv's Python (so its workers import this satpep)."""
    port = free_port()
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    subprocess.run(
        RAY_CLI + ["start", "--head", f"--port={port}", "--node-ip-address=127.0.0.1",
                   "--num-cpus=2", "--object-store-memory=100000000",
                   "--include-dashboard=false", "--disable-usage-stats"],
        check=True, timeout=180, env=env, capture_output=True,
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        subprocess.run(RAY_CLI + ["stop", "--force"], timeout=120, env=env, capture_output=True)


def test_fig11_on_ray_gives_the_cli_rows(tmp_path, root, cli, ray_cluster):
    fig11 = root / "scenarios" / "samaraweera" / "fig11.toml"
    subprocess.run([cli, "sim", str(fig11), "--out", str(tmp_path / "cli"), "--quiet"],
                   check=True, timeout=900)
    s = satpep.sweep(fig11, executor="ray", ray_address=ray_cluster, out=tmp_path / "ray")
    assert len(s) == 32
    cli_csv = tmp_path / "cli" / "sweep.csv"
    assert (tmp_path / "ray" / "sweep.csv").read_bytes() == cli_csv.read_bytes()
    cli_rows = pd.read_csv(cli_csv)
    pd.testing.assert_frame_equal(as_in_csv(s.rows), cli_rows, check_exact=True)
    # The figure's numbers (docs/reproductions/samaraweera.md, Fig 11, hub queue 2200), Mb/s.
    mbps = s.rows.set_index(["link.return.queue.kind", "link.return.rate"])["total_goodput_bps"] / 1e6
    assert round(mbps["drop_tail", "9.6kbps"], 2) == 0.23
    assert round(mbps["ack_suppression", "9.6kbps"], 2) == 7.47
    assert round(mbps["ack_filtering", "9.6kbps"], 2) == 7.32
    assert round(mbps["ack_compaction", "9.6kbps"], 2) == 8.79
    assert round(mbps["drop_tail", "430kbps"], 2) == 8.98
