//! Networks behind emulated hosts (`subnets`) and hosts attached to existing namespaces
//! (`netns`): the satellite hop between two router namespaces.
//!
//! ```text
//!  sub-c ──veth── sub-a ══ satpep emu (10 Mb/s, 100 ms each way) ══ sub-b ──veth── sub-s
//!  10.88.1.2     10.88.1.1  TUN 10.88.0.1                 TUN 10.88.0.2  10.88.2.1   10.88.2.2
//! ```
//!
//! The test makes the four namespaces itself (named after its pid) and removes them however it
//! ends. Needs root, `ip`, `ping`, `curl` and `python3`: without them the tests fail, they do
//! not skip (CI runs them as root).

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Mutex;

use satpep_emu::{netns, EmuError, EmuOptions};
use satpep_proto::Duration;

static SERIAL: Mutex<()> = Mutex::new(());

/// The test's namespaces, removed (with every process inside) on drop.
struct Topology {
    prefix: String,
}

impl Topology {
    fn ns(&self, role: &str) -> String {
        format!("{}{role}", self.prefix)
    }

    fn up(tag: &str) -> Self {
        let t = Self {
            prefix: format!("sub{}{tag}-", std::process::id()),
        };
        let sh = |script: &str| {
            let out = Command::new("sh").args(["-ec", script]).output().unwrap();
            assert!(
                out.status.success(),
                "{script}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let (c, a, b, s) = (t.ns("c"), t.ns("a"), t.ns("b"), t.ns("s"));
        sh(&format!(
            "for n in {c} {a} {b} {s}; do ip netns add $n; ip -n $n link set lo up; \
               ip netns exec $n sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6'; done
             ip link add lan0 netns {c} type veth peer name lan0 netns {a}
             ip link add lan0 netns {s} type veth peer name lan0 netns {b}
             ip -n {c} addr add 10.88.1.2/24 dev lan0; ip -n {c} link set lan0 up
             ip -n {a} addr add 10.88.1.1/24 dev lan0; ip -n {a} link set lan0 up
             ip -n {s} addr add 10.88.2.2/24 dev lan0; ip -n {s} link set lan0 up
             ip -n {b} addr add 10.88.2.1/24 dev lan0; ip -n {b} link set lan0 up
             ip -n {c} route add default via 10.88.1.1
             ip -n {s} route add default via 10.88.2.1"
        ));
        t
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for ns in netns::list(&self.prefix) {
            let _ = Command::new("sh")
                .args([
                    "-c",
                    &format!("kill -9 $(ip netns pids {ns}) 2>/dev/null; ip netns del {ns}"),
                ])
                .status();
        }
    }
}

fn scenario(a: &str, b: &str) -> satpep_scenario::Scenario {
    let text = format!(
        r#"
name = "subnets"
[[node]]
name = "a"
address = "10.88.0.1"
netns = "{a}"
subnets = ["10.88.1.0/24"]
[[node]]
name = "b"
address = "10.88.0.2"
netns = "{b}"
subnets = ["10.88.2.0/24"]
[[link]]
name = "ab"
from = "a"
to = "b"
rate = "10Mbps"
delay = "100ms"
[[link]]
name = "ba"
from = "b"
to = "a"
rate = "10Mbps"
delay = "100ms"
"#
    );
    satpep_scenario::load_str(&text, "<test>", &[])
        .expect("test scenario loads")
        .scenario
}

fn require_root() {
    assert!(
        netns::check_privileges().is_ok(),
        "these tests need root, ip and /dev/net/tun (CI runs them as root)"
    );
}

fn links_of(ns: &str) -> String {
    let out = Command::new("ip")
        .args(["-n", ns, "-o", "link"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A ping and an HTTP download from the namespace behind host a to the one behind host b cross
/// the emulated hop: the ping's RTT is at least the hop's 200 ms and below one more round trip,
/// the file arrives byte for byte, and the server sees the client's own address. The attached
/// namespaces and a process in one of them outlive the run; the TUN devices do not.
#[test]
fn lans_behind_two_attached_router_namespaces_reach_each_other() {
    let _serial = SERIAL.lock();
    require_root();
    let topo = Topology::up("p");
    let (c, a, b, s) = (topo.ns("c"), topo.ns("a"), topo.ns("b"), topo.ns("s"));
    let dir = tempfile::tempdir().unwrap();
    let www = dir.path().join("www");
    std::fs::create_dir(&www).unwrap();
    let blob: Vec<u8> = (0..300_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    std::fs::write(www.join("blob"), &blob).unwrap();
    let http_log = dir.path().join("http.log");
    let mut http = Command::new("ip")
        .args(["netns", "exec", &s, "python3", "-m", "http.server", "8000"])
        .args(["--bind", "0.0.0.0", "-d"])
        .arg(&www)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&http_log).unwrap())
        .spawn()
        .unwrap();
    let mut bystander = Command::new("ip")
        .args(["netns", "exec", &a, "sleep", "300"])
        .spawn()
        .unwrap();

    let got = dir.path().join("got");
    let mut opts = EmuOptions::new(dir.path().join("out"));
    opts.client_on = Some("a".into());
    opts.client = Some(format!(
        "ip netns exec {c} ping -n -c 3 -i 0.3 10.88.2.2 && \
         ip netns exec {c} curl -sS --max-time 20 -o {} http://10.88.2.2:8000/blob",
        got.display()
    ));
    opts.client_delay = Duration::from_millis(1500); // http.server's start
    opts.duration = Some(Duration::from_secs(60));
    opts.realtime = false;
    let device = netns::attached_device();
    let out = satpep_emu::run(&scenario(&a, &b), &opts).unwrap();
    let log = std::fs::read_to_string(&out.client_log).unwrap();
    let _ = http.kill();
    let _ = http.wait();
    assert_eq!(out.summary.client_exit, Some(0), "{log}");

    let rtts: Vec<f64> = log
        .lines()
        .filter_map(|l| l.split("time=").nth(1)?.split(' ').next()?.parse().ok())
        .collect();
    println!("ping RTTs {rtts:?} ms; {} bytes by HTTP", blob.len());
    assert_eq!(rtts.len(), 3, "{log}");
    for rtt in &rtts {
        assert!(
            (200.0..400.0).contains(rtt),
            "RTT {rtt} ms: the hop is 2 × 100 ms"
        );
    }
    assert!(
        std::fs::read(&got).unwrap() == blob,
        "the file arrived changed"
    );
    let served = std::fs::read_to_string(&http_log).unwrap();
    assert!(
        served.contains("10.88.1.2 - - ") && served.contains("GET /blob"),
        "{served}"
    );
    assert_eq!(out.summary.path.unroutable, 0);
    assert_eq!(out.summary.path.malformed, 0);

    // The namespaces and what runs in them stay; satpep's devices are gone.
    assert!(Path::new(netns::NETNS_DIR).join(&a).exists());
    assert!(Path::new(netns::NETNS_DIR).join(&b).exists());
    assert!(
        bystander.try_wait().unwrap().is_none(),
        "a process of {a} was killed"
    );
    for ns in [&a, &b] {
        let links = links_of(ns);
        assert!(!links.contains(&device), "{device} left in {ns}: {links}");
        assert!(links.contains("lan0"), "{links}");
    }
    let _ = bystander.kill();
    let _ = bystander.wait();
}

/// A `netns` that does not exist is refused before anything is made: a scenario error (exit
/// code 2) that names the host and the namespace.
#[test]
fn a_missing_namespace_is_refused_before_anything_is_made() {
    let _serial = SERIAL.lock();
    require_root();
    let missing = format!("sub{}-missing", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let mut opts = EmuOptions::new(dir.path());
    opts.duration = Some(Duration::from_secs(2));
    let e = satpep_emu::run(&scenario("sub-nowhere-a", &missing), &opts).unwrap_err();
    assert!(matches!(e, EmuError::Scenario(_)), "{e}");
    assert_eq!(e.exit_code(), 2);
    let msg = e.to_string();
    assert!(
        msg.contains("host `a`") && msg.contains("`sub-nowhere-a` does not exist"),
        "{msg}"
    );
    assert!(netns::list(&format!("satpep-{}-", std::process::id())).is_empty());
}

/// `satpep shell` renumbers hosts into its own block and tunnels what it does not know: it
/// refuses `subnets` and `netns` instead of misrouting them.
#[test]
fn a_shell_refuses_subnets_and_netns() {
    let _serial = SERIAL.lock();
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let mut opts = EmuOptions::new(dir.path());
    opts.shell = Some(vec!["true".into()]);
    opts.outputs = false;
    let e = satpep_emu::run(&scenario("sub-x-a", "sub-x-b"), &opts).unwrap_err();
    assert_eq!(e.exit_code(), 2, "{e}");
    assert!(e.to_string().contains("not in `satpep shell`"), "{e}");
}
