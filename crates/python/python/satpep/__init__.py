"""satpep from Python: run satellite-TCP scenarios and sweeps, get pandas DataFrames.

    import satpep
    r = satpep.run("scenarios/default.toml", duration="5s")
    r.flows            # one row per TCP flow (goodput, retransmissions, ...)
    s = satpep.sweep("scenarios/default.toml", {"link.forward.rate": ["2Mbps", "10Mbps"]}, seeds=3)
    s.rows             # one row per run, the columns of `satpep sim`'s sweep.csv

Runs are the simulator's own (the Rust extension `satpep._native`): the same scenario, overrides
and seed give the same numbers as `satpep sim`. A sweep's runs go to a local process pool
(``executor="process"``, the default) or to Ray (``executor="ray"``), one task per run, and
their rows merge into one DataFrame, sorted by run index whatever order they finish in.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import pathlib
import tempfile
from functools import cached_property
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

import pandas as pd

from . import _native
from ._native import ScenarioError, __version__

__all__ = ["run", "sweep", "RunResult", "SweepResult", "ScenarioError", "__version__"]

Scenario = Union[str, os.PathLike, Mapping[str, Any]]

#: Metric columns of a sweep row, after the swept keys (as in sweep.csv).
SWEEP_METRICS = (
    "total_goodput_bps",
    "mean_goodput_bps",
    "min_goodput_bps",
    "jain_fairness",
    "retransmissions",
    "rto_expirations",
    "max_completion_time_s",
    "flows_completed",
)


def run(
    scenario: Scenario,
    overrides: Optional[Mapping[str, Any]] = None,
    *,
    seed: Optional[int] = None,
    out: Union[str, os.PathLike, None] = None,
    plot: bool = False,
    **kw: Any,
) -> "RunResult":
    """Run one scenario, as ``satpep sim SCENARIO --set K=V ... --seed N --out OUT``.

    ``scenario`` is a path to a TOML file, TOML text, or a dict in the file's structure.
    Overrides are the CLI's ``--set``: a dict of dotted keys (``{"link.forward.rate":
    "20Mbps"}``) and/or keyword arguments with ``__`` for the dots (``link__forward__rate=
    "20Mbps"``, ``duration="5s"``). ``out`` must be new or empty; without it the files go to a
    new temporary folder. ``plot=True`` renders the PNG/SVG plots too.

    Raises ``ScenarioError`` (a ValueError) with ``file``, ``line``, ``column``, ``key`` and
    ``message`` for a scenario or override that does not load.
    """
    text, origin = _source(scenario)
    sets = _overrides(overrides, seed, kw)
    out_dir = _out_dir(out, "satpep-run-")
    summary_text, row = _native.run(text, origin, sets, str(out_dir))
    plots = [pathlib.Path(p) for p in _native.plot(str(out_dir))] if plot else []
    return RunResult(out_dir, json.loads(summary_text), row, plots)


def sweep(
    scenario: Scenario,
    grid: Optional[Mapping[str, Sequence[Any]]] = None,
    *,
    seeds: Optional[int] = None,
    overrides: Optional[Mapping[str, Any]] = None,
    executor: str = "process",
    jobs: Optional[int] = None,
    out: Union[str, os.PathLike, None] = None,
    keep_runs: bool = False,
    parquet: Optional[bool] = None,
    ray_address: Optional[str] = None,
    **kw: Any,
) -> "SweepResult":
    """Run every combination of ``grid`` (dotted key -> list of values; the first key varies
    slowest) and return their rows, as ``satpep sim`` does for a scenario with that ``[sweep]``.

    ``seeds=N`` adds ``seed = [1, ..., N]`` as the last key: runs that differ only in seed form
    a group (sweep_stats.csv). Without ``grid`` and ``seeds`` the scenario's own ``[sweep]`` is
    used; grid keys are added after the ``[sweep]``'s own. ``overrides``/keyword arguments
    apply to every run, like ``--set``; as there, ``sweep={...}`` replaces the scenario's
    ``[sweep]`` and ``sweep.KEY=[...]`` adds a key to it.

    ``executor``: ``"process"`` (a local process pool of ``jobs`` workers, default all cores),
    ``"ray"`` (one Ray task per run; connects to ``ray_address`` or ``RAY_ADDRESS``, else
    starts a local Ray) or ``"serial"`` (in this process, one after the other).

    With ``out``: writes ``sweep.csv`` (byte for byte what ``satpep sim`` writes for the same
    sweep), ``sweep_stats.csv`` when seeds are swept, and ``sweep.parquet`` (default: when
    pyarrow is installed; ``parquet=True`` requires it). ``keep_runs=True`` also keeps each
    run's files in ``out/run-NNN/`` (with Ray, ``out`` must then be on a filesystem every
    worker shares).
    """
    if executor not in _EXECUTORS:
        raise ValueError(f"executor must be one of {sorted(_EXECUTORS)}, not {executor!r}")
    text, origin = _source(scenario)
    sets = _override_map(overrides, None, kw)
    # `sweep` overrides act on the [sweep] table, as `--set` does on the CLI: `sweep={...}`
    # replaces the file's, `sweep.K=[...]` adds a key; then the grid's keys, then seeds.
    replace = sets.pop("sweep", None)
    adds = {k.split(".", 1)[1]: sets.pop(k) for k in list(sets) if k.startswith("sweep.")}
    if replace is not None or adds or grid or seeds:
        base, file_keys = _native.take_sweep(text, origin)
        entries = {} if replace is not None else dict(file_keys)
        for k, values in {**(replace or {}), **adds, **(grid or {})}.items():
            if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
                raise TypeError(f"sweep values of {k!r} must be a list")
            entries[k] = _toml(list(values))
        if seeds:
            if "seed" in entries:
                raise ValueError("seed is swept already and seeds= is given: choose one")
            entries["seed"] = _toml(list(range(1, int(seeds) + 1)))
        text = base + "\n[sweep]\n" + "".join(f"{json.dumps(k)} = {v}\n" for k, v in entries.items())
    sets = [f"{k}={_toml(v)}" for k, v in sets.items()]
    _name, base, points = _native.prepare(text, origin, sets)
    if not points:
        raise ValueError(
            f"{origin}: nothing to sweep: give a grid, seeds=N or a scenario with a [sweep]"
        )
    keys = [k for k, _, _ in points[0]]
    out_dir = _out_dir(out, None) if out is not None else None
    tasks = [
        (
            base,
            origin,
            sets + [f"{k}={literal}" for k, _, literal in point],
            i,
            [(k, written) for k, written, _ in point],
            str(out_dir / f"run-{i:03}") if out_dir is not None and keep_runs else None,
        )
        for i, point in enumerate(points)
    ]
    rows = sorted(_EXECUTORS[executor](tasks, jobs, ray_address), key=lambda r: r["run"])
    result = SweepResult(keys, rows, out_dir)
    if out_dir is not None:
        _native.write_sweep(str(out_dir), keys, rows)
        if parquet is None:
            try:
                import pyarrow  # noqa: F401

                parquet = True
            except ImportError:
                parquet = False
        if parquet:
            result.rows.to_parquet(out_dir / "sweep.parquet", index=False)
    return result


class RunResult:
    """One run: its folder and DataFrames read from it (each read when first asked for)."""

    def __init__(self, out: pathlib.Path, summary_json: dict, row: dict, plots: list):
        #: The run's folder (summary.json, run.json, flows.csv, links.csv, pcap, plots).
        self.out = out
        #: summary.json as a dict.
        self.summary_json = summary_json
        #: PNG/SVG plot files (empty unless ``plot=True``).
        self.plots = plots
        self._row = row

    @cached_property
    def summary(self) -> pd.DataFrame:
        """One row: scenario, seed, status, sim_time_s, events, then the sweep.csv metrics
        (total/mean/min goodput, Jain fairness, retransmissions, ... utilisation_<link>)."""
        s = self.summary_json
        head = {k: s[k] for k in ("scenario", "seed", "status", "sim_time_s", "events")}
        return pd.DataFrame([{**head, **_flat_row(self._row)}]).drop(columns=["run"])

    @cached_property
    def flows(self) -> pd.DataFrame:
        """One row per TCP flow: summary.json's ``flows`` (goodput_bps, retransmissions, ...)."""
        return pd.json_normalize(self.summary_json["flows"])

    @cached_property
    def links(self) -> pd.DataFrame:
        """One row per link: summary.json's ``links`` (utilisation, drops, ...)."""
        return pd.json_normalize(self.summary_json["links"])

    @cached_property
    def series(self) -> pd.DataFrame:
        """TCP sender state per flow over time (flows.csv; columns in docs/outputs.md)."""
        return _read_csv(self.out / "flows.csv")

    @cached_property
    def link_series(self) -> pd.DataFrame:
        """Queue and throughput per link over time (links.csv)."""
        return _read_csv(self.out / "links.csv")

    @property
    def pcaps(self) -> list:
        """The run's packet captures (``*.pcapng``; none unless the scenario captures)."""
        return sorted(self.out.glob("*.pcapng"))

    def __repr__(self) -> str:
        return f"RunResult(out={str(self.out)!r}, flows={len(self.summary_json['flows'])})"


class SweepResult:
    """A sweep's rows (one per run, sorted by run index) and where its files went."""

    def __init__(self, keys: list, raw_rows: list, out: Optional[pathlib.Path]):
        #: The swept keys, in the order of the grid (first varies slowest).
        self.keys = keys
        #: The folder holding sweep.csv / sweep.parquet, if ``out`` was given.
        self.out = out
        self.raw_rows = raw_rows

    @cached_property
    def rows(self) -> pd.DataFrame:
        """The columns of sweep.csv: run, each swept key (numbers as numbers), the metrics,
        then utilisation_<link> per link; floats at full precision (sweep.csv rounds)."""
        df = pd.DataFrame([_flat_row(r) for r in self.raw_rows])
        for k in self.keys:
            try:
                df[k] = pd.to_numeric(df[k])
            except (ValueError, TypeError):
                pass
        return df

    @property
    def csv(self) -> Optional[pathlib.Path]:
        return None if self.out is None else self.out / "sweep.csv"

    @property
    def parquet(self) -> Optional[pathlib.Path]:
        p = None if self.out is None else self.out / "sweep.parquet"
        return p if p is not None and p.exists() else None

    def __len__(self) -> int:
        return len(self.raw_rows)

    def __repr__(self) -> str:
        return f"SweepResult(runs={len(self)}, keys={self.keys})"


# ---- scenario sources and overrides ------------------------------------------------------


def _source(scenario: Scenario) -> "tuple[str, str]":
    """(TOML text, origin for messages and the default name)."""
    if isinstance(scenario, Mapping):
        return _native.toml_from_json(json.dumps(scenario)), "<dict>"
    if isinstance(scenario, os.PathLike):
        return pathlib.Path(scenario).read_text(), os.fspath(scenario)
    if isinstance(scenario, str):
        if "\n" not in scenario and pathlib.Path(scenario).is_file():
            return pathlib.Path(scenario).read_text(), scenario
        if "\n" in scenario or "=" in scenario:
            return scenario, "<string>"
        raise FileNotFoundError(f"{scenario}: no such scenario file")
    raise TypeError(f"a scenario is a path, TOML text or a dict, not {type(scenario).__name__}")


def _toml(v: Any) -> str:
    """A Python value as a TOML value, for ``--set`` and ``[sweep]``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)  # a TOML basic string: same escapes
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml(x) for x in v) + "]"
    raise TypeError(f"cannot write {type(v).__name__} {v!r} as a scenario value")


def _override_map(overrides: Optional[Mapping[str, Any]], seed: Optional[int], kw: dict) -> dict:
    sets = dict(overrides or {})
    for k, v in kw.items():
        sets[k.replace("__", ".")] = v
    if seed is not None:
        if "seed" in sets:
            raise ValueError("seed given twice (seed= and in the overrides)")
        sets["seed"] = seed
    return sets


def _overrides(overrides: Optional[Mapping[str, Any]], seed: Optional[int], kw: dict) -> list:
    """`--set` strings from a dict of dotted keys and keyword arguments (`__` for dots)."""
    return [f"{k}={_toml(v)}" for k, v in _override_map(overrides, seed, kw).items()]


def _out_dir(out: Union[str, os.PathLike, None], temp_prefix: Optional[str]) -> pathlib.Path:
    if out is None:
        return pathlib.Path(tempfile.mkdtemp(prefix=temp_prefix))
    d = pathlib.Path(out)
    if d.exists() and any(d.iterdir()):
        raise FileExistsError(f"{d}: not empty (satpep writes only into a new or empty folder)")
    d.mkdir(parents=True, exist_ok=True)
    return d


def _read_csv(path: pathlib.Path) -> pd.DataFrame:
    if not path.exists():
        return pd.DataFrame()
    return pd.read_csv(path)


def _flat_row(r: dict) -> dict:
    flat = {"run": r["run"]}
    flat.update(dict(r["assignments"]))
    for m in SWEEP_METRICS:
        v = r[m]
        flat[m] = float("nan") if v is None else v
    for link, u in r["link_utilisation"]:
        flat[f"utilisation_{link}"] = u
    return flat


# ---- executors: each takes the task tuples and returns the rows in any order --------------


def _task(args: tuple) -> dict:
    return _native.run_row(*args)


def _serial(tasks: list, _jobs: Optional[int], _address: Optional[str]) -> list:
    return [_task(t) for t in tasks]


def _process(tasks: list, jobs: Optional[int], _address: Optional[str]) -> list:
    workers = max(1, min(jobs or os.cpu_count() or 1, len(tasks)))
    # Batches of a few runs per message: short runs are then not dominated by the pipe.
    chunk = max(1, len(tasks) // (workers * 8))
    with concurrent.futures.ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_task, tasks, chunksize=chunk))


def _ray(tasks: list, _jobs: Optional[int], address: Optional[str]) -> list:
    import ray

    started = not ray.is_initialized()
    if started:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(_task)
        return ray.get([remote.remote(t) for t in tasks])
    finally:
        if started:
            ray.shutdown()


_EXECUTORS = {"process": _process, "ray": _ray, "serial": _serial}
