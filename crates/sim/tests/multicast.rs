//! Paper 001's multicast extension, end to end in the simulator: IGMP joins over the dial-up
//! make the gateway put the group on the satellite; a terminal forwards it to its LAN only
//! while a client there is a member; the last leave takes it off the satellite.

use satpep_sim::experiments::arora::{run_multicast, MulticastOutcome};

/// One datagram every 16 ms: 1000 payload bytes at 500 kb/s.
const PERIOD_S: f64 = 0.016;
/// A report or leave over a 28.8 kb/s dial-up: 32 bytes, plus 150 ms.
const DIALUP_S: f64 = 32.0 * 8.0 / 28_800.0 + 0.150;
/// A 1028-byte datagram over the 1 Mb/s, 250 ms satellite.
const SATELLITE_S: f64 = 1028.0 * 8.0 / 1e6 + 0.250;

fn counter(o: &MulticastOutcome, node: &str, k: &str) -> u64 {
    let r = o.summary.multicast_routers.iter().find(|r| r.node == node);
    r.and_then(|r| r.counters.get(k).copied())
        .unwrap_or_else(|| panic!("{node}: no counter {k}"))
}

fn receipt(o: &MulticastOutcome, node: &str) -> (u64, f64, f64) {
    let g = (o.summary.groups.iter().find(|g| g.node == node)).expect("the host's group");
    assert_eq!(g.group, "239.1.1.1");
    (
        g.packets,
        g.first_s.expect("received some"),
        g.last_s.expect("received some"),
    )
}

#[test]
fn a_join_over_the_dial_up_brings_the_group_and_the_last_leave_takes_it_off_the_satellite() {
    let o = run_multicast(&[]).expect("runs");
    // c1 is the first member: its report crosses the LAN (1 ms) and the dial-up; the next
    // datagram then crosses the satellite and the LAN. Within one sending period of that.
    let (n1, first1, last1) = receipt(&o, "c1");
    let earliest = 10.0 + 0.001 + DIALUP_S + SATELLITE_S + 0.001;
    assert!(
        first1 >= earliest && first1 <= earliest + PERIOD_S + 0.025,
        "c1's first datagram at {first1} s, earliest {earliest} s"
    );
    // Every datagram from the first to the leave, none lost, none after.
    assert!(last1 < 60.0 && last1 > 60.0 - PERIOD_S);
    assert_eq!(n1, ((last1 - first1) / PERIOD_S).round() as u64 + 1);
    // c2 joins a group its terminal already hears on the channel: no satellite round trip.
    let (n2, first2, last2) = receipt(&o, "c2");
    assert!(
        first2 > 30.0 && first2 < 30.0 + PERIOD_S + 0.002,
        "{first2}"
    );
    assert!(last2 < 80.0 && last2 > 80.0 - PERIOD_S);
    assert_eq!(n2, ((last2 - first2) / PERIOD_S).round() as u64 + 1);
    // Each terminal goes on forwarding for two last-member queries (2 × 1 s) after its
    // client's leave, then stops.
    for (term, n) in [("t1", n1), ("t2", n2)] {
        let extra = counter(&o, term, "copies_sent") - n;
        assert!(
            (124..=126).contains(&extra),
            "{term}: {extra} after the leave"
        );
        assert_eq!(counter(&o, term, "upstream_leaves_sent"), 1);
    }
    // The satellite carries the stream once for both, from c1's join until two last-member
    // query rounds (terminal, then gateway) after c2's leave.
    let (a, b) = o
        .satellite_stream
        .expect("the stream crossed the satellite");
    assert!((10.0..10.6).contains(&a), "stream from {a}");
    let stop = 80.0 + 2.0 + DIALUP_S + 2.0 + SATELLITE_S;
    assert!(
        b >= stop && b <= stop + 0.2,
        "stream until {b}, expected about {stop}"
    );
    let carried = counter(&o, "gw", "copies_sent");
    let carried_s = (carried as f64) * PERIOD_S;
    assert!(
        (carried_s - (84.16 - 10.16)).abs() < 0.1,
        "{carried} datagrams"
    );
    let arrived = counter(&o, "gw", "data_received");
    assert_eq!(carried + counter(&o, "gw", "no_members"), arrived);
    // Sent in the last 21 ms (the MBONE link's delay and serialisation): still on the way.
    assert!(o.sent - arrived <= 2, "{} sent, {arrived} arrived", o.sent);
    assert_eq!(counter(&o, "beam", "copies_sent"), 2 * (carried + 6));
    // The dial-ups carried nothing but 32-byte IGMP messages.
    assert_eq!(o.dialup_igmp.1, 32 * o.dialup_igmp.0);
}

#[test]
fn with_no_member_nothing_but_queries_crosses_the_satellite() {
    let none = [
        "node.c1.groups=[]".to_string(),
        "node.c2.groups=[]".to_string(),
    ];
    let o = run_multicast(&none).expect("runs");
    assert_eq!(o.satellite_stream, None);
    assert_eq!(counter(&o, "gw", "copies_sent"), 0);
    let arrived = counter(&o, "gw", "data_received");
    assert_eq!(counter(&o, "gw", "no_members"), arrived);
    assert!(o.sent - arrived <= 2 && arrived > 6000);
    assert_eq!(o.dialup_igmp, (0, 0), "no report ever goes up");
    assert!(o.summary.groups.is_empty());
}
