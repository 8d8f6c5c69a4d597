//! Arora et al. (DirecPC): throughput vs the Internet host's window, without enhancement, with
//! TCP spoofing, with spoofing + selective ACK dropping. Writes `arora.csv` and one `arora_<case>.png` per return-path case
//! into the directory given (default `out/arora`):
//!
//! ```text
//! cargo run --release -p satpep-sim --example arora -- out/arora
//! ```

use std::fmt::Write as _;
use std::path::PathBuf;

use satpep_output::plot::line_chart_png;
use satpep_sim::experiments::arora::{run, Config};

const WINDOWS_KIB: [u64; 5] = [4, 8, 16, 32, 64];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "out/arora".into()),
    );
    std::fs::create_dir_all(&out)?;
    let mut csv = String::from(
        "case,config,window_bytes,throughput_bps,spoofed_acks,gw_retransmissions,dialup_queue_drops\n",
    );
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            "acks2_28k8",
            "client ACKs every 2nd segment, 28.8 kb/s return",
            &[],
        ),
        (
            "acks1_28k8",
            "client ACKs every segment, 28.8 kb/s return",
            &["flow.download.tcp.delack_segments=1"],
        ),
        (
            "acks1_14k4",
            "client ACKs every segment, 14.4 kb/s return",
            &[
                "flow.download.tcp.delack_segments=1",
                "link.dialup.rate=14.4kbps",
            ],
        ),
    ];
    for (acks, title, extra) in cases {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let mut series = Vec::new();
        println!("\n{title}");
        println!(
            "{:>18} {}",
            "window (KiB)",
            WINDOWS_KIB.map(|w| format!("{w:>8}")).concat()
        );
        for config in Config::ALL {
            let mut pts = Vec::new();
            let mut row = format!("{:>18} ", config.name());
            for (i, w) in WINDOWS_KIB.iter().enumerate() {
                let o = run(config, w * 1024, &extra)?;
                writeln!(
                    csv,
                    "{acks},{},{},{:.0},{},{},{}",
                    config.name(),
                    w * 1024,
                    o.throughput_bps,
                    o.spoofed_acks,
                    o.gw_retransmissions,
                    o.dialup_queue_drops
                )?;
                write!(row, "{:>8.0}", o.throughput_bps / 1e3)?;
                pts.push((i as f64, o.throughput_bps / 1e3));
            }
            println!("{row}   kb/s");
            series.push((config.name().to_string(), pts));
        }
        line_chart_png(
            &out.join(format!("arora_{acks}.png")),
            &format!("DirecPC, 2 MB download, 1 Mb/s satellite: {title}"),
            "Internet host window (KiB)",
            "throughput (kb/s)",
            Some(WINDOWS_KIB.iter().map(|w| w.to_string()).collect()),
            true,
            series,
        )?;
    }
    std::fs::write(out.join("arora.csv"), csv)?;
    println!("wrote {}", out.display());
    Ok(())
}
