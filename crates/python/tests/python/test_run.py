"""satpep.run: scenario sources, overrides, DataFrames, errors with their location; and that a
run from Python is the CLI's run, byte for byte."""

import json
import subprocess

import pandas as pd
import pytest

import satpep

# Two hosts over a GEO hop, one bulk flow: 1 MB over 2 Mb/s and 250 ms each way.
TOML = """
duration = "20s"
stop_when_done = true

[[node]]
name = "server"

[[node]]
name = "client"

[[link]]
name = "forward"
from = "server"
to = "client"
rate = "2Mbps"
delay = "250ms"

[[link]]
name = "return"
from = "client"
to = "server"
rate = "256kbps"
delay = "250ms"

[[flow]]
name = "bulk"
from = "server"
to = "client"
app = { kind = "bulk", bytes = "1MB" }
"""


def test_toml_text_path_and_dict_give_the_same_run(tmp_path):
    import tomllib

    path = tmp_path / "geo.toml"
    path.write_text(TOML)
    a = satpep.run(TOML)
    b = satpep.run(path)
    c = satpep.run(tomllib.loads(TOML))
    for r in (a, b, c):
        assert r.flows.loc[0, "name"] == "bulk"
        assert r.flows.loc[0, "bytes_delivered"] == 1_000_000
    assert a.summary_json["flows"] == b.summary_json["flows"] == c.summary_json["flows"]
    # The transfer completes: goodput = 8 Mbit over its completion time.
    f = b.flows.iloc[0]
    assert f["completion_time_s"] > 0
    assert f["goodput_bps"] == pytest.approx(8e6 / f["completion_time_s"], rel=1e-6)
    assert f["goodput_bps"] < 2e6


def test_run_matches_the_cli_byte_for_byte(tmp_path, cli):
    path = tmp_path / "geo.toml"
    path.write_text(TOML)
    subprocess.run(
        [cli, "sim", str(path), "--set", "link.forward.rate=4Mbps", "--seed", "7",
         "--out", str(tmp_path / "cli"), "--quiet"],
        check=True, timeout=120,
    )
    r = satpep.run(path, {"link.forward.rate": "4Mbps"}, seed=7, out=tmp_path / "py")
    for name in ("summary.json", "flows.csv", "links.csv"):
        assert (tmp_path / "py" / name).read_bytes() == (tmp_path / "cli" / name).read_bytes(), name
    # run.json differs only if the version did; both record the same resolved scenario.
    cli_run = json.loads((tmp_path / "cli" / "run.json").read_text())
    assert json.loads((tmp_path / "py" / "run.json").read_text()) == cli_run
    assert r.out == tmp_path / "py"


def test_dataframes(tmp_path):
    r = satpep.run(TOML, link__forward__rate="4Mbps", out=tmp_path / "o", plot=True)
    s = r.summary
    assert list(s.columns[:5]) == ["scenario", "seed", "status", "sim_time_s", "events"]
    assert s.loc[0, "scenario"] == "default"
    assert s.loc[0, "status"] == "complete"
    # summary.json keeps 3 decimals; the row is computed from the full value.
    assert s.loc[0, "total_goodput_bps"] == pytest.approx(r.flows.loc[0, "goodput_bps"], abs=5e-4)
    assert s.loc[0, "flows_completed"] == 1
    assert set(r.links["name"]) == {"forward", "return"}
    assert {"utilisation_forward", "utilisation_return"} <= set(s.columns)
    assert isinstance(r.series, pd.DataFrame) and len(r.series) > 10
    assert r.series["time_s"].is_monotonic_increasing
    assert r.series["delivered_bytes"].iloc[-1] == 1_000_000
    assert len(r.link_series) > 10
    assert any(p.suffix == ".png" for p in r.plots)
    assert all(p.exists() for p in r.plots)


def test_overrides_reach_the_run():
    slow = satpep.run(TOML, link__forward__rate="1Mbps").flows.iloc[0]["goodput_bps"]
    fast = satpep.run(TOML, {"link.forward.rate": "4Mbps"}).flows.iloc[0]["goodput_bps"]
    assert slow < 1e6 < fast


def test_errors_carry_file_line_key(tmp_path):
    bad = TOML.replace('rate = "256kbps"', 'rate = "fast"')
    path = tmp_path / "bad.toml"
    path.write_text(bad)
    with pytest.raises(satpep.ScenarioError) as e:
        satpep.run(path)
    err = e.value
    assert isinstance(err, ValueError)
    assert err.file == str(path)
    assert err.line == bad.splitlines().index('rate = "fast"') + 1
    assert err.key == "link.return.rate"
    assert err.message and str(path) in str(err)

    with pytest.raises(satpep.ScenarioError) as e:
        satpep.run(TOML, link__nope__rate="1Mbps")
    assert e.value.file.startswith("--set")
    assert e.value.line is None
    assert "link.nope" in e.value.key

    with pytest.raises(satpep.ScenarioError) as e:
        satpep.run({"duration": "soon"})
    assert e.value.file == "<dict>"
    assert e.value.key == "duration"


def test_out_must_be_new_or_empty(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError):
        satpep.run(TOML, out=tmp_path / "x")
    assert (tmp_path / "x" / "keep.txt").read_text() == "mine"


def test_a_scenario_with_a_sweep_goes_to_sweep():
    with pytest.raises(ValueError, match="satpep.sweep"):
        satpep.run(TOML + '\n[sweep]\n"link.forward.rate" = ["1Mbps", "2Mbps"]\n')


def test_ctrl_c_stops_a_run_with_whole_outputs(tmp_path):
    import signal
    import sys
    import time

    # Two simulated hours at 10 Mb/s (seconds of CPU): far longer than the test waits.
    long = TOML.replace('duration = "20s"', 'duration = "7200s"').replace(
        'rate = "2Mbps"', 'rate = "10Mbps"').replace(', bytes = "1MB"', "")
    long += '\n[output]\ninterval = "1s"\n'

    out = tmp_path / "o"
    code = (
        "import sys, satpep\n"
        "try:\n"
        "    satpep.run(sys.argv[1], out=sys.argv[2])\n"
        "except KeyboardInterrupt:\n"
        "    print('KeyboardInterrupt')\n"
    )
    p = subprocess.Popen([sys.executable, "-c", code, long, str(out)], stdout=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not (out / "flows.csv").exists():
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.05)
    time.sleep(0.2)
    p.send_signal(signal.SIGINT)
    stdout, _ = p.communicate(timeout=60)
    assert stdout.decode().strip() == "KeyboardInterrupt"
    summary = json.loads((out / "summary.json").read_text())
    assert summary["status"] == "interrupted"
    assert 0 < summary["sim_time_s"] < 7200
    assert (out / "run.json").exists()
    # The CSV ends on a whole row.
    assert (out / "flows.csv").read_text().endswith("\n")
