//! `satpep model …`: analytic models, no simulation. `satpep model dama` evaluates the paper's
//! eqs. 3–5 (Roseti & Kristiansen): the RTT TCP sees through DVB-RCS DAMA and the file
//! transfer time it implies (see `satpep_proto::dama::theory` and docs/dama.md).

use std::process::ExitCode;

use clap::{Args, Subcommand};
use satpep_proto::dama::theory::{rtt, transfer_time, TcpShape};
use satpep_proto::units::{parse_bitrate, parse_bytes, parse_duration};
use satpep_proto::{Bitrate, ByteSize, Duration};

/// Arguments of `satpep model`.
#[derive(Debug, Args)]
pub struct ModelArgs {
    #[command(subcommand)]
    model: Model,
}

#[derive(Debug, Subcommand)]
enum Model {
    /// DVB-RCS DAMA: RTT TCP sees (eqs. 3–4) and transfer time (eq. 5).
    Dama(DamaArgs),
}

/// Arguments of `satpep model dama`.
#[derive(Debug, Args)]
struct DamaArgs {
    /// Physical round-trip delay RTT₀.
    #[arg(long, default_value = "500ms", value_parser = dur)]
    rtt0: Duration,
    /// System response time L, in superframes.
    #[arg(long, short = 'l', default_value_t = 11.0)]
    response: f64,
    /// Frames per superframe n_s.
    #[arg(long, default_value_t = 4)]
    ns: u32,
    /// Frame duration.
    #[arg(long, default_value = "24ms", value_parser = dur)]
    frame: Duration,
    /// Mean CRA/RBDC gain ᾱ, in superframes (α = L: pure CRA).
    #[arg(long, default_value_t = 0.0)]
    alpha: f64,
    /// Congestion term β, in superframes.
    #[arg(long, default_value_t = 0.0)]
    beta: f64,
    /// File sizes to transfer (repeatable).
    #[arg(long = "size", value_parser = bytes, default_values = ["500KB", "10MB"])]
    sizes: Vec<ByteSize>,
    /// TCP segment payload.
    #[arg(long, default_value_t = 1460)]
    mss: u64,
    /// Initial window, segments.
    #[arg(long, default_value_t = 1)]
    iw: u64,
    /// Segments per ACK (2: delayed ACKs).
    #[arg(long, default_value_t = 2.0)]
    b: f64,
    /// Receive window.
    #[arg(long, default_value = "1MB", value_parser = bytes)]
    rwnd: ByteSize,
    /// Return-link capacity.
    #[arg(long, default_value = "2048kbps", value_parser = rate)]
    capacity: Bitrate,
}

fn dur(s: &str) -> Result<Duration, String> {
    parse_duration(s).map_err(|e| e.0)
}
fn bytes(s: &str) -> Result<ByteSize, String> {
    parse_bytes(s).map_err(|e| e.0)
}
fn rate(s: &str) -> Result<Bitrate, String> {
    parse_bitrate(s).map_err(|e| e.0)
}

/// Run `satpep model`.
pub fn run(args: ModelArgs) -> ExitCode {
    match args.model {
        Model::Dama(a) => {
            print!("{}", dama_table(&a));
            ExitCode::SUCCESS
        }
    }
}

fn dama_table(a: &DamaArgs) -> String {
    let tcp = TcpShape {
        mss: a.mss,
        initial_window: a.iw,
        segments_per_ack: a.b,
        rwnd: a.rwnd.0,
        capacity: a.capacity,
    };
    let schemes = [
        ("CRA (α = L)", a.response),
        ("VBDC (α = 0)", 0.0),
        ("given α", a.alpha),
    ];
    let mut out = format!(
        "RTT = RTT0 + (L + β − α)·n_s·T_f   (RTT0 {} ms, L {}, n_s {}, T_f {} ms, β {})\n",
        ms(a.rtt0),
        a.response,
        a.ns,
        ms(a.frame),
        a.beta
    );
    out.push_str(&format!("{:<14} {:>10}", "scheme", "RTT ms"));
    for s in &a.sizes {
        out.push_str(&format!(" {:>14}", format!("T({}) s", s.0)));
    }
    out.push_str(&format!(" {:>14}\n", "T/T_CRA"));
    let cra_rtt = rtt(a.rtt0, a.response, a.ns, a.frame, a.response, a.beta);
    for (name, alpha) in schemes {
        let r = rtt(a.rtt0, a.response, a.ns, a.frame, alpha, a.beta);
        out.push_str(&format!("{name:<14} {:>10.1}", ms(r)));
        let mut ratios = Vec::new();
        for s in &a.sizes {
            let (t, _) = transfer_time(s.0, r, &tcp);
            let (t0, _) = transfer_time(s.0, cra_rtt, &tcp);
            out.push_str(&format!(" {:>14.2}", t.as_secs_f64()));
            ratios.push(format!("{:.2}", t.as_secs_f64() / t0.as_secs_f64()));
        }
        out.push_str(&format!(" {:>14}\n", ratios.join("/")));
    }
    out
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(subcommand)]
        m: Model,
    }

    #[test]
    fn defaults_reproduce_the_paper_rtts() {
        let Model::Dama(a) = T::parse_from(["x", "dama"]).m;
        let table = dama_table(&a);
        // CRA 500 ms, VBDC 500 + 11·96 = 1556 ms.
        assert!(table.contains("CRA (α = L)         500.0"), "{table}");
        assert!(table.contains("VBDC (α = 0)       1556.0"), "{table}");
    }
}
