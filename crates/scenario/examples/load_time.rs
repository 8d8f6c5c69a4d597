//! Time the scenario loader alone on a generated scenario, for docs/performance.md
//! ("Scenario loading"): `cargo run -p satpep-scenario --example load_time -- FLOWS [HOSTS]`
//! builds a star of HOSTS hosts (default 100) around one router, FLOWS bulk flows between them
//! with explicit ports, writes it to `target/load_time.toml`, loads it and prints the time.
//! `load_time --file PATH` times loading an existing file.

use std::fmt::Write as _;
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1).peekable();
    if args.peek().is_some_and(|a| a == "--file") {
        // Time an existing file instead: `load_time --file PATH`.
        let path = args.nth(1).expect("--file PATH");
        let t0 = Instant::now();
        let loaded = satpep_scenario::load_file(std::path::Path::new(&path), &[]);
        let secs = t0.elapsed().as_secs_f64();
        match loaded {
            Ok(l) => println!(
                "{path}: {} flows loaded in {secs:.3} s",
                l.scenario.flows.len()
            ),
            Err(e) => println!("{path}: refused in {secs:.3} s: {e}"),
        }
        return;
    }
    let flows: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100_000);
    let hosts: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(100);
    let mut text = String::from("duration = \"10s\"\noutput = { interval = \"1s\" }\n[[node]]\nname = \"r\"\nkind = \"router\"\n");
    for h in 0..hosts {
        let _ = write!(
            text,
            "[[node]]\nname = \"h{h}\"\n[[link]]\nname = \"up{h}\"\nfrom = \"h{h}\"\nto = \"r\"\n\
             [[link]]\nname = \"down{h}\"\nfrom = \"r\"\nto = \"h{h}\"\n"
        );
    }
    for f in 0..flows {
        let (a, b) = (f % hosts, (f / hosts + 1 + f % hosts) % hosts);
        let b = if a == b { (b + 1) % hosts } else { b };
        let _ = write!(
            text,
            "[[flow]]\nname = \"f{f}\"\nfrom = \"h{a}\"\nto = \"h{b}\"\nport = {}\nsrc_port = {}\n",
            1 + f % 60_000,
            1 + f / 60_000
        );
    }
    let path = std::path::Path::new("target/load_time.toml");
    std::fs::write(path, &text).expect("write target/load_time.toml");
    let t0 = Instant::now();
    let loaded = satpep_scenario::load_file(path, &[]);
    let elapsed = t0.elapsed();
    match loaded {
        Ok(l) => println!(
            "{} flows, {} nodes, {} bytes: loaded in {:.3} s; run.json's scenario is {} bytes \
             of TOML",
            l.scenario.flows.len(),
            l.scenario.nodes.len(),
            text.len(),
            elapsed.as_secs_f64(),
            toml::to_string(&l.resolved).map_or(0, |t| t.len())
        ),
        Err(e) => println!("refused in {:.3} s: {e}", elapsed.as_secs_f64()),
    }
}
