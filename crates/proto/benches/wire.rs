//! Micro-benchmark of the per-packet wire cost: emit and parse of IPv4 + TCP headers, and an
//! in-place ACK rewrite. Plain `Instant` loop on stable; prints ns per operation.
//!
//! Run with `cargo bench -p satpep-proto --bench wire`.

use std::hint::black_box;
use std::net::Ipv4Addr;
use std::time::Instant;

use satpep_proto::wire::{
    emit_ipv4_tcp, parse_ipv4_tcp, Ipv4Repr, SackBlocks, SeqNumber, TcpFlags, TcpIpv4View, TcpRepr,
    IPPROTO_TCP, MAX_IPV4_TCP_HEADER_LEN,
};

const ITERS: u32 = 2_000_000;

fn time(name: &str, mut f: impl FnMut(u32)) {
    for i in 0..ITERS / 10 {
        f(i); // warm-up
    }
    let start = Instant::now();
    for i in 0..ITERS {
        f(i);
    }
    let ns = start.elapsed().as_nanos() as f64 / f64::from(ITERS);
    println!("{name:<40} {ns:>7.1} ns/op");
}

fn main() {
    let ip = Ipv4Repr {
        src: Ipv4Addr::new(10, 0, 0, 1),
        dst: Ipv4Addr::new(10, 0, 1, 1),
        protocol: IPPROTO_TCP,
        ttl: 64,
        ident: 0,
        dscp_ecn: 0,
        payload_len: 0,
    };
    let data = TcpRepr {
        src_port: 5001,
        dst_port: 80,
        seq: SeqNumber(1),
        ack: Some(SeqNumber(1)),
        flags: TcpFlags::PSH,
        window: 502,
        timestamp: Some((100, 50)),
        payload_len: 1448,
        ..TcpRepr::default()
    };
    let mut sack = SackBlocks::default();
    sack.push(SeqNumber(3000), SeqNumber(4000));
    sack.push(SeqNumber(5000), SeqNumber(6000));
    let sack_ack = TcpRepr {
        payload_len: 0,
        flags: TcpFlags::default(),
        sack,
        ..data
    };
    let syn = TcpRepr {
        ack: None,
        flags: TcpFlags::SYN,
        mss: Some(1460),
        window_scale: Some(7),
        sack_permitted: true,
        payload_len: 0,
        ..data
    };

    for (name, tcp) in [("data+TS", data), ("ACK+TS+2 SACK", sack_ack), ("SYN", syn)] {
        let mut buf = [0u8; MAX_IPV4_TCP_HEADER_LEN];
        time(&format!("emit_ipv4_tcp  {name}"), |i| {
            let t = TcpRepr {
                seq: SeqNumber(i),
                ..tcp
            };
            black_box(emit_ipv4_tcp(black_box(&ip), &t, &mut buf));
        });
        let n = emit_ipv4_tcp(&ip, &tcp, &mut buf);
        let hdr = buf;
        time(&format!("parse_ipv4_tcp {name}"), |_| {
            let r = parse_ipv4_tcp(black_box(&hdr[..n]), black_box(tcp.payload_len));
            black_box(r.is_ok());
        });
    }

    let mut buf = [0u8; MAX_IPV4_TCP_HEADER_LEN];
    let n = emit_ipv4_tcp(&ip, &sack_ack, &mut buf);
    time("view: set_ack_number + set_window", |i| {
        let mut view = TcpIpv4View::new_unchecked(&mut buf[..n]);
        view.set_ack_number(SeqNumber(i));
        view.set_window(i as u16);
        black_box(view.tcp_checksum());
    });
    time("view: new_checked + is_pure_ack", |_| {
        let view = TcpIpv4View::new_checked(black_box(&buf[..n]));
        black_box(view.map(|v| v.is_pure_ack()).ok());
    });
}
