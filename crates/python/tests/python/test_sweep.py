"""satpep.sweep on a local process pool: the rows and sweep.csv of `satpep sim`'s own sweep,
seeds, Parquet, and every executor giving the same rows."""

import subprocess

import pandas as pd
import pyarrow.parquet as pq
import pytest

import satpep
from test_run import TOML

GRID = {"link.forward.rate": ["1Mbps", "4Mbps"], "link.return.rate": ["64kbps", "256kbps"]}


def as_in_csv(rows: pd.DataFrame) -> pd.DataFrame:
    """The rows at sweep.csv's precision: bit/s with 1 decimal, other floats with 6."""
    out = rows.copy()
    for c in out.columns:
        if out[c].dtype.kind == "f":
            out[c] = out[c].round(1 if c.endswith("_bps") else 6)
    return out


def cli_sweep(cli, tmp_path, text, name="cli"):
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    out = tmp_path / name
    subprocess.run([cli, "sim", str(path), "--out", str(out), "--quiet"], check=True, timeout=300)
    return path, out


def test_grid_gives_the_cli_sweep_csv_byte_for_byte(tmp_path, cli):
    sweep_toml = TOML + (
        '\n[sweep]\n"link.forward.rate" = ["1Mbps", "4Mbps"]\n'
        '"link.return.rate" = ["64kbps", "256kbps"]\nseed = [1, 2]\n'
    )
    _, cli_out = cli_sweep(cli, tmp_path, sweep_toml)
    s = satpep.sweep(TOML, GRID, seeds=2, out=tmp_path / "py")
    assert s.keys == ["link.forward.rate", "link.return.rate", "seed"]
    for name in ("sweep.csv", "sweep_stats.csv"):
        assert (tmp_path / "py" / name).read_bytes() == (cli_out / name).read_bytes(), name
    cli_rows = pd.read_csv(cli_out / "sweep.csv")
    pd.testing.assert_frame_equal(as_in_csv(s.rows), cli_rows, check_exact=True)
    # First key slowest, seeds last; 1 MB over a faster forward link completes sooner.
    assert list(s.rows["link.forward.rate"]) == ["1Mbps"] * 4 + ["4Mbps"] * 4
    assert list(s.rows["seed"]) == [1, 2] * 4
    slow = s.rows[s.rows["link.forward.rate"] == "1Mbps"]["max_completion_time_s"]
    fast = s.rows[s.rows["link.forward.rate"] == "4Mbps"]["max_completion_time_s"]
    assert slow.min() > fast.max()


def test_the_scenarios_own_sweep_and_a_grid_give_the_same_rows(tmp_path):
    own = TOML + '\n[sweep]\n"link.forward.rate" = ["1Mbps", "4Mbps"]\n'
    a = satpep.sweep(own, executor="serial")
    b = satpep.sweep(TOML, {"link.forward.rate": ["1Mbps", "4Mbps"]}, jobs=2)
    pd.testing.assert_frame_equal(a.rows, b.rows, check_exact=True)
    # A grid adds its keys after the file's; `sweep={...}` replaces the file's, as --set does.
    c = satpep.sweep(own, {"seed": [1, 2]}, executor="serial")
    assert c.keys == ["link.forward.rate", "seed"] and len(c) == 4
    d = satpep.sweep(own, overrides={"sweep": {"seed": [1, 2]}}, executor="serial")
    e = satpep.sweep(TOML, seeds=2, executor="serial")
    assert d.keys == ["seed"]
    pd.testing.assert_frame_equal(d.rows, e.rows, check_exact=True)


def test_parquet_holds_the_rows_at_full_precision(tmp_path):
    s = satpep.sweep(TOML, GRID, out=tmp_path / "p", keep_runs=True)
    assert s.parquet == tmp_path / "p" / "sweep.parquet"
    back = pq.read_table(s.parquet).to_pandas()
    pd.testing.assert_frame_equal(back, s.rows, check_exact=True)
    assert len(back) == 4
    # keep_runs: each run's folder as in a CLI sweep.
    assert (tmp_path / "p" / "run-003" / "summary.json").exists()


def test_overrides_apply_to_every_run():
    s = satpep.sweep(TOML, {"seed": [1, 2]}, link__forward__rate="4Mbps", executor="serial")
    r = satpep.run(TOML, link__forward__rate="4Mbps", seed=2)
    assert s.rows.loc[1, "total_goodput_bps"] == r.summary.loc[0, "total_goodput_bps"]


def test_sweep_errors_carry_the_key():
    with pytest.raises(satpep.ScenarioError) as e:
        satpep.sweep(TOML, {"link.forward.rate": ["1Mbps", "warp"]})
    assert e.value.key == "link.forward.rate"
    with pytest.raises(ValueError, match="nothing to sweep"):
        satpep.sweep(TOML)
    with pytest.raises(ValueError, match="executor"):
        satpep.sweep(TOML, GRID, executor="slurm")
