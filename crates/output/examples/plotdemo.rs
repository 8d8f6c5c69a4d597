use satpep_output::*;
use satpep_proto::{Duration, Instant};
fn main() {
    let dir = std::path::Path::new("/tmp/plotdemo");
    std::fs::create_dir_all(dir).unwrap();
    let mut w = SeriesWriter::create(dir, vec!["bulk0".into(), "bulk1".into()], vec!["sat_fwd".into(), "sat_ret".into()]).unwrap();
    for step in 0..20000u64 {
        let t = Instant(step * 1_000_000);
        for flow in 0..2usize {
            let cwnd = if step < 4000 { 1460 << (step / 600) } else { 46_720 + 146 * (step % 3000) } / (flow as u64 + 1);
            let nxt = step * step * 10 * (flow as u64 + 1);
            w.write_flow(&FlowSample { time: t, flow, cwnd, ssthresh: None, srtt: Some(Duration::from_millis(560)), rto: Duration::from_secs(1), rwnd: 1 << 20, bytes_in_flight: cwnd, snd_una: nxt.saturating_sub(cwnd), snd_nxt: nxt, delivered: nxt.saturating_sub(600_000), retransmissions: 0 }).unwrap();
        }
        for link in 0..2 {
            w.write_link(&LinkSample { time: t, link, queue_packets: (step % 5000) / 50 / (link as u64 + 1), queue_bytes: 0, throughput_bps: (step as f64 * 1e3).min(1e7) / (link as f64 * 20.0 + 1.0), queue_drops: 0, error_drops: 0 }).unwrap();
        }
    }
    w.finish().unwrap();
    let t0 = std::time::Instant::now();
    let files = plot_dir(dir).unwrap();
    eprintln!("{} files in {:?}", files.len(), t0.elapsed());
}
