//! The satellite terminal's DAMA agent: what it asks the NCC for, every superframe.
//!
//! At the start of superframe k the agent sees its queue (bytes waiting for slots) and the
//! allocation A(k) the NCC granted for this superframe, and sends one request message with:
//!
//! - **RBDC** (eq. 1): R(k) = (1 − γ)·R(k−1) + γ·Q_k, with Q_k the bytes queued and not covered
//!   by this superframe's CRA; the request is ⌈R(k) / slot payload⌉ slots per superframe, capped
//!   by the RBDC maximum. R is kept in bytes (a real number) so that γ < 1 decays smoothly.
//! - **VBDC** (eq. 2): V(k) = [Q′(k) − A(k) − Σ_{j=1}^{L−1} V(k−L+j)]⁺, in slots, with Q′(k)
//!   the queue not covered by this superframe's CRA and RBDC (rounded up to slots), A(k) this
//!   superframe's VBDC and FCA slots, and the sum over the requests of the last L−1 superframes
//!   (sent, not yet granted: the "pending requests").
//! - **AVBDC** instead: [Q′(k) − A(k)]⁺, the whole backlog as an absolute figure, which the NCC
//!   puts in place of the ST's outstanding volume (so a lost request is repaired by the next).
//!
//! CRA needs no request (the NCC knows it from configuration); FCA eligibility is configuration
//! too. Settings are in slots **per frame**, as the paper gives them ("1 CRA + 31 VBDC"); the
//! agent works in slots per superframe (× n_s).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::controller::{Request, TerminalLimits};

/// Whether VBDC requests are cumulative (VBDC) or absolute (AVBDC).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum VbdcMode {
    /// Cumulative requests (eq. 2). The paper's choice.
    #[default]
    Vbdc,
    /// Absolute requests: the whole backlog; the NCC replaces the outstanding volume.
    Avbdc,
}

/// One terminal's DAMA settings, in slots per frame.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
#[non_exhaustive]
pub struct TerminalConfig {
    /// Most slots per frame the ST may get in all. Default: 32 (the whole carrier).
    pub max_slots: u32,
    /// Constant Rate Assignment, slots per frame. Default: 0.
    pub cra_slots: u32,
    /// RBDC maximum, slots per frame; 0 disables RBDC requests. Default: 0.
    pub rbdc_max_slots: u32,
    /// RBDC weight γ in (0, 1] (eq. 1). Default: 0.1.
    pub rbdc_gamma: f64,
    /// Most VBDC slots per frame granted at once; 0 disables VBDC requests. Default: 32.
    pub vbdc_max_slots: u32,
    /// VBDC or AVBDC requests. Default: `"vbdc"`.
    pub vbdc_mode: VbdcMode,
    /// May receive Free Capacity Assignment. Default: false (the paper leaves FCA out).
    pub fca: bool,
}

impl Default for TerminalConfig {
    fn default() -> Self {
        Self {
            max_slots: 32,
            cra_slots: 0,
            rbdc_max_slots: 0,
            rbdc_gamma: 0.1,
            vbdc_max_slots: 32,
            vbdc_mode: VbdcMode::Vbdc,
            fca: false,
        }
    }
}

impl TerminalConfig {
    /// Check the settings against a frame of `slots_per_frame`; the message starts with the key.
    pub fn validate(&self, slots_per_frame: u32) -> Result<(), String> {
        if self.max_slots > slots_per_frame {
            return Err(format!(
                "terminal.max_slots: {} is more than the {slots_per_frame} slots of a frame",
                self.max_slots
            ));
        }
        if self.cra_slots > self.max_slots {
            return Err(format!(
                "terminal.cra_slots: {} is more than max_slots ({})",
                self.cra_slots, self.max_slots
            ));
        }
        if !(self.rbdc_gamma > 0.0 && self.rbdc_gamma <= 1.0) {
            return Err("terminal.rbdc_gamma: must be in (0, 1]".into());
        }
        Ok(())
    }

    /// The limits the NCC applies to this ST, in slots per superframe of `n_s` frames.
    pub fn limits(&self, n_s: u32) -> TerminalLimits {
        TerminalLimits {
            max: self.max_slots.saturating_mul(n_s),
            cra: self.cra_slots.saturating_mul(n_s),
            rbdc_max: self.rbdc_max_slots.saturating_mul(n_s),
            vbdc_max: self.vbdc_max_slots.saturating_mul(n_s),
            fca: self.fca,
        }
    }
}

/// The ST's request state: the RBDC average and the VBDC pending-request window.
#[derive(Clone, Debug)]
pub struct TerminalAgent {
    limits: TerminalLimits,
    gamma: f64,
    mode: VbdcMode,
    slot_payload: u64,
    /// R_RBDC(k−1) in bytes.
    rbdc_avg: f64,
    /// VBDC requests of the last L−1 superframes, oldest first.
    pending: VecDeque<u32>,
    window: usize,
}

impl TerminalAgent {
    /// An agent with settings `config`, `n_s` frames per superframe, slots of `slot_payload`
    /// bytes and a system response time of `l` superframes.
    pub fn new(config: &TerminalConfig, n_s: u32, slot_payload: u32, l: u32) -> Self {
        let window = l.saturating_sub(1) as usize;
        Self {
            limits: config.limits(n_s),
            gamma: config.rbdc_gamma,
            mode: config.vbdc_mode,
            slot_payload: u64::from(slot_payload.max(1)),
            rbdc_avg: 0.0,
            pending: VecDeque::with_capacity(window),
            window,
        }
    }

    /// The limits the NCC applies (slots per superframe).
    pub fn limits(&self) -> TerminalLimits {
        self.limits
    }

    /// The current RBDC average R(k) in bytes.
    pub fn rbdc_average(&self) -> f64 {
        self.rbdc_avg
    }

    /// Sum of the VBDC requests of the last L−1 superframes.
    pub fn pending_sum(&self) -> u64 {
        self.pending.iter().map(|&v| u64::from(v)).sum()
    }

    /// The request for superframe k: `queued` bytes wait, and this superframe the NCC granted
    /// `granted` (per category, slots per superframe).
    pub fn request(&mut self, queued: u64, granted: &super::Allocation) -> Request {
        let p = self.slot_payload;
        let slots_up = |bytes: u64| u32::try_from(bytes.div_ceil(p)).unwrap_or(u32::MAX);
        // RBDC, eq. 1.
        let rbdc = if self.limits.rbdc_max > 0 {
            let q = queued.saturating_sub(u64::from(granted.cra) * p);
            self.rbdc_avg = (1.0 - self.gamma) * self.rbdc_avg + self.gamma * q as f64;
            let slots = (self.rbdc_avg / p as f64).ceil();
            // NOTE: `slots` is finite and ≥ 0; `as` saturates.
            (slots as u32).min(self.limits.rbdc_max)
        } else {
            0
        };
        // VBDC, eq. 2.
        let vbdc = if self.limits.vbdc_max > 0 {
            let served_first = u64::from(granted.cra) + u64::from(granted.rbdc);
            let q_prime = slots_up(queued.saturating_sub(served_first * p));
            let a = granted.vbdc.saturating_add(granted.fca);
            match self.mode {
                VbdcMode::Vbdc => {
                    let pending = u32::try_from(self.pending_sum()).unwrap_or(u32::MAX);
                    q_prime.saturating_sub(a).saturating_sub(pending)
                }
                VbdcMode::Avbdc => q_prime.saturating_sub(a),
            }
        } else {
            0
        };
        if self.window > 0 {
            if self.pending.len() == self.window {
                self.pending.pop_front();
            }
            // AVBDC requests are absolute: nothing of them is "pending" on top of the next one.
            self.pending
                .push_back(if self.mode == VbdcMode::Vbdc { vbdc } else { 0 });
        }
        Request {
            rbdc,
            vbdc,
            absolute: self.mode == VbdcMode::Avbdc && self.limits.vbdc_max > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Allocation;
    use super::*;

    fn cfg(cra: u32, rbdc_max: u32, gamma: f64, vbdc_max: u32) -> TerminalConfig {
        TerminalConfig {
            cra_slots: cra,
            rbdc_max_slots: rbdc_max,
            rbdc_gamma: gamma,
            vbdc_max_slots: vbdc_max,
            ..TerminalConfig::default()
        }
    }

    #[test]
    fn rbdc_follows_eq1_exactly() {
        // γ = 0.5, 100-byte slots, no CRA. Queue 1000, 1000, 0, 0, 400 bytes:
        // R = 500, 750, 375, 187.5, 293.75 → ⌈R/100⌉ = 5, 8, 4, 2, 3 slots.
        let mut a = TerminalAgent::new(&cfg(0, 32, 0.5, 0), 4, 100, 11);
        let none = Allocation::default();
        let mut got = Vec::new();
        let mut avg = Vec::new();
        for q in [1000, 1000, 0, 0, 400] {
            got.push(a.request(q, &none).rbdc);
            avg.push(a.rbdc_average());
        }
        assert_eq!(got, vec![5, 8, 4, 2, 3]);
        assert_eq!(avg, vec![500.0, 750.0, 375.0, 187.5, 293.75]);
    }

    #[test]
    fn rbdc_subtracts_cra_and_respects_its_maximum() {
        // γ = 1: R = queue beyond CRA. CRA 1 slot/frame = 4 slots/SF of 100 B = 400 B.
        // Queue 10 000 B → R = 9 600 B = 96 slots, capped at 2 slots/frame × 4 = 8.
        let mut a = TerminalAgent::new(&cfg(1, 2, 1.0, 0), 4, 100, 11);
        let g = Allocation {
            cra: 4,
            ..Allocation::default()
        };
        let r = a.request(10_000, &g);
        assert_eq!(a.rbdc_average(), 9_600.0);
        assert_eq!(r.rbdc, 8);
        // Queue 450 B, CRA covers 400 → 50 B → 1 slot.
        assert_eq!(a.request(450, &g).rbdc, 1);
    }

    #[test]
    fn vbdc_follows_eq2_with_the_last_l_minus_1_requests_pending() {
        // L = 3: a request sent at k is granted at k + 3; the last 2 requests are pending.
        // 100-byte slots.
        let mut a = TerminalAgent::new(&cfg(0, 0, 0.1, 32), 4, 100, 3);
        let grant = |v| Allocation {
            vbdc: v,
            ..Allocation::default()
        };
        // k=0: Q' = 10 slots, A = 0, pending = 0 → 10.
        assert_eq!(a.request(1000, &grant(0)).vbdc, 10);
        // k=1: 1450 B → Q' = ⌈14.5⌉ = 15, pending = 10 → 5.
        assert_eq!(a.request(1450, &grant(0)).vbdc, 5);
        // k=2: Q' = 15, pending = 10 + 5 → 0.
        assert_eq!(a.request(1500, &grant(0)).vbdc, 0);
        assert_eq!(a.pending_sum(), 5); // window {5, 0}: R(0) is granted at k = 3
                                        // k=3: R(0) granted (A = 10); 2000 B queued = 20 slots; pending = 5 + 0 → 5.
        assert_eq!(a.request(2000, &grant(10)).vbdc, 5);
        // k=4: R(1) granted (A = 5); 1000 B = 10 slots; pending = 0 + 5 → 0.
        assert_eq!(a.request(1000, &grant(5)).vbdc, 0);
        // k=5: R(2) = 0 granted; 1000 B still queued; pending = 5 + 0 → 5.
        assert_eq!(a.request(1000, &grant(0)).vbdc, 5);
    }

    #[test]
    fn vbdc_counts_only_what_cra_and_rbdc_leave() {
        // Hybrid 5 CRA + 27 VBDC: CRA = 20 slots/SF of 192 B = 3840 B. Queue 5000 B →
        // Q' = ⌈1160/192⌉ = 7 slots.
        let mut a = TerminalAgent::new(&cfg(5, 0, 0.1, 27), 4, 192, 11);
        let g = Allocation {
            cra: 20,
            ..Allocation::default()
        };
        assert_eq!(a.request(5000, &g).vbdc, 7);
        assert_eq!(a.request(3000, &g).vbdc, 0);
    }

    #[test]
    fn avbdc_asks_for_the_whole_backlog_every_time() {
        let mut c = cfg(0, 0, 0.1, 32);
        c.vbdc_mode = VbdcMode::Avbdc;
        let mut a = TerminalAgent::new(&c, 4, 100, 11);
        let none = Allocation::default();
        let r = a.request(1000, &none);
        assert_eq!((r.vbdc, r.absolute), (10, true));
        assert_eq!(a.request(1000, &none).vbdc, 10);
    }
}
