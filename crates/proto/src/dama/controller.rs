//! The NCC's DAMA controller: a pure function from the requests that reached it, the
//! superframe's capacity and its own state to a per-ST allocation plan and a new state.
//!
//! Order (the usual DVB-RCS priority, and the paper's): **CRA → RBDC → VBDC → FCA**.
//!
//! 1. **CRA**: each ST's configured constant rate, in ST order (if the configuration
//!    oversubscribes the carrier, later STs get less; the scenario loader rejects that case for
//!    homogeneous terminals).
//! 2. **RBDC**: the ST's latest rate request (kept until replaced: a lost request leaves the
//!    previous rate in force), capped by its RBDC maximum and its overall maximum. When the
//!    demands fit, each gets its demand; when they do not, the capacity left is shared by
//!    [`ShareRule`]: `proportional` (to the demand, with the fractional part of each share
//!    carried over as credit to the next superframe, so that over time every ST gets its exact
//!    share) or `max_min` (water-filling one slot at a time, rotating the starting ST).
//! 3. **VBDC**: requests add to the ST's outstanding volume (AVBDC requests replace it); each
//!    ST gets up to min(volume, VBDC maximum, room under its maximum); the volume is decremented
//!    by what is granted. Contention is resolved by the same [`ShareRule`] (`proportional` to the
//!    outstanding volume, or `max_min`).
//! 4. **FCA**: slots still free go to FCA-eligible STs, one at a time round-robin from a
//!    rotating start, up to each ST's maximum ([`FcaPolicy::RoundRobin`]), or stay empty
//!    ([`FcaPolicy::None`], the paper's setting).
//!
//! Invariants (property-tested): the plan never exceeds the capacity; every CRA is honoured
//! when the CRA sum fits; RBDC ≤ RBDC maximum; VBDC ≤ outstanding volume; the same input gives
//! the same plan.

use serde::{Deserialize, Serialize};

/// How contended capacity is shared among STs (RBDC and VBDC); the standard leaves it open.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ShareRule {
    /// In proportion to each ST's demand, fractions carried over as credit.
    #[default]
    Proportional,
    /// Max-min fair: one slot at a time to every ST still wanting, rotating the starting ST.
    MaxMin,
}

/// What happens to slots no request claimed.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FcaPolicy {
    /// Left empty (the paper leaves FCA out).
    #[default]
    None,
    /// Handed out one at a time, round-robin, to FCA-eligible STs.
    RoundRobin,
}

/// NCC algorithm choices, `[dama.controller]` in a scenario.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct ControllerConfig {
    /// Sharing of contended RBDC capacity. Default: `"proportional"`.
    pub rbdc_share: ShareRule,
    /// Sharing of contended VBDC capacity. Default: `"proportional"`.
    pub vbdc_share: ShareRule,
    /// Free capacity assignment. Default: `"none"`.
    pub fca: FcaPolicy,
}

/// One ST's configured limits, slots per superframe.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct TerminalLimits {
    /// Most slots in all.
    pub max: u32,
    /// Constant rate assignment.
    pub cra: u32,
    /// RBDC maximum.
    pub rbdc_max: u32,
    /// Most VBDC slots in one superframe.
    pub vbdc_max: u32,
    /// Eligible for FCA.
    pub fca: bool,
}

/// One ST's request message as it reached the NCC.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct Request {
    /// RBDC rate, slots per superframe (replaces the previous rate).
    pub rbdc: u32,
    /// VBDC volume, slots (added to the outstanding volume, or replacing it when `absolute`).
    pub vbdc: u32,
    /// AVBDC: `vbdc` is the whole backlog.
    pub absolute: bool,
}

/// Slots granted to one ST for one superframe, by category.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct Allocation {
    /// Constant rate assignment.
    pub cra: u32,
    /// Rate-based dynamic capacity.
    pub rbdc: u32,
    /// Volume-based dynamic capacity.
    pub vbdc: u32,
    /// Free capacity assignment.
    pub fca: u32,
}

impl Allocation {
    /// All slots of the ST in this superframe.
    pub fn total(&self) -> u32 {
        self.cra + self.rbdc + self.vbdc + self.fca
    }
}

/// What the NCC remembers between superframes, per ST and overall.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ControllerState {
    /// Latest RBDC rate request, slots per superframe.
    pub rbdc_rate: Vec<u32>,
    /// Fractional RBDC share carried over (proportional sharing), slots.
    pub rbdc_credit: Vec<f64>,
    /// Outstanding VBDC volume, slots.
    pub vbdc_volume: Vec<u64>,
    /// Fractional VBDC share carried over, slots.
    pub vbdc_credit: Vec<f64>,
    /// Starting ST of the next max-min or FCA round: the one after the last ST a round
    /// served, so that when there are more STs than slots every ST is reached in turn.
    pub rotate: usize,
}

impl ControllerState {
    /// Fresh state for `n` STs.
    pub fn new(n: usize) -> Self {
        Self {
            rbdc_rate: vec![0; n],
            rbdc_credit: vec![0.0; n],
            vbdc_volume: vec![0; n],
            vbdc_credit: vec![0.0; n],
            rotate: 0,
        }
    }
}

/// Run the controller for one superframe of `capacity` slots. `requests[i]` is ST i's request
/// that reached the NCC for this superframe (`None`: none arrived, lost or not sent).
///
/// Panics if the slices and `state` do not all have one entry per ST.
pub fn allocate(
    config: &ControllerConfig,
    limits: &[TerminalLimits],
    requests: &[Option<Request>],
    capacity: u32,
    state: &ControllerState,
) -> (Vec<Allocation>, ControllerState) {
    let n = limits.len();
    assert!(requests.len() == n && state.rbdc_rate.len() == n);
    let mut st = state.clone();
    let mut plan = vec![Allocation::default(); n];
    let mut free = capacity;

    // Requests first: RBDC rates replace, VBDC volumes add (AVBDC replaces).
    for (i, r) in requests.iter().enumerate() {
        let Some(r) = r else { continue };
        st.rbdc_rate[i] = r.rbdc;
        if r.absolute {
            st.vbdc_volume[i] = u64::from(r.vbdc);
        } else {
            st.vbdc_volume[i] = st.vbdc_volume[i].saturating_add(u64::from(r.vbdc));
        }
    }

    // 1. CRA.
    for (i, l) in limits.iter().enumerate() {
        let g = l.cra.min(l.max).min(free);
        plan[i].cra = g;
        free -= g;
    }

    // 2. RBDC.
    let demand: Vec<u32> = (0..n)
        .map(|i| {
            let room = limits[i].max.saturating_sub(plan[i].total());
            st.rbdc_rate[i].min(limits[i].rbdc_max).min(room)
        })
        .collect();
    let mut next_rotate = None;
    let (grants, after) = share(
        config.rbdc_share,
        &demand,
        free,
        &mut st.rbdc_credit,
        st.rotate,
    );
    next_rotate = after.or(next_rotate);
    for (i, g) in grants.into_iter().enumerate() {
        plan[i].rbdc = g;
        free -= g;
    }

    // 3. VBDC.
    let demand: Vec<u32> = (0..n)
        .map(|i| {
            let room = limits[i].max.saturating_sub(plan[i].total());
            let vol = u32::try_from(st.vbdc_volume[i]).unwrap_or(u32::MAX);
            vol.min(limits[i].vbdc_max).min(room)
        })
        .collect();
    let (grants, after) = share(
        config.vbdc_share,
        &demand,
        free,
        &mut st.vbdc_credit,
        next_rotate.unwrap_or(st.rotate),
    );
    next_rotate = after.or(next_rotate);
    for (i, g) in grants.into_iter().enumerate() {
        plan[i].vbdc = g;
        st.vbdc_volume[i] -= u64::from(g);
        free -= g;
    }

    // 4. FCA.
    if config.fca == FcaPolicy::RoundRobin && n > 0 {
        let mut progress = true;
        while free > 0 && progress {
            progress = false;
            for k in 0..n {
                let i = (st.rotate + k) % n;
                if free > 0 && limits[i].fca && plan[i].total() < limits[i].max {
                    plan[i].fca += 1;
                    free -= 1;
                    progress = true;
                    next_rotate = Some((i + 1) % n);
                }
            }
        }
    }

    if n > 0 {
        st.rotate = next_rotate.unwrap_or((st.rotate + 1) % n);
    }
    (plan, st)
}

/// Share `free` slots among `demand`s. Never gives an ST more than its demand, never more than
/// `free` in all; when everything fits, everyone gets its demand and the credits are cleared.
/// Also returns, for a max-min round that ran out of slots, the ST after the last one served.
fn share(
    rule: ShareRule,
    demand: &[u32],
    free: u32,
    credit: &mut [f64],
    rotate: usize,
) -> (Vec<u32>, Option<usize>) {
    let n = demand.len();
    let total: u64 = demand.iter().map(|&d| u64::from(d)).sum();
    if total <= u64::from(free) {
        credit.iter_mut().for_each(|c| *c = 0.0);
        return (demand.to_vec(), None);
    }
    let mut grant = vec![0u32; n];
    let mut left = free;
    let mut after = None;
    match rule {
        ShareRule::Proportional => {
            // Exact share plus carried credit, rounded down; the fraction carries over.
            let scale = f64::from(free) / total as f64;
            let mut want = vec![0.0f64; n];
            for i in 0..n {
                if demand[i] == 0 {
                    credit[i] = 0.0;
                    continue;
                }
                want[i] = f64::from(demand[i]) * scale + credit[i];
                let g = (want[i].floor().max(0.0) as u32).min(demand[i]).min(left);
                grant[i] = g;
                left -= g;
            }
            // Slots lost to rounding: to the largest remaining fractions (ties: lower index).
            let mut order: Vec<usize> = (0..n).filter(|&i| grant[i] < demand[i]).collect();
            order.sort_by(|&a, &b| {
                let fa = want[a] - f64::from(grant[a]);
                let fb = want[b] - f64::from(grant[b]);
                fb.total_cmp(&fa).then(a.cmp(&b))
            });
            for i in order {
                if left == 0 {
                    break;
                }
                grant[i] += 1;
                left -= 1;
            }
            for i in 0..n {
                if demand[i] > 0 {
                    // Keep the credit bounded: at most one slot either way.
                    credit[i] = (want[i] - f64::from(grant[i])).clamp(-1.0, 1.0);
                }
            }
        }
        ShareRule::MaxMin => {
            while left > 0 {
                let mut progress = false;
                for k in 0..n {
                    let i = (rotate + k) % n;
                    if left > 0 && grant[i] < demand[i] {
                        grant[i] += 1;
                        left -= 1;
                        progress = true;
                        after = Some((i + 1) % n);
                    }
                }
                if !progress {
                    break;
                }
            }
        }
    }
    (grant, after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn lim(cra: u32, rbdc_max: u32, vbdc_max: u32) -> TerminalLimits {
        TerminalLimits {
            max: 128,
            cra,
            rbdc_max,
            vbdc_max,
            fca: true,
        }
    }

    fn req(rbdc: u32, vbdc: u32) -> Option<Request> {
        Some(Request {
            rbdc,
            vbdc,
            absolute: false,
        })
    }

    #[test]
    fn order_is_cra_then_rbdc_then_vbdc_then_fca() {
        let cfg = ControllerConfig {
            fca: FcaPolicy::RoundRobin,
            ..ControllerConfig::default()
        };
        let limits = [lim(20, 0, 128), lim(0, 64, 0), lim(0, 0, 128)];
        let reqs = [req(0, 30), req(50, 0), req(0, 100)];
        let (plan, st) = allocate(&cfg, &limits, &reqs, 128, &ControllerState::new(3));
        // CRA 20; RBDC 50; VBDC demands 30 + 100 for 58 slots, proportional: 58·30/130 = 13.38
        // → 13, 58·100/130 = 44.6 → 44, one rounding slot to the larger fraction (ST 2) → 45.
        assert_eq!(
            plan[0],
            Allocation {
                cra: 20,
                rbdc: 0,
                vbdc: 13,
                fca: 0
            }
        );
        assert_eq!(
            plan[1],
            Allocation {
                cra: 0,
                rbdc: 50,
                vbdc: 0,
                fca: 0
            }
        );
        assert_eq!(
            plan[2],
            Allocation {
                cra: 0,
                rbdc: 0,
                vbdc: 45,
                fca: 0
            }
        );
        assert_eq!(st.vbdc_volume, vec![17, 0, 55]);
        // Next superframe with no new requests: volumes 17 + 55 = 72 > 128 − 70? 58 free again
        // → shares with credit; RBDC rate 50 persists.
        let (plan2, _) = allocate(&cfg, &limits, &[None, None, None], 128, &st);
        assert_eq!(plan2[1].rbdc, 50);
        assert_eq!(plan2.iter().map(Allocation::total).sum::<u32>(), 128);
    }

    #[test]
    fn fca_fills_what_requests_leave() {
        let cfg = ControllerConfig {
            fca: FcaPolicy::RoundRobin,
            ..ControllerConfig::default()
        };
        let limits = [lim(4, 0, 0), lim(0, 0, 128)];
        let (plan, _) = allocate(
            &cfg,
            &limits,
            &[None, req(0, 10)],
            128,
            &ControllerState::new(2),
        );
        assert_eq!(plan[0].cra, 4);
        assert_eq!(plan[1].vbdc, 10);
        assert_eq!(plan[0].fca + plan[1].fca, 114);
        assert_eq!(plan[0].fca, 57);
    }

    #[test]
    fn proportional_credit_gives_exact_long_run_shares() {
        // Three STs each wanting 128 slots of 100: 33.33 each; over 3 superframes each gets 100.
        let cfg = ControllerConfig::default();
        let limits = [lim(0, 0, 128); 3];
        let mut st = ControllerState::new(3);
        let mut got = [0u32; 3];
        for _ in 0..3 {
            let (plan, s) = allocate(
                &cfg,
                &limits,
                &[req(0, 128), req(0, 128), req(0, 128)],
                100,
                &st,
            );
            st = s;
            for i in 0..3 {
                got[i] += plan[i].vbdc;
            }
        }
        assert_eq!(got, [100, 100, 100]);
    }

    #[test]
    fn max_min_reaches_every_st_when_there_are_more_sts_than_slots() {
        // 10 STs each wanting 5 slots, 3 slots per superframe: in 10 superframes every ST gets 3.
        let cfg = ControllerConfig {
            vbdc_share: ShareRule::MaxMin,
            ..ControllerConfig::default()
        };
        let limits = [lim(0, 0, 128); 10];
        let mut st = ControllerState::new(10);
        let mut got = [0u32; 10];
        for k in 0..10 {
            let reqs: Vec<Option<Request>> = (0..10)
                .map(|_| if k == 0 { req(0, 5) } else { None })
                .collect();
            let (plan, s) = allocate(&cfg, &limits, &reqs, 3, &st);
            st = s;
            for i in 0..10 {
                got[i] += plan[i].vbdc;
            }
        }
        assert_eq!(got, [3; 10]);
    }

    fn arb_case() -> impl Strategy<
        Value = (
            Vec<TerminalLimits>,
            Vec<Option<Request>>,
            u32,
            bool,
            bool,
            bool,
        ),
    > {
        (1usize..12).prop_flat_map(|n| {
            (
                proptest::collection::vec(
                    (0u32..140, 0u32..60, 0u32..140, 0u32..140, any::<bool>()).prop_map(
                        |(max, cra, rbdc_max, vbdc_max, fca)| TerminalLimits {
                            max,
                            cra,
                            rbdc_max,
                            vbdc_max,
                            fca,
                        },
                    ),
                    n,
                ),
                proptest::collection::vec(
                    proptest::option::of((0u32..200, 0u32..400, any::<bool>()).prop_map(
                        |(rbdc, vbdc, absolute)| Request {
                            rbdc,
                            vbdc,
                            absolute,
                        },
                    )),
                    n,
                ),
                0u32..300,
                any::<bool>(),
                any::<bool>(),
                any::<bool>(),
            )
        })
    }

    proptest! {
        #[test]
        fn controller_invariants_hold_over_many_superframes(
            (limits, requests, capacity, maxmin_r, maxmin_v, fca) in arb_case(),
            rounds in 1usize..6,
        ) {
            let rule = |m| if m { ShareRule::MaxMin } else { ShareRule::Proportional };
            let cfg = ControllerConfig {
                rbdc_share: rule(maxmin_r),
                vbdc_share: rule(maxmin_v),
                fca: if fca { FcaPolicy::RoundRobin } else { FcaPolicy::None },
            };
            let mut state = ControllerState::new(limits.len());
            for round in 0..rounds {
                let reqs: Vec<Option<Request>> = if round == 0 { requests.clone() } else { vec![None; limits.len()] };
                let (plan, next) = allocate(&cfg, &limits, &reqs, capacity, &state);
                // Identical input ⇒ identical plan and state.
                let again = allocate(&cfg, &limits, &reqs, capacity, &state);
                prop_assert_eq!(&again.0, &plan);
                prop_assert_eq!(&again.1, &next);
                let total: u64 = plan.iter().map(|a| u64::from(a.total())).sum();
                prop_assert!(total <= u64::from(capacity), "{} > {}", total, capacity);
                let cra_sum: u64 = limits.iter().map(|l| u64::from(l.cra.min(l.max))).sum();
                for (i, a) in plan.iter().enumerate() {
                    prop_assert!(a.total() <= limits[i].max);
                    if cra_sum <= u64::from(capacity) {
                        prop_assert_eq!(a.cra, limits[i].cra.min(limits[i].max));
                    }
                    prop_assert!(a.rbdc <= limits[i].rbdc_max);
                    prop_assert!(a.vbdc <= limits[i].vbdc_max);
                    // VBDC never exceeds the volume outstanding before this superframe plus
                    // the request that arrived now.
                    let before = match reqs[i] {
                        Some(r) if r.absolute => u64::from(r.vbdc),
                        Some(r) => state.vbdc_volume[i] + u64::from(r.vbdc),
                        None => state.vbdc_volume[i],
                    };
                    prop_assert!(u64::from(a.vbdc) <= before);
                    prop_assert_eq!(next.vbdc_volume[i], before - u64::from(a.vbdc));
                    if !limits[i].fca || !fca {
                        prop_assert_eq!(a.fca, 0);
                    }
                }
                state = next;
            }
        }
    }
}
