//! IGMP version 2 (RFC 2236) group membership, both sides, sans-IO.
//!
//! Read before editing: RFC 2236 §3 (a member answers a query after a random delay up to the
//! query's Max Response Time, and keeps quiet when it hears another member report first), §6
//! (host state: Non-Member, Delaying Member, Idle Member; the "last reporter" flag that decides
//! whether a Leave is sent), §7 (router state per group and interface; the Group Membership
//! Interval; Last Member Queries after a Leave), §8 (the timer values, all configurable); RFC
//! 4605 (a proxy: querier on its downstream interfaces, a member on its upstream one).
//!
//! [`Member`] is the host side, also the upstream half of a proxy. [`Querier`] is the router
//! side on a set of ports. Neither owns a clock: every call takes `now`, [`Member::poll_timeout`]
//! and [`Querier::poll_timeout`] say when to call again, and what they want sent is polled as
//! messages (the caller builds the packets and routes them).

use std::collections::{BTreeMap, VecDeque};
use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::rand::Rng;
use crate::wire::igmp::{IgmpMessage, ALL_ROUTERS, ALL_SYSTEMS};
use crate::{Duration, Instant, PortId};

/// The configurable values of RFC 2236 §8, with its defaults.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct IgmpTimers {
    /// Robustness Variable: expected packet loss, and how often a router repeats startup and
    /// last member queries and a host its unsolicited reports. Default 2.
    pub robustness: u8,
    /// Query Interval between general queries. Default `"125s"`.
    pub query_interval: Duration,
    /// Query Response Interval: the Max Response Time of general queries. Default `"10s"`.
    pub query_response_interval: Duration,
    /// Last Member Query Interval: Max Response Time of group-specific queries, and their
    /// spacing. Default `"1s"`.
    pub last_member_query_interval: Duration,
    /// Unsolicited Report Interval: longest delay before a new member repeats its report.
    /// Default `"10s"`.
    pub unsolicited_report_interval: Duration,
}

impl Default for IgmpTimers {
    fn default() -> Self {
        Self {
            robustness: 2,
            query_interval: Duration::from_secs(125),
            query_response_interval: Duration::from_secs(10),
            last_member_query_interval: Duration::from_secs(1),
            unsolicited_report_interval: Duration::from_secs(10),
        }
    }
}

impl IgmpTimers {
    /// Group Membership Interval: robustness × query interval + query response interval
    /// (260 s by default). A membership no report refreshes for this long expires.
    pub fn group_membership_interval(&self) -> Duration {
        self.query_interval
            .saturating_mul(u64::from(self.robustness))
            + self.query_response_interval
    }

    /// Startup Query Interval: a quarter of the query interval.
    pub fn startup_query_interval(&self) -> Duration {
        Duration::from_nanos(self.query_interval.as_nanos() / 4)
    }

    /// Last Member Query Count (= robustness): queries sent after a Leave before the group
    /// is dropped from the port.
    pub fn last_member_query_count(&self) -> u8 {
        self.robustness
    }

    /// Check values a scenario could get wrong; the message starts with the key.
    pub fn validate(&self) -> Result<(), String> {
        if self.robustness == 0 {
            return Err("robustness: must be at least 1 (RFC 2236 §8.1)".into());
        }
        if self.query_interval == Duration::ZERO {
            return Err("query_interval: must be above 0".into());
        }
        if self.query_response_interval >= self.query_interval {
            return Err(
                "query_response_interval: must be below query_interval (RFC 2236 §8.3)".into(),
            );
        }
        if self.query_response_interval > Duration::from_millis(25_500)
            || self.last_member_query_interval > Duration::from_millis(25_500)
        {
            return Err(
                "query_response_interval: a Max Response Time above 25.5 s cannot \
                        be coded in IGMPv2"
                    .into(),
            );
        }
        if self.last_member_query_interval == Duration::ZERO {
            return Err("last_member_query_interval: must be above 0".into());
        }
        Ok(())
    }
}

/// One group a [`Member`] belongs to.
#[derive(Clone, Copy, Debug)]
struct Joined {
    /// Delaying Member: a report is due then.
    report_at: Option<Instant>,
    /// Unsolicited repetitions still to send after the one pending.
    repeats: u8,
    /// This host sent the last report heard on the link (RFC 2236 §6: only then a Leave).
    last_reporter: bool,
}

/// Counters of a member.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemberStats {
    /// Membership reports sent (unsolicited and answers).
    pub reports_sent: u64,
    /// Leave Group messages sent.
    pub leaves_sent: u64,
    /// Queries received.
    pub queries_received: u64,
    /// Reports not sent because another member's was heard first.
    pub reports_suppressed: u64,
}

/// The host side of IGMPv2 (RFC 2236 §3, §6) for the groups this end belongs to.
#[derive(Clone, Debug)]
pub struct Member {
    timers: IgmpTimers,
    groups: BTreeMap<Ipv4Addr, Joined>,
    out: VecDeque<(Ipv4Addr, IgmpMessage)>,
    rng: Rng,
    stats: MemberStats,
}

impl Member {
    /// A member with `timers`; `rng` draws the report delays (seeded per component).
    pub fn new(timers: IgmpTimers, rng: Rng) -> Self {
        Self {
            timers,
            groups: BTreeMap::new(),
            out: VecDeque::new(),
            rng,
            stats: MemberStats::default(),
        }
    }

    /// A random delay in [0, `max`], at the model's nanosecond resolution.
    fn delay(&mut self, max: Duration) -> Duration {
        Duration::from_nanos(self.rng.next_u64() % (max.as_nanos() + 1))
    }

    fn report(&mut self, group: Ipv4Addr) {
        self.out.push_back((group, IgmpMessage::Report { group }));
        self.stats.reports_sent += 1;
    }

    /// Join `group`: report at once and repeat `robustness − 1` times, each after a random
    /// delay up to the Unsolicited Report Interval (RFC 2236 §3). Joining again is a no-op.
    pub fn join(&mut self, now: Instant, group: Ipv4Addr) {
        if self.groups.contains_key(&group) {
            return;
        }
        self.report(group);
        let repeats = self.timers.robustness.saturating_sub(1);
        let report_at = if repeats > 0 {
            Some(now + self.delay(self.timers.unsolicited_report_interval))
        } else {
            None
        };
        self.groups.insert(
            group,
            Joined {
                report_at,
                repeats: repeats.saturating_sub(1),
                last_reporter: true,
            },
        );
    }

    /// Leave `group`: a Leave to all routers if this end sent the last report (RFC 2236 §6).
    pub fn leave(&mut self, group: Ipv4Addr) {
        if let Some(j) = self.groups.remove(&group) {
            if j.last_reporter {
                self.out
                    .push_back((ALL_ROUTERS, IgmpMessage::Leave { group }));
                self.stats.leaves_sent += 1;
            }
        }
    }

    /// A query arrived: answer for the groups it asks about after a random delay up to its
    /// Max Response Time, unless a report is already due sooner (RFC 2236 §3).
    pub fn on_query(&mut self, now: Instant, group: Ipv4Addr, max_response: Duration) {
        self.stats.queries_received += 1;
        let general = group.is_unspecified();
        let asked: Vec<Ipv4Addr> = if general {
            self.groups.keys().copied().collect()
        } else if self.groups.contains_key(&group) {
            vec![group]
        } else {
            Vec::new()
        };
        for g in asked {
            let at = now + self.delay(max_response);
            if let Some(j) = self.groups.get_mut(&g) {
                if j.report_at.is_none_or(|t| at < t) {
                    j.report_at = Some(at);
                }
            }
        }
    }

    /// Another member's report for `group` was heard: ours would say nothing new.
    pub fn on_report_heard(&mut self, group: Ipv4Addr) {
        if let Some(j) = self.groups.get_mut(&group) {
            if j.report_at.take().is_some() {
                self.stats.reports_suppressed += 1;
            }
            j.repeats = 0;
            j.last_reporter = false;
        }
    }

    /// Send the reports that are due.
    pub fn handle_timeout(&mut self, now: Instant) {
        let due: Vec<Ipv4Addr> = (self.groups.iter())
            .filter(|(_, j)| j.report_at.is_some_and(|t| t <= now))
            .map(|(&g, _)| g)
            .collect();
        for g in due {
            self.report(g);
            let max = self.timers.unsolicited_report_interval;
            let next = now + self.delay(max);
            if let Some(j) = self.groups.get_mut(&g) {
                j.last_reporter = true;
                if j.repeats > 0 {
                    j.repeats -= 1;
                    j.report_at = Some(next);
                } else {
                    j.report_at = None;
                }
            }
        }
    }

    /// When [`Member::handle_timeout`] has a report to send.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.groups.values().filter_map(|j| j.report_at).min()
    }

    /// Next message to send: (IPv4 destination, message).
    pub fn poll_message(&mut self) -> Option<(Ipv4Addr, IgmpMessage)> {
        self.out.pop_front()
    }

    /// Whether this end belongs to `group`.
    pub fn is_member(&self, group: Ipv4Addr) -> bool {
        self.groups.contains_key(&group)
    }

    /// Counters.
    pub fn stats(&self) -> MemberStats {
        self.stats
    }
}

/// A group's state on one port of a [`Querier`] (RFC 2236 §7: "Members Present", or
/// "Checking Membership" while last member queries run).
#[derive(Clone, Copy, Debug)]
struct Membership {
    expires: Instant,
    /// Checking Membership: the next group-specific query and how many remain.
    checking: Option<(Instant, u8)>,
}

/// A change in which ports want a group.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub struct MembershipChange {
    /// When.
    pub at: Instant,
    /// The group.
    pub group: Ipv4Addr,
    /// The port.
    pub port: PortId,
    /// Members present from now on (`false`: the last one left or timed out).
    pub present: bool,
}

/// Counters of a querier.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuerierStats {
    /// General queries sent (one per port).
    pub general_queries_sent: u64,
    /// Group-specific queries sent after Leaves.
    pub group_queries_sent: u64,
    /// Reports received on a querying port.
    pub reports_received: u64,
    /// Leaves received on a querying port.
    pub leaves_received: u64,
    /// Memberships that ended because no report refreshed them (Leave unanswered included).
    pub memberships_expired: u64,
}

/// The router side of IGMPv2 on `ports` (RFC 2236 §7, this router always the querier).
#[derive(Clone, Debug)]
pub struct Querier {
    timers: IgmpTimers,
    ports: Vec<PortId>,
    members: BTreeMap<(Ipv4Addr, PortId), Membership>,
    next_general: Instant,
    startup_left: u8,
    out: VecDeque<(PortId, Ipv4Addr, IgmpMessage)>,
    changes: VecDeque<MembershipChange>,
    stats: QuerierStats,
}

impl Querier {
    /// A querier on `ports`: its first general query goes out at `start`, then
    /// `robustness − 1` more at the Startup Query Interval, then one per Query Interval.
    pub fn new(timers: IgmpTimers, ports: Vec<PortId>, start: Instant) -> Self {
        Self {
            timers,
            ports,
            members: BTreeMap::new(),
            next_general: start,
            startup_left: timers.robustness,
            out: VecDeque::new(),
            changes: VecDeque::new(),
            stats: QuerierStats::default(),
        }
    }

    /// Whether this querier runs on `port`.
    pub fn serves(&self, port: PortId) -> bool {
        self.ports.contains(&port)
    }

    /// A report for `group` was received for `port`: members are present for another Group
    /// Membership Interval, and any Leave check ends.
    pub fn on_report(&mut self, now: Instant, port: PortId, group: Ipv4Addr) {
        if !self.serves(port) {
            return;
        }
        self.stats.reports_received += 1;
        let expires = now + self.timers.group_membership_interval();
        let m = self.members.insert(
            (group, port),
            Membership {
                expires,
                checking: None,
            },
        );
        if m.is_none() {
            self.changes.push_back(MembershipChange {
                at: now,
                group,
                port,
                present: true,
            });
        }
    }

    /// A Leave for `group` was received for `port`: query the group there at once and
    /// `robustness − 1` more times a Last Member Query Interval apart; unless a report comes,
    /// the membership ends after `robustness` intervals (RFC 2236 §7, "Checking Membership").
    pub fn on_leave(&mut self, now: Instant, port: PortId, group: Ipv4Addr) {
        if !self.serves(port) {
            return;
        }
        self.stats.leaves_received += 1;
        let lmqi = self.timers.last_member_query_interval;
        let count = self.timers.last_member_query_count();
        let Some(m) = self.members.get_mut(&(group, port)) else {
            return;
        };
        if m.checking.is_some() {
            return;
        }
        // A leave only shortens a membership (RFC 2236 §3): one left
        // 1 s before its Group Membership Interval ends still ends then.
        m.expires = m.expires.min(now + lmqi.saturating_mul(u64::from(count)));
        m.checking = (count > 1).then(|| (now + lmqi, count - 1));
        self.send_group_query(port, group);
    }

    fn send_group_query(&mut self, port: PortId, group: Ipv4Addr) {
        let max_response = self.timers.last_member_query_interval;
        let q = IgmpMessage::Query {
            group,
            max_response,
        };
        self.out.push_back((port, group, q));
        self.stats.group_queries_sent += 1;
    }

    /// Send the queries that are due and end the memberships that expired.
    pub fn handle_timeout(&mut self, now: Instant) {
        if self.next_general <= now {
            let q = IgmpMessage::Query {
                group: Ipv4Addr::UNSPECIFIED,
                max_response: self.timers.query_response_interval,
            };
            for &p in &self.ports {
                self.out.push_back((p, ALL_SYSTEMS, q));
                self.stats.general_queries_sent += 1;
            }
            self.startup_left = self.startup_left.saturating_sub(1);
            self.next_general = now
                + if self.startup_left > 0 {
                    self.timers.startup_query_interval()
                } else {
                    self.timers.query_interval
                };
        }
        let lmqi = self.timers.last_member_query_interval;
        let mut queries = Vec::new();
        let mut expired = Vec::new();
        for (&(group, port), m) in self.members.iter_mut() {
            if m.expires <= now {
                expired.push((group, port));
                continue;
            }
            if let Some((at, left)) = m.checking {
                if at <= now {
                    queries.push((port, group));
                    m.checking = (left > 1).then(|| (at + lmqi, left - 1));
                }
            }
        }
        for (port, group) in queries {
            self.send_group_query(port, group);
        }
        for (group, port) in expired {
            self.members.remove(&(group, port));
            self.stats.memberships_expired += 1;
            self.changes.push_back(MembershipChange {
                at: now,
                group,
                port,
                present: false,
            });
        }
    }

    /// When [`Querier::handle_timeout`] has something to do.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = (!self.ports.is_empty()).then_some(self.next_general);
        for m in self.members.values() {
            let due = m.checking.map_or(m.expires, |(at, _)| at.min(m.expires));
            t = Some(t.map_or(due, |t| t.min(due)));
        }
        t
    }

    /// Next query to send: (port, IPv4 destination, message).
    pub fn poll_message(&mut self) -> Option<(PortId, Ipv4Addr, IgmpMessage)> {
        self.out.pop_front()
    }

    /// Next change of membership.
    pub fn poll_change(&mut self) -> Option<MembershipChange> {
        self.changes.pop_front()
    }

    /// Ports with members of `group`, in port order.
    pub fn member_ports(&self, group: Ipv4Addr) -> impl Iterator<Item = PortId> + '_ {
        let lo = (group, PortId(0));
        let hi = (group, PortId(u16::MAX));
        self.members.range(lo..=hi).map(|(&(_, p), _)| p)
    }

    /// Whether any port has members of `group`.
    pub fn has_members(&self, group: Ipv4Addr) -> bool {
        self.member_ports(group).next().is_some()
    }

    /// Counters.
    pub fn stats(&self) -> QuerierStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rand::Rng;
    use proptest::prelude::*;

    const G: Ipv4Addr = Ipv4Addr::new(239, 1, 1, 1);
    const H: Ipv4Addr = Ipv4Addr::new(239, 2, 2, 2);

    fn at(ms: u64) -> Instant {
        Instant::ZERO + Duration::from_millis(ms)
    }

    fn member() -> Member {
        Member::new(IgmpTimers::default(), Rng::new(7, 1))
    }

    fn drain(m: &mut Member) -> Vec<(Ipv4Addr, IgmpMessage)> {
        std::iter::from_fn(|| m.poll_message()).collect()
    }

    #[test]
    fn join_reports_at_once_and_once_more_within_the_unsolicited_interval() {
        let mut m = member();
        m.join(at(1000), G);
        assert_eq!(drain(&mut m), vec![(G, IgmpMessage::Report { group: G })]);
        let again = m.poll_timeout().expect("a repeat is due");
        assert!(again >= at(1000) && again <= at(11_000), "{again:?}");
        m.handle_timeout(again);
        assert_eq!(drain(&mut m), vec![(G, IgmpMessage::Report { group: G })]);
        assert_eq!(m.poll_timeout(), None, "robustness 2: one repeat only");
        m.join(at(20_000), G);
        assert!(drain(&mut m).is_empty(), "joining twice sends nothing");
        assert_eq!(m.stats().reports_sent, 2);
    }

    /// Robustness Variable N: a join sends its report N times in all (RFC 2236 §3, §8.1).
    #[test]
    fn a_join_is_reported_robustness_times() {
        for robustness in [1u8, 2, 3, 4] {
            let timers = IgmpTimers {
                robustness,
                ..IgmpTimers::default()
            };
            let mut m = Member::new(timers, Rng::new(9, 9));
            m.join(at(0), G);
            let mut reports = drain(&mut m).len();
            while let Some(t) = m.poll_timeout() {
                assert!(t <= at(10_000 * u64::from(robustness)), "{t:?}");
                m.handle_timeout(t);
                reports += drain(&mut m).len();
            }
            assert_eq!(reports, usize::from(robustness), "robustness {robustness}");
            assert_eq!(m.stats().reports_sent, u64::from(robustness));
        }
    }

    #[test]
    fn leave_is_sent_only_by_the_last_reporter() {
        let mut m = member();
        m.join(at(0), G);
        m.join(at(0), H);
        drain(&mut m);
        m.on_report_heard(H);
        m.leave(G);
        m.leave(H);
        assert_eq!(
            drain(&mut m),
            vec![(ALL_ROUTERS, IgmpMessage::Leave { group: G })],
            "another member reported H last: its Leave is that member's"
        );
        assert!(!m.is_member(G) && !m.is_member(H));
        assert_eq!(m.poll_timeout(), None);
    }

    #[test]
    fn a_query_is_answered_within_its_max_response_time_and_heard_reports_suppress() {
        let mut m = member();
        m.join(at(0), G);
        m.join(at(0), H);
        m.on_report_heard(G);
        m.on_report_heard(H);
        drain(&mut m);
        assert_eq!(m.poll_timeout(), None);
        m.on_query(at(50_000), Ipv4Addr::UNSPECIFIED, Duration::from_secs(10));
        let due = m.poll_timeout().expect("answers due");
        assert!(due >= at(50_000) && due <= at(60_000));
        // Another member answers H first: only G's report goes out.
        m.on_report_heard(H);
        m.handle_timeout(at(60_000));
        assert_eq!(drain(&mut m), vec![(G, IgmpMessage::Report { group: G })]);
        assert_eq!(m.stats().reports_suppressed, 3);
        assert_eq!(m.stats().queries_received, 1);
        // A group-specific query for a group we are not in is ignored.
        m.on_query(
            at(70_000),
            Ipv4Addr::new(239, 9, 9, 9),
            Duration::from_secs(1),
        );
        assert_eq!(m.poll_timeout(), None);
        // A query with a shorter deadline than the pending report brings it forward only.
        m.on_query(at(80_000), G, Duration::from_secs(10));
        let first = m.poll_timeout().expect("pending");
        m.on_query(at(80_000), G, Duration::ZERO);
        assert_eq!(m.poll_timeout(), Some(at(80_000)));
        m.on_query(at(80_000), G, Duration::from_secs(10));
        assert_eq!(
            m.poll_timeout(),
            Some(at(80_000)),
            "a later deadline never delays"
        );
        assert!(first >= at(80_000));
    }

    fn querier() -> Querier {
        Querier::new(IgmpTimers::default(), vec![PortId(1), PortId(2)], at(0))
    }

    fn queries(q: &mut Querier) -> Vec<(PortId, Ipv4Addr, IgmpMessage)> {
        std::iter::from_fn(|| q.poll_message()).collect()
    }

    #[test]
    fn repeated_reports_are_spread_uniformly_over_the_unsolicited_interval() {
        let mut m = member();
        let groups: Vec<Ipv4Addr> = (0..200u8).map(|i| Ipv4Addr::new(239, 9, 0, i)).collect();
        for &g in &groups {
            m.join(at(0), g);
        }
        drain(&mut m);
        let mut times = Vec::new();
        while let Some(t) = m.poll_timeout() {
            m.handle_timeout(t);
            for _ in drain(&mut m) {
                times.push(t.as_nanos() as f64 / 1e9);
            }
        }
        assert_eq!(times.len(), 200, "one repeat per group");
        assert!(times.iter().all(|&t| (0.0..=10.0).contains(&t)));
        let mean = times.iter().sum::<f64>() / 200.0;
        // Uniform on [0, 10 s]: mean 5 s, standard error 0.2 s.
        assert!((4.2..5.8).contains(&mean), "mean delay {mean} s");
        let distinct: std::collections::BTreeSet<u64> =
            times.iter().map(|t| (t * 1e6) as u64).collect();
        assert!(distinct.len() > 190);
    }

    #[test]
    fn general_queries_start_fast_then_every_query_interval() {
        let mut q = querier();
        let mut times = Vec::new();
        for _ in 0..4 {
            let t = q.poll_timeout().expect("queries never stop");
            q.handle_timeout(t);
            let sent = queries(&mut q);
            assert_eq!(sent.len(), 2, "one per port");
            assert!(sent.iter().all(|(_, dst, m)| *dst == ALL_SYSTEMS
                && *m
                    == IgmpMessage::Query {
                        group: Ipv4Addr::UNSPECIFIED,
                        max_response: Duration::from_secs(10)
                    }));
            times.push(t);
        }
        // Startup: 0, then 31.25 s (startup count 2), then 125 s apart.
        assert_eq!(times, vec![at(0), at(31_250), at(156_250), at(281_250)]);
        assert_eq!(q.stats().general_queries_sent, 8);
        assert_eq!(q.stats().group_queries_sent, 0);
    }

    #[test]
    fn a_report_makes_members_present_for_the_group_membership_interval() {
        let mut q = querier();
        q.on_report(at(5_000), PortId(1), G);
        q.on_report(at(5_000), PortId(9), G);
        assert_eq!(q.member_ports(G).collect::<Vec<_>>(), vec![PortId(1)]);
        assert_eq!(
            q.poll_change(),
            Some(MembershipChange {
                at: at(5_000),
                group: G,
                port: PortId(1),
                present: true
            })
        );
        // Refreshed at 100 s: expires 260 s later, not before.
        q.on_report(at(100_000), PortId(1), G);
        assert_eq!(q.poll_change(), None, "a refresh changes nothing");
        q.handle_timeout(at(359_999));
        assert!(q.has_members(G));
        q.handle_timeout(at(360_000));
        assert!(!q.has_members(G));
        assert_eq!(
            q.poll_change().map(|c| (c.at, c.present)),
            Some((at(360_000), false))
        );
        assert_eq!(q.stats().memberships_expired, 1);
    }

    #[test]
    fn a_leave_ends_the_membership_after_two_unanswered_group_queries() {
        let mut q = querier();
        q.handle_timeout(at(0));
        queries(&mut q);
        q.on_report(at(1_000), PortId(2), G);
        q.on_report(at(1_000), PortId(1), G);
        q.on_leave(at(10_000), PortId(2), G);
        let gq = IgmpMessage::Query {
            group: G,
            max_response: Duration::from_secs(1),
        };
        assert_eq!(queries(&mut q), vec![(PortId(2), G, gq)]);
        q.on_leave(at(10_500), PortId(2), G);
        assert!(queries(&mut q).is_empty(), "one check at a time");
        assert_eq!(q.poll_timeout(), Some(at(11_000)));
        q.handle_timeout(at(11_000));
        assert_eq!(queries(&mut q), vec![(PortId(2), G, gq)]);
        q.handle_timeout(at(11_999));
        assert_eq!(q.member_ports(G).count(), 2);
        q.handle_timeout(at(12_000));
        assert_eq!(q.member_ports(G).collect::<Vec<_>>(), vec![PortId(1)]);
        assert!(queries(&mut q).is_empty(), "no third query");
        assert_eq!(q.stats().group_queries_sent, 2);
        assert_eq!(q.stats().leaves_received, 2);
        // A Leave answered by a report keeps the members.
        q.on_leave(at(20_000), PortId(1), G);
        q.on_report(at(20_400), PortId(1), G);
        q.handle_timeout(at(25_000));
        assert!(q.has_members(G));
        assert_eq!(queries(&mut q).len(), 1, "the check stopped at the report");
        // A Leave for a group without members on the port sends nothing.
        q.on_leave(at(30_000), PortId(2), G);
        assert!(queries(&mut q).is_empty());
    }

    #[test]
    fn a_leave_never_lengthens_a_membership() {
        // Reported at 0 s, so it ends at 260 s; a Leave at 259.5 s must not
        // stretch it to 259.5 + 2 s (found by the property below in CI).
        let mut q = querier();
        q.on_report(at(0), PortId(2), G);
        q.on_leave(at(259_500), PortId(2), G);
        q.handle_timeout(at(259_999));
        assert!(q.has_members(G));
        q.handle_timeout(at(260_000));
        assert!(!q.has_members(G));
        assert_eq!(q.stats().memberships_expired, 1);
    }

    #[test]
    fn timer_values_follow_rfc_2236_section_8() {
        let t = IgmpTimers::default();
        assert_eq!(t.group_membership_interval(), Duration::from_secs(260));
        assert_eq!(t.startup_query_interval(), Duration::from_millis(31_250));
        assert_eq!(t.last_member_query_count(), 2);
        assert!(t.validate().is_ok());
        let bad = |f: fn(&mut IgmpTimers)| {
            let mut t = IgmpTimers::default();
            f(&mut t);
            t.validate().expect_err("refused")
        };
        assert!(bad(|t| t.robustness = 0).starts_with("robustness"));
        assert!(
            bad(|t| t.query_response_interval = Duration::from_secs(125))
                .starts_with("query_response_interval")
        );
        assert!(bad(|t| t.query_interval = Duration::ZERO).starts_with("query_interval"));
        assert!(bad(|t| t.last_member_query_interval = Duration::ZERO)
            .starts_with("last_member_query_interval"));
        assert!(bad(|t| t.last_member_query_interval = Duration::from_secs(26)).contains("25.5 s"));
        assert!(
            bad(|t| t.query_response_interval = Duration::from_millis(25_600)).contains("25.5")
        );
        // 25.5 s is the largest Max Response Time IGMPv2 codes (255 tenths): accepted.
        let edge = IgmpTimers {
            query_response_interval: Duration::from_millis(25_500),
            last_member_query_interval: Duration::from_millis(25_500),
            ..IgmpTimers::default()
        };
        assert!(edge.validate().is_ok());
    }

    proptest! {
        /// Joins, leaves, queries and heard reports in any order: a member reports only groups
        /// it belongs to, sends Leaves only for groups it left, and its deadline is never in
        /// the past of the last call.
        #[test]
        fn a_member_only_speaks_for_its_groups(
            ops in proptest::collection::vec((0u8..5, 0u8..3, 0u64..30_000), 1..60),
        ) {
            let mut m = member();
            let mut now = at(0);
            let groups = [G, H, Ipv4Addr::new(239, 3, 3, 3)];
            for (op, g, dt) in ops {
                now += Duration::from_millis(dt);
                if m.poll_timeout().is_some_and(|t| t <= now) {
                    m.handle_timeout(now);
                    prop_assert!(m.poll_timeout().is_none_or(|t| t > now), "all due handled");
                    while let Some((dst, msg)) = m.poll_message() {
                        let IgmpMessage::Report { group: r } = msg else {
                            prop_assert!(false, "a timer sent {:?}", msg);
                            continue;
                        };
                        prop_assert_eq!(dst, r);
                        prop_assert!(m.is_member(r));
                    }
                }
                let group = groups[usize::from(g)];
                let was = m.is_member(group);
                match op {
                    0 => m.join(now, group),
                    1 => m.leave(group),
                    2 => m.on_query(now, Ipv4Addr::UNSPECIFIED, Duration::from_secs(10)),
                    3 => m.on_query(now, group, Duration::from_secs(1)),
                    _ => m.on_report_heard(group),
                }
                while let Some((dst, msg)) = m.poll_message() {
                    match msg {
                        IgmpMessage::Report { group: r } => {
                            prop_assert!(op == 0 && r == group && !was);
                            prop_assert_eq!(dst, r);
                            prop_assert!(m.is_member(r));
                        }
                        IgmpMessage::Leave { group: l } => {
                            prop_assert_eq!(dst, ALL_ROUTERS);
                            prop_assert!(op == 1 && l == group && was && !m.is_member(l));
                        }
                        IgmpMessage::Query { .. } => prop_assert!(false, "members never query"),
                    }
                }
                prop_assert!(m.poll_timeout().is_none_or(|t| t >= now));
            }
        }

        /// Whatever reports and leaves arrive, a querier's membership on a port ends no later
        /// than a Group Membership Interval after that port's last report, and every change it
        /// reports alternates present / absent per (group, port).
        #[test]
        fn querier_memberships_are_bounded_by_the_last_report(
            ops in proptest::collection::vec((any::<bool>(), 0u16..3, 0u64..200_000), 1..40),
        ) {
            let mut q = querier();
            let mut now = at(0);
            let mut last_report: BTreeMap<PortId, Instant> = BTreeMap::new();
            let mut present: BTreeMap<PortId, bool> = BTreeMap::new();
            for (report, port, dt) in ops {
                let port = PortId(port);
                let end = now + Duration::from_millis(dt);
                while let Some(t) = q.poll_timeout().filter(|&t| t <= end) {
                    q.handle_timeout(t);
                }
                now = end;
                if report {
                    q.on_report(now, port, G);
                    if q.serves(port) {
                        last_report.insert(port, now);
                    }
                } else {
                    q.on_leave(now, port, G);
                }
                while let Some(c) = q.poll_change() {
                    let was = present.insert(c.port, c.present).unwrap_or(false);
                    prop_assert_ne!(was, c.present);
                }
                for p in q.member_ports(G) {
                    let last = last_report.get(&p).copied();
                    prop_assert!(last.is_some_and(|l| now <= l + Duration::from_secs(260)));
                }
            }
        }
    }
}
