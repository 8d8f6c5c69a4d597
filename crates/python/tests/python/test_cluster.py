"""docs/cluster.md: one `satpep sim` per task with a one-point `--set sweep={...}`, rows
concatenated, gives the rows of the whole sweep run at once."""

import itertools
import subprocess

from test_run import TOML


def test_one_point_sweeps_concatenate_to_the_whole_sweep(tmp_path, cli):
    rates = ["1Mbps", "4Mbps"]
    seeds = [1, 2, 3]
    path = tmp_path / "geo.toml"
    path.write_text(TOML + f'\n[sweep]\n"link.forward.rate" = {rates}\nseed = {seeds}\n'.replace("'", '"'))
    subprocess.run([cli, "sim", str(path), "--out", str(tmp_path / "whole"), "--quiet"],
                   check=True, timeout=300)
    parts = []
    for i, (rate, seed) in enumerate(itertools.product(rates, seeds)):
        out = tmp_path / f"task-{i}"
        subprocess.run(
            [cli, "sim", str(path), "--set",
             f'sweep={{"link.forward.rate"=["{rate}"],seed=[{seed}]}}',
             "--out", str(out), "--quiet"],
            check=True, timeout=120,
        )
        lines = (out / "sweep.csv").read_text().splitlines()
        assert len(lines) == 2, lines
        parts.append(lines)
    # awk 'FNR > 1 || NR == 1' out/task-*/sweep.csv
    merged = [parts[0][0]] + [p[1] for p in parts]
    whole = (tmp_path / "whole" / "sweep.csv").read_text().splitlines()
    assert merged[0] == whole[0]
    strip_run = lambda line: line.split(",", 1)[1]  # noqa: E731
    assert [strip_run(l) for l in merged[1:]] == [strip_run(l) for l in whole[1:]]
    assert all(l.startswith("0,") for l in merged[1:])
