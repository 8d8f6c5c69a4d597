//! Links with trace files: resolved beside the scenario, read once, located errors (the trace's
//! file and line, the key), limits, overrides, sweeps and the `run.json` round trip.

use std::path::{Path, PathBuf};

use satpep_proto::Duration;
use satpep_scenario::{load_file, load_str, ScenarioError};

/// A fresh folder under the target's temporary directory.
fn folder(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("traces_{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("traces")).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Two hosts, one link each way; `extra` goes into the forward link's table.
fn scenario(extra: &str) -> String {
    format!(
        "duration = \"2s\"\n\
         [[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
         [[link]]\nname = \"fwd\"\nfrom = \"a\"\nto = \"b\"\n{extra}\n\
         [[link]]\nname = \"ret\"\nfrom = \"b\"\nto = \"a\"\n\
         [[flow]]\nfrom = \"a\"\nto = \"b\"\n"
    )
}

fn err(r: Result<satpep_scenario::Loaded, ScenarioError>) -> ScenarioError {
    match r {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

#[test]
fn traces_are_read_beside_the_scenario_and_round_trip_through_run_json() {
    let dir = folder("ok");
    write(&dir, "traces/twelve.mahi", &"1\n".repeat(12));
    write(&dir, "traces/rtt.txt", "0 250\n1000 300 # handover\n");
    write(&dir, "traces/fade.txt", "500 1\n700 0\n");
    let path = write(
        &dir,
        "geo.toml",
        &scenario(
            "rate_trace = \"traces/twelve.mahi\"\ndelay_trace = \"traces/rtt.txt\"\n\
             loss_trace = \"traces/fade.txt\"\n\
             outages = [{ start = \"1s\", duration = \"200ms\" }]",
        ),
    );
    let loaded = load_file(&path, &[]).unwrap();
    let fwd = &loaded.scenario.links[0].config;
    let rate = fwd.rate_trace.as_ref().unwrap();
    let data = rate.data.as_ref().unwrap();
    assert_eq!(
        (data.opportunities(), data.period()),
        (12, Duration::from_millis(1))
    );
    assert_eq!(data.mean_rate().bps(), 144_000_000);
    // What summaries report as the link's rate: the trace's, not the unused `rate`.
    assert_eq!(fwd.nominal_rate().bps(), 144_000_000);
    assert_eq!(
        loaded.scenario.links[1].config.nominal_rate().bps(),
        10_000_000
    );
    assert!(Path::new(&rate.path).is_absolute(), "{}", rate.path);
    assert!(rate.path.ends_with("traces/twelve.mahi"));
    assert_eq!(
        fwd.delay_trace
            .as_ref()
            .unwrap()
            .data
            .as_ref()
            .unwrap()
            .len(),
        2
    );
    assert_eq!(fwd.outages.len(), 1);
    // run.json holds the absolute paths: loading its table again gives the same scenario,
    // from any folder.
    let text = toml::to_string(&loaded.resolved).unwrap();
    assert!(text.contains("rate_trace = "), "{text}");
    let again = load_str(&text, "<run.json>", &[]).unwrap();
    assert_eq!(again.scenario, loaded.scenario);
    // A link without traces writes none of the keys (run.json of older scenarios unchanged).
    let ret = &loaded.resolved["link"][1];
    for k in ["rate_trace", "delay_trace", "loss_trace", "outages"] {
        assert!(ret.get(k).is_none(), "{k}");
    }
}

#[test]
fn an_error_inside_a_trace_names_the_trace_file_its_line_and_the_key() {
    let dir = folder("bad");
    write(&dir, "traces/bad.mahi", "1\n2\n1\n");
    let path = write(
        &dir,
        "geo.toml",
        &scenario("rate_trace = \"traces/bad.mahi\""),
    );
    let e = err(load_file(&path, &[]));
    let shown = dir.join("traces/bad.mahi").display().to_string();
    assert_eq!(
        e.to_string(),
        format!(
            "{shown}:3: key `link.fwd.rate_trace`: timestamps must not decrease: 1 ms after 2 ms"
        )
    );
    assert_eq!((e.line(), e.key()), (Some(3), Some("link.fwd.rate_trace")));

    write(&dir, "traces/d.txt", "0 250\n10 -5\n");
    let path = write(&dir, "d.toml", &scenario("delay_trace = \"traces/d.txt\""));
    let e = err(load_file(&path, &[]));
    assert_eq!((e.line(), e.key()), (Some(2), Some("link.fwd.delay_trace")));
    assert!(e.origin().ends_with("traces/d.txt"), "{e}");
    assert!(e.message().contains("one-way delay"), "{e}");

    write(&dir, "traces/l.txt", "0 0.1\n10 2\n");
    let path = write(&dir, "l.toml", &scenario("loss_trace = \"traces/l.txt\""));
    let e = err(load_file(&path, &[]));
    assert_eq!((e.line(), e.key()), (Some(2), Some("link.fwd.loss_trace")));
}

#[test]
fn a_trace_that_cannot_be_read_is_reported_at_the_key_in_the_scenario() {
    let dir = folder("missing");
    let path = write(
        &dir,
        "geo.toml",
        &scenario("rate_trace = \"traces/none.mahi\""),
    );
    let e = err(load_file(&path, &[]));
    assert_eq!(e.origin(), path.display().to_string());
    assert_eq!((e.line(), e.key()), (Some(10), Some("link.fwd.rate_trace")));
    assert!(e.message().contains("cannot read it"), "{e}");
    // A folder (or a FIFO, a device) is not read at all.
    let path = write(&dir, "dir.toml", &scenario("rate_trace = \"traces\""));
    let e = err(load_file(&path, &[]));
    assert!(e.message().contains("not a regular file"), "{e}");
    // Too big: refused before it is read.
    let big = std::fs::File::create(dir.join("traces/big.mahi")).unwrap();
    big.set_len(satpep_scenario::MAX_TRACE_BYTES + 1).unwrap();
    let path = write(
        &dir,
        "big.toml",
        &scenario("rate_trace = \"traces/big.mahi\""),
    );
    let e = err(load_file(&path, &[]));
    assert!(e.message().contains("at most 67108864 bytes"), "{e}");
    // Not UTF-8: the line of the first bad byte.
    std::fs::write(dir.join("traces/bin.mahi"), b"1\n2\n\xff\n").unwrap();
    let path = write(
        &dir,
        "bin.toml",
        &scenario("rate_trace = \"traces/bin.mahi\""),
    );
    let e = err(load_file(&path, &[]));
    assert!(e.message().contains("not UTF-8 text (line 3)"), "{e}");
    // An empty path.
    let path = write(&dir, "empty.toml", &scenario("rate_trace = \"\""));
    let e = err(load_file(&path, &[]));
    assert_eq!(e.key(), Some("link.fwd.rate_trace"), "{e}");
}

#[test]
fn outages_must_be_ordered_and_positive() {
    let e = err(load_str(
        &scenario(
            "outages = [{ start = \"1s\", duration = \"1s\" }, { start = \"1500ms\", duration = \"1s\" }]",
        ),
        "o.toml",
        &[],
    ));
    assert_eq!(e.line(), Some(10), "{e}");
    assert_eq!(e.key(), Some("link.fwd.outages.1.start"), "{e}");
    assert!(e.message().contains("not overlap"), "{e}");
    let e = err(load_str(
        &scenario("outages = [{ start = \"1s\", lasting = \"1s\" }]"),
        "o.toml",
        &[],
    ));
    assert!(e.message().contains("unknown field `lasting`"), "{e}");
}

#[test]
fn set_and_sweep_choose_traces_and_each_file_is_read_once() {
    let dir = folder("sweep");
    write(&dir, "traces/one.mahi", "1\n");
    write(&dir, "traces/two.mahi", "1\n1\n");
    let path = write(
        &dir,
        "geo.toml",
        &format!(
            "{}\n[sweep]\n\"link.fwd.rate_trace\" = [\"traces/one.mahi\", \"traces/two.mahi\"]\nseed = [1, 2, 3]\n",
            scenario("rate_trace = \"traces/one.mahi\"")
        ),
    );
    let loaded = load_file(&path, &[]).unwrap();
    let opps: Vec<usize> = loaded
        .sweep
        .iter()
        .map(|p| {
            let t = p.scenario.links[0].config.rate_trace.as_ref().unwrap();
            t.data.as_ref().unwrap().opportunities()
        })
        .collect();
    assert_eq!(opps, [1, 1, 1, 2, 2, 2]);
    // The points share one parsed copy per file.
    let data = |i: usize| {
        let t = loaded.sweep[i].scenario.links[0]
            .config
            .rate_trace
            .as_ref()
            .unwrap();
        t.data.clone().unwrap()
    };
    assert!(std::sync::Arc::ptr_eq(&data(0), &data(2)));
    assert!(std::sync::Arc::ptr_eq(&data(3), &data(5)));
    // --set, relative to the scenario's folder.
    let loaded = load_file(&path, &["link.fwd.rate_trace=traces/two.mahi".into()]).unwrap();
    let t = loaded.scenario.links[0].config.rate_trace.as_ref().unwrap();
    assert_eq!(t.data.as_ref().unwrap().opportunities(), 2);
}
