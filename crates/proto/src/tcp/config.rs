//! Settings of a TCP endpoint, as written in a scenario's `tcp` tables.

use serde::{Deserialize, Serialize};

use crate::time::{Bitrate, Duration};
use crate::units::ByteSize;

/// Window growth algorithm.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CcAlgorithm {
    /// Slow start and congestion avoidance of RFC 5681.
    Reno,
    /// CUBIC (RFC 9438), as Linux runs by default.
    #[default]
    Cubic,
    /// BBR v1 as Linux's `tcp_bbr.c`: a model of the path's rate and RTT sets a pacing rate
    /// and the window; the sender paces its data (docs/tcp-profiles.md).
    Bbr,
}

/// Loss recovery algorithm.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Recovery {
    /// Fast retransmit / fast recovery of RFC 5681: recovery ends at the first new ACK.
    Reno,
    /// NewReno (RFC 6582): partial ACKs retransmit the next hole and stay in recovery.
    #[serde(rename = "newreno", alias = "new_reno")]
    NewReno,
    /// SACK-based loss recovery (RFC 6675); falls back to NewReno when the peer does not
    /// negotiate SACK.
    #[default]
    Sack,
}

/// A named set of behaviours: which published stack the endpoint imitates where the RFCs leave a
/// choice or the stacks depart from them. Every behaviour a profile sets is also a key of its own,
/// and a key written in the scenario always wins over the profile (wherever it is written:
/// `[defaults.tcp]` or the flow). docs/tcp-profiles.md has the table with the sources.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Profile {
    /// The RFCs as written (RFC 5681, 6298, 6582, 6675, 3042, 7323): the default, because the
    /// papers satpep reproduces argue from the RFCs, and a result should not hinge on one stack's
    /// undocumented choices.
    #[default]
    Rfc,
    /// Linux (v6.x) where it departs from the RFCs: 200 ms minimum RTO, the timer re-armed when
    /// the head is retransmitted, ssthresh from cwnd, quick ACKs at the start, no slow-start
    /// byte-counting limit, CUBIC's HyStart, RTT samples from SACKed data, PRR, RACK-TLP
    /// (docs/tcp-profiles.md).
    Linux,
    /// ns-2.35's one-way agents and `TCPSink` with their default variables: timer restarted on
    /// every retransmission, Reno's recover check (`bugFix_`), ssthresh from the window at a
    /// timeout, NewReno's timer restarted at the first partial ACK only, ACK every segment.
    Ns2,
}

/// When the retransmission timer is restarted, beyond RFC 6298 §5.1 (start it when data is sent
/// and it is not running) and §5.3 (restart it when new data is acknowledged).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoRearm {
    /// Only as RFC 6298 says: a fast retransmission leaves the running timer alone.
    #[default]
    Ack,
    /// Also at every fast retransmit (ns-2: `reset_rtx_timer(1, 0)` in `dupack_action` of Reno,
    /// NewReno and Sack1).
    FastRetransmit,
    /// Also whenever the first unacknowledged segment is retransmitted (Linux:
    /// `tcp_xmit_retransmit_queue` re-arms when it sends the head of the retransmit queue).
    Head,
}

/// What ssthresh is computed from at a retransmission timeout (the controller then applies its
/// decrease: one half for Reno, β for CUBIC).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoSsthresh {
    /// FlightSize (RFC 5681 eq. 4), at every timeout.
    #[default]
    Flight,
    /// The window min(cwnd, rwnd), without fast recovery's inflation, at every timeout: ns-2's
    /// `windowd()` in `slowdown` (its `timeout` zeroes `dupwnd_` first), so a timeout in fast
    /// recovery halves the window recovery already halved, and a repeated timeout halves the
    /// one-segment window (ssthresh 2 segments).
    Window,
    /// cwnd, but only once per loss episode: no new reduction for a timeout during fast
    /// recovery or after an earlier timeout before the ACKs pass what was then outstanding
    /// (Linux `tcp_enter_loss`: "reduce ssthresh if it has not yet been made inside this
    /// window").
    WindowOnce,
}

/// What ssthresh is computed from at a fast retransmit (and when a tail loss probe repaired a
/// loss); the controller then applies its decrease (one half for Reno; Linux's CUBIC always
/// takes its own cwnd).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FrSsthresh {
    /// FlightSize, less what limited transmit sent (RFC 5681 eq. 4, §3.2 step 2).
    #[default]
    Flight,
    /// cwnd: Linux's `tcp_reno_ssthresh` halves `snd_cwnd` whatever is outstanding. They differ
    /// after a NewReno recovery without SACK: the inflated window let new data out on every
    /// duplicate ACK, so much more than cwnd can still be outstanding when the next loss comes.
    Window,
}

/// NewReno (RFC 6582 §4): which partial ACKs restart the retransmission timer.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PartialAckTimer {
    /// Every partial ACK ("Slow-but-Steady"; Linux re-arms on every ACK of new data).
    #[default]
    Every,
    /// Only the first partial ACK ("Impatient"; ns-2.35's default `newreno_changes1_ = 1`).
    First,
}

/// NewReno (RFC 6582 §3.2 step 3): cwnd when a full ACK ends fast recovery.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum FullAckCwnd {
    /// Option (1), min(ssthresh, max(FlightSize, SMSS) + SMSS): no burst when little is in
    /// flight.
    #[default]
    Flight,
    /// Option (2), ssthresh: ns-2 (`exit_recovery_fix_ 0` leaves `cwnd_` at ssthresh) and Linux
    /// (`tcp_end_cwnd_reduction`).
    Ssthresh,
    /// ssthresh, then the full ACK also grows the window as any new ACK does: ns-2's Reno and
    /// Newreno agents hand the ACK that ends fast recovery to `recv_newack_helper`, whose
    /// `opencwnd` adds `1/cwnd_` (Sack1 ends recovery without it).
    SsthreshAndGrow,
}

/// What SACK loss recovery retransmits and how it counts what is in flight.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SackRecovery {
    /// RFC 6675: NextSeg resends a hole once IsLost (DupThresh segments SACKed above it), else
    /// sends new data, else applies rules 3 and 4 as `nextseg_rule3` and `nextseg_rescue`
    /// say; pipe is SetPipe() over the scoreboard.
    #[default]
    Rfc6675,
    /// ns-2.35's `Agent/TCP/Sack1` (`tcp-sack1.cc`, `scoreboard-rq.cc`): every hole below the
    /// highest SACKed byte is resent, once each, in order (`GetNextRetran`); pipe is a packet
    /// counter, `pipe_`, set to the packets outstanding less DupThresh at the fast
    /// retransmit (which it does not count), one less per ACK during recovery and one more
    /// per partial ACK (`partial_ack_` 0), one more per packet sent, and sending needs
    /// `pipe_ < int(cwnd_)`.
    Ns2,
}

/// Whose arithmetic CUBIC uses (`cc = "cubic"` only).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CubicVariant {
    /// RFC 9438 in real numbers: target W(t + SRTT), the Reno-friendly window sets cwnd and its
    /// α rises to 1 above W_max.
    #[default]
    #[serde(rename = "rfc9438")]
    Rfc9438,
    /// Linux's `tcp_cubic.c`: whole segments and jiffies, `cnt = cwnd / (target − cwnd)`
    /// truncated and at least 2, target W(t + min RTT), α ≈ 0.53 throughout, and a timeout
    /// forgets W_max (`bictcp_reset`). [`crate::tcp::cc::LinuxCubic`] lists every difference.
    Linux,
}

/// How slow start may end before a loss (RFC 9438 §4.10 leaves the choice to the stack).
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hystart {
    /// Slow start ends only at a loss or at ssthresh (RFC 5681 §3.1).
    #[default]
    Off,
    /// Linux CUBIC's HyStart (`tcp_cubic.c`, `hystart = 1`, `hystart_detect = 3`): from a
    /// window of 16 segments, ssthresh is set to cwnd when a round's ACK train lasts longer than
    /// half the minimum RTT (ACKs at most 2 ms apart) or when the least of a round's first 8 RTT
    /// samples exceeds the minimum RTT by clamp(minRTT/8, 4 ms, 16 ms). CUBIC only.
    Linux,
    /// HyStart++ (RFC 9406): on a delay rise of clamp(lastRoundMinRTT/8, 4 ms, 16 ms) between
    /// rounds, Conservative Slow Start (a quarter of slow start's growth) for up to 5 rounds, back
    /// to slow start if the RTT falls below the baseline again. Only the first slow start (§4.3).
    /// Any controller.
    Rfc9406,
}

/// How RTT samples become the retransmission timeout.
#[derive(Clone, Copy, Debug, Default, Deserialize, Eq, PartialEq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RttEstimatorKind {
    /// RFC 6298: samples at full resolution, RTO = SRTT + max(G, 4·RTTVAR), G being
    /// `clock_granularity`.
    #[default]
    #[serde(rename = "rfc6298")]
    Rfc6298,
    /// Linux's `tcp_rtt_estimator` in µs: negative errors weigh an eighth in the mean
    /// deviation, and RTO = SRTT + the largest deviation of the last round trip (at least
    /// `min_rto`), which decays by a quarter per round trip, not per sample.
    Linux,
    /// ns-2.35's `rtt_update` / `rtt_timeout` / `rtt_backoff`: a sample is the number of
    /// `clock_granularity` ticks (`tcpTick_`) it crosses, at least 1; SRTT and RTTVAR are kept
    /// in ticks with 3 and 2 fractional bits and truncating shifts; RTO = SRTT + 4·RTTVAR in
    /// whole ticks, raised to `min_rto` before the backoff multiplies it, then capped at
    /// `max_rto` and floored at two ticks; past a multiplier of 8 SRTT is forgotten. No RFC 6298
    /// §5.7 reset after a SYN timeout. Samples from timestamps are tick-counted too (ns-2
    /// rounds them instead; its default has no timestamps).
    Ns2,
}

macro_rules! tcp_config {
    ($( $(#[$doc:meta])* $name:ident : $ty:ty, )*) => {
        /// A TCP endpoint's settings: a [`Profile`] and every behaviour, each field saying its
        /// own default (the `rfc` profile's). Scenario tables may set any subset; unset keys
        /// come from the table's `profile`.
        #[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
        #[serde(try_from = "TcpTable")]
        #[non_exhaustive]
        pub struct TcpConfig {
            /// Which stack the unset keys imitate. Default: `"rfc"`.
            pub profile: Profile,
            $( $(#[$doc])* pub $name: $ty, )*
        }

        /// A `tcp` table as written: every key optional, laid over its profile.
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct TcpTable {
            #[serde(default)]
            profile: Option<Profile>,
            $( #[serde(default)] $name: Option<$ty>, )*
        }

        impl From<TcpTable> for TcpConfig {
            fn from(t: TcpTable) -> Self {
                let base = TcpConfig::for_profile(t.profile.unwrap_or_default());
                Self { profile: base.profile, $( $name: t.$name.unwrap_or(base.$name), )* }
            }
        }
    };
}

tcp_config! {
    /// Window growth. Default: `"cubic"`.
    cc: CcAlgorithm,
    /// Loss recovery. Default: `"sack"`.
    recovery: Recovery,
    /// Maximum segment size offered and used, bytes of payload. Default: 1460.
    mss: u16,
    /// Initial window in segments, 1 to 10. Default: 10 (RFC 6928); `ns2`: 2 (`windowInit_`).
    initial_window: u32,
    /// Initial slow-start threshold. Default: none (unbounded, RFC 5681).
    initial_ssthresh: Option<ByteSize>,
    /// Offer the window scale option (RFC 7323). Default: true.
    window_scaling: bool,
    /// Offer SACK-permitted (RFC 2018). Default: true.
    sack: bool,
    /// Offer timestamps (RFC 7323). Default: true; `ns2`: false (`timestamps_`).
    timestamps: bool,
    /// Send buffer: bytes written by the application and not yet acknowledged. Default: `"8MB"`.
    send_buffer: ByteSize,
    /// Receive buffer: bounds the advertised window. Default: `"8MB"`; without window scaling
    /// the advertised window is capped at 65 535 bytes whatever the buffer.
    recv_buffer: ByteSize,
    /// Rate at which the receiving application drains the receive buffer. Default: none
    /// (instantly).
    app_read_rate: Option<Bitrate>,
    /// Acknowledge every N full segments. 1 = every segment. Default: 2 (RFC 5681 §4.2);
    /// `ns2`: 1 (`TCPSink`).
    delack_segments: u32,
    /// Delayed ACK timeout. Default: `"200ms"`; `linux`: `"40ms"` (`TCP_ATO_MIN`, where Linux's
    /// adaptive timeout starts); `ns2`: `"100ms"` (`DelAckSink interval_`).
    delack_timeout: Duration,
    /// Segments acknowledged at once, one ACK each, at the start of a connection (Linux's
    /// quick-ACK mode, `TCP_MAX_QUICKACKS`). Default: 0; `linux`: 16.
    quickacks: u32,
    /// Retransmission timeout before the first RTT sample, also the SYN's. Default: `"1s"`
    /// (RFC 6298 §2.1); `ns2`: `"3s"` (`rtxcur_init_`).
    initial_rto: Duration,
    /// Lower bound of the RTO. Default: `"1s"` (RFC 6298 §2.4); `linux`, `ns2`: `"200ms"`.
    min_rto: Duration,
    /// Upper bound of the RTO after backoff. Default: `"60s"` (RFC 6298 §2.5); `linux`:
    /// `"120s"` (`TCP_RTO_MAX`).
    max_rto: Duration,
    /// Clock granularity G in RTO = SRTT + max(G, 4·RTTVAR). Default: `"1ms"`; `ns2`: `"10ms"`
    /// (`tcpTick_`); `linux`: `"200ms"` (Linux floors the variance term at `TCP_RTO_MIN`, so
    /// its RTO is at least SRTT + 200 ms: `tcp_rtt_estimator`, `__tcp_set_rto`).
    clock_granularity: Duration,
    /// RTT estimator and RTO rule. Default: `"rfc6298"`; `ns2`: `"ns2"` (ns-2's 10 ms ticks
    /// and fixed-point arithmetic, `clock_granularity` being `tcpTick_`).
    rtt_estimator: RttEstimatorKind,
    /// Duplicate ACKs (or SACKed segments) that trigger fast retransmit. Default: 3.
    dupthresh: u32,
    /// Slow start counts at most this many segments per ACK (appropriate byte counting, the
    /// limit L of RFC 3465). Default: 1, RFC 5681's `cwnd += min(N, SMSS)`: with delayed ACKs
    /// the window grows 1.5× per RTT. `linux`: no limit (`tcp_slow_start` adds every segment
    /// acknowledged: 2× per RTT with delayed ACKs); see docs/validation.md.
    abc_segments: u32,
    /// Retransmissions of the SYN (or SYN-ACK) after which the initial window is one segment
    /// instead of `initial_window`. Default: 1 (RFC 5681 §3.1, RFC 6928 §2: "if the SYN or
    /// SYN/ACK is lost"); `linux`: 2 (`tcp_init_transfer`: `total_retrans > 1`, "in light of
    /// RFC 6298's more aggressive 1 sec initRTO"). On a path with an RTT of 1 s or more the
    /// first SYN times out just before its SYN-ACK arrives, and Linux keeps IW 10. Linux also
    /// keeps it when the SYN-ACK's timestamp shows the first SYN arrived
    /// (`tcp_try_undo_spurious_syn`): not modelled. At least 1.
    iw1_after_syn_retransmits: u32,
    /// Slow start stops at ssthresh: an ACK that would take cwnd past it adds only up to
    /// ssthresh, and the rest of what it acknowledges counts in congestion avoidance (Linux
    /// `tcp_slow_start` and `tcp_reno_cong_avoid`; Linux's CUBIC, `cubic_variant = "linux"`,
    /// always does). Without it (RFC 5681 §3.1) an ACK in slow start adds up to
    /// `abc_segments`, wherever that leaves cwnd; with no ABC limit (`linux`), one cumulative
    /// ACK after a timeout, covering data that arrived behind the lost head, took cwnd from
    /// one segment to the whole window. Default: false; `linux`: true.
    slow_start_to_ssthresh: bool,
    /// Congestion avoidance (Reno) counts bytes acknowledged (RFC 3465 §2.1: one SMSS per
    /// cwnd of data acknowledged), not ACKs (RFC 5681 eq. 3: SMSS²/cwnd per ACK, about half a
    /// segment per RTT with delayed ACKs). Default: false; `linux`: true (`tcp_cong_avoid_ai`
    /// counts segments acknowledged, measured 0.92 segments per RTT against the model's 0.48
    /// through the emulator: docs/validation.md).
    ca_byte_counting: bool,
    /// Limited transmit (RFC 3042): the first and second duplicate ACKs each let one new segment
    /// out beyond cwnd. Default: true (RFC 5681 §3.2 step 1 says SHOULD).
    limited_transmit: bool,
    /// Limited transmit also sends the next segment when it is an old one (after a timeout's
    /// go-back-N): ns-2's `send_one` sends `t_seqno_` whatever it is. RFC 3042 sends only new
    /// data. Default: false; `ns2`: true.
    limited_transmit_resends: bool,
    /// Extra restarts of the retransmission timer. Default: `"ack"` (RFC 6298 only); `linux`:
    /// `"head"`; `ns2`: `"fast_retransmit"`.
    rto_rearm: RtoRearm,
    /// What ssthresh is computed from at a timeout. Default: `"flight"` (RFC 5681 eq. 4);
    /// `linux`: `"window_once"`; `ns2`: `"window"`.
    rto_ssthresh: RtoSsthresh,
    /// What ssthresh is computed from at a fast retransmit. Default: `"flight"` (RFC 5681
    /// eq. 4); `linux`: `"window"` (`tcp_reno_ssthresh`: cwnd / 2).
    fr_ssthresh: FrSsthresh,
    /// NewReno's timer restarts on partial ACKs. Default: `"every"`; `ns2`: `"first"`.
    partial_ack_timer: PartialAckTimer,
    /// NewReno's cwnd at the full ACK (and, for `"ssthresh_and_grow"`, Reno's at the ACK that
    /// ends recovery). Default: `"flight"` (RFC 6582 option 1); `linux`: `"ssthresh"`; `ns2`:
    /// `"ssthresh_and_grow"`.
    full_ack_cwnd: FullAckCwnd,
    /// `recovery = "reno"`: no new fast retransmit until the cumulative ACK passes what was
    /// outstanding at the last one (RFC 6582 §3.2 step 1 applied to Reno; ns-2's `bugFix_`).
    /// Default: false (RFC 5681 Reno has no such check); `linux`, `ns2`: true.
    reno_recover_check: bool,
    /// The recover check also holds back a fast retransmit when the cumulative ACK is exactly
    /// what was outstanding (ns-2: `highest_ack_ <= recover_` unless `less_careful_`); RFC 6582
    /// lets an ACK that covers it through. After a spurious timeout the go-back-N duplicates
    /// arrive exactly there, and ns-2 does not halve again (bench/peers/compare-ns2-return.sh,
    /// 9.6 kb/s return link). Default: false; `ns2`: true.
    recover_inclusive: bool,
    /// Slow-start exit before a loss. Default: `"off"` (RFC 5681; RFC 9406 is optional and the
    /// reproduced papers predate it); `linux`: `"linux"` (CUBIC's HyStart, `tcp_cubic.c`).
    hystart: Hystart,
    /// CUBIC's arithmetic. Default: `"rfc9438"`; `linux`: `"linux"` (`tcp_cubic.c`'s integer
    /// `bictcp_update`, with a timeout forgetting W_max).
    cubic_variant: CubicVariant,
    /// RTT samples from SACKed data: an ACK that does not yield a sample from cumulatively
    /// acknowledged data takes one from the first newly SACKed segment never retransmitted
    /// (Linux `tcp_sacktag_one` / `tcp_clean_rtx_queue`: `sack_rtt_us`, used by
    /// `tcp_ack_update_rtt`). Default: false (RFC 7323 §4.1 samples only ACKs that advance the
    /// left edge); `linux`: true.
    sack_rtt: bool,
    /// SACK loss recovery's retransmission rule and pipe. Default: `"rfc6675"`; `ns2`: `"ns2"`
    /// (ns-2's Sack1 agent). Not used with `rack`.
    sack_recovery: SackRecovery,
    /// RFC 6675 NextSeg() rule 3 (SHOULD): when no hole IsLost and no new data may go (the
    /// application or the receiver's window holds it back), resend the first unSACKed segment
    /// above HighRxt that lies below the highest SACKed byte, lost or not; it counts twice in
    /// pipe (§4 SetPipe) until SACKed. Default: true; `linux`: false (Linux removed forward
    /// retransmission in 4.14, "tcp: remove forward retransmit feature", and relies on RACK);
    /// `ns2`: false (Sack1 has its own rule). Only with `sack_recovery = "rfc6675"` and
    /// without `rack`.
    nextseg_rule3: bool,
    /// RFC 6675 NextSeg() rule 4, the rescue retransmission: when rules 1–3 find nothing and
    /// unSACKed data is outstanding, once per recovery after a cumulative ACK passes the first
    /// retransmission (HighACK > RescueRxt), resend the segment holding the highest unSACKed
    /// byte and set RescueRxt = RecoveryPoint; HighRxt is left alone, so pipe does not count
    /// it. A tail loss is then repaired one round trip after the partial ACK instead of by
    /// the RTO. Default: true; `linux`: false (TLP does this job); `ns2`: false. Only with
    /// `sack_recovery = "rfc6675"` and without `rack`.
    nextseg_rescue: bool,
    /// Proportional Rate Reduction (RFC 6937, reduction bound PRR-SSRB as Linux 6.1's
    /// `tcp_cwnd_reduction`) sets cwnd on each ACK of SACK recovery instead of RFC 6675's
    /// cwnd = ssthresh at once. Default: false; `linux`: true.
    prr: bool,
    /// RACK (RFC 8985 §6): with SACK, a segment is lost once a segment sent after it is
    /// delivered and it stays unacknowledged for RACK.rtt plus a reordering window of
    /// min(min_RTT/4, SRTT) (0 in recovery and once DupThresh segments are SACKed, until
    /// reordering is seen); this replaces the DupThresh rule (RFC 6675 IsLost) and a timer
    /// marks what the window still holds back. Default: false; `linux`: true
    /// (`tcp_recovery = 1`, `tcp_rack_mark_lost`).
    rack: bool,
    /// With `rack`: when an ACK ends a recovery while a segment deemed lost is still
    /// unacknowledged, resent or not, a new recovery begins at once and reduces ssthresh again
    /// (Linux: `tcp_try_undo_recovery` returns to Open, then `tcp_time_to_recover` sees
    /// `lost_out`, which counts lost segments whether retransmitted or not). Off, only a lost
    /// segment not yet resent starts one: a loss sent after the recovery began and repaired
    /// within it costs no second reduction (RFC 6675 §5: one reduction per recovery).
    /// Default: false; `linux`: true.
    lost_out_reentry: bool,
    /// Tail loss probe (RFC 8985 §7): with SACK and nothing SACKed outside recovery, a probe
    /// timer of 2·SRTT (+ 200 ms with one segment in flight) sends one new segment, or the
    /// last one again, so that a tail loss is repaired by SACK recovery instead of a
    /// timeout. Default: false; `linux`: true (`tcp_early_retrans = 3`,
    /// `tcp_schedule_loss_probe`).
    tlp: bool,
    /// F-RTO (RFC 5682 §3, the SACK-enhanced variant, as Linux's `tcp_frto = 2`): after a
    /// timeout outside any recovery only the first unacknowledged segment is resent; an ACK
    /// that advances SND.UNA without covering what was outstanding lets up to two new segments
    /// go instead of further retransmissions, and an ACK or SACK of data never retransmitted
    /// declares the timeout spurious and restores cwnd and ssthresh (Linux
    /// `tcp_try_undo_loss`). Default: false (RFC 5682 is Experimental); `linux`: true.
    frto: bool,
    /// A timeout of the SYN (or of the SYN-ACK) also sets ssthresh to 2·SMSS, so that the
    /// connection leaves slow start at two segments instead of slow-starting into the queue
    /// that lost its first packet. ns-2 has no handshake, but its packet 0 plays the SYN's
    /// part: `TcpAgent::timeout` applies the timeout rule (`slowdown(CLOSE_SSTHRESH_HALF|
    /// CLOSE_CWND_RESTART)`) to the window of one packet that sent it, `(int) 0.5` = 0,
    /// floored to 2 (ns-2.35 `tcp.cc`, `slowdown`). RFC 5681 §3.1 sets only the initial
    /// window (one segment) after a lost SYN, which every profile does. Default: false;
    /// `ns2`: true.
    syn_rto_ssthresh: bool,
    /// With SACK, a recovery may start before DupThresh duplicate ACKs when the SACK blocks
    /// already show a segment lost (RFC 6675 §5: DupAcks ≥ DupThresh *or* IsLost(HighACK +
    /// 1), more than (DupThresh − 1)·SMSS SACKed above it). Off, only the DupThresh-th
    /// duplicate ACK starts one: ns-2.35's `Agent/TCP/Sack1` (`tcp-sack1.cc`, `recv`: `if
    /// (++dupacks_ == numdupacks_)`), whatever the SACK blocks say. Default: true; `ns2`:
    /// false.
    sack_loss_entry: bool,
}

impl TcpConfig {
    /// Every setting as the profile `p` has it.
    pub fn for_profile(p: Profile) -> Self {
        let rfc = Self {
            profile: Profile::Rfc,
            cc: CcAlgorithm::Cubic,
            recovery: Recovery::Sack,
            mss: 1460,
            initial_window: 10,
            initial_ssthresh: None,
            window_scaling: true,
            sack: true,
            timestamps: true,
            send_buffer: ByteSize(8_000_000),
            recv_buffer: ByteSize(8_000_000),
            app_read_rate: None,
            delack_segments: 2,
            delack_timeout: Duration::from_millis(200),
            quickacks: 0,
            initial_rto: Duration::from_secs(1),
            min_rto: Duration::from_secs(1),
            max_rto: Duration::from_secs(60),
            clock_granularity: Duration::from_millis(1),
            rtt_estimator: RttEstimatorKind::Rfc6298,
            dupthresh: 3,
            abc_segments: 1,
            iw1_after_syn_retransmits: 1,
            slow_start_to_ssthresh: false,
            ca_byte_counting: false,
            limited_transmit: true,
            limited_transmit_resends: false,
            rto_rearm: RtoRearm::Ack,
            rto_ssthresh: RtoSsthresh::Flight,
            fr_ssthresh: FrSsthresh::Flight,
            partial_ack_timer: PartialAckTimer::Every,
            full_ack_cwnd: FullAckCwnd::Flight,
            reno_recover_check: false,
            recover_inclusive: false,
            hystart: Hystart::Off,
            cubic_variant: CubicVariant::Rfc9438,
            sack_rtt: false,
            sack_recovery: SackRecovery::Rfc6675,
            nextseg_rule3: true,
            nextseg_rescue: true,
            prr: false,
            rack: false,
            lost_out_reentry: false,
            tlp: false,
            frto: false,
            syn_rto_ssthresh: false,
            sack_loss_entry: true,
        };
        match p {
            Profile::Rfc => rfc,
            Profile::Linux => Self {
                profile: Profile::Linux,
                delack_timeout: Duration::from_millis(40),
                quickacks: 16,
                min_rto: Duration::from_millis(200),
                max_rto: Duration::from_secs(120),
                rtt_estimator: RttEstimatorKind::Linux,
                abc_segments: u32::MAX,
                iw1_after_syn_retransmits: 2,
                slow_start_to_ssthresh: true,
                ca_byte_counting: true,
                clock_granularity: Duration::from_millis(200),
                rto_rearm: RtoRearm::Head,
                rto_ssthresh: RtoSsthresh::WindowOnce,
                fr_ssthresh: FrSsthresh::Window,
                full_ack_cwnd: FullAckCwnd::Ssthresh,
                reno_recover_check: true,
                hystart: Hystart::Linux,
                cubic_variant: CubicVariant::Linux,
                sack_rtt: true,
                nextseg_rule3: false,
                nextseg_rescue: false,
                prr: true,
                rack: true,
                lost_out_reentry: true,
                tlp: true,
                frto: true,
                ..rfc
            },
            Profile::Ns2 => Self {
                profile: Profile::Ns2,
                timestamps: false,
                initial_window: 2,
                delack_segments: 1,
                delack_timeout: Duration::from_millis(100),
                initial_rto: Duration::from_secs(3),
                min_rto: Duration::from_millis(200),
                clock_granularity: Duration::from_millis(10),
                rtt_estimator: RttEstimatorKind::Ns2,
                limited_transmit_resends: true,
                rto_rearm: RtoRearm::FastRetransmit,
                rto_ssthresh: RtoSsthresh::Window,
                partial_ack_timer: PartialAckTimer::First,
                full_ack_cwnd: FullAckCwnd::SsthreshAndGrow,
                sack_recovery: SackRecovery::Ns2,
                nextseg_rule3: false,
                nextseg_rescue: false,
                reno_recover_check: true,
                recover_inclusive: true,
                syn_rto_ssthresh: true,
                sack_loss_entry: false,
                ..rfc
            },
        }
    }

    /// Check values a scenario or a daemon configuration could get wrong; the message starts
    /// with the key inside the `tcp` table (`initial_window: …`). Wherever a `tcp` table is
    /// read (a flow's, `[defaults.tcp]`, a split relay's `tcp_accept` and `tcp_connect`), this
    /// is its check.
    pub fn validate(&self) -> Result<(), String> {
        if self.mss == 0 {
            return Err("mss: must be at least 1 byte (typically 1460)".into());
        }
        if !(1..=10).contains(&self.initial_window) {
            return Err(format!(
                "initial_window: must be 1 to 10 segments (RFC 6928), got {}",
                self.initial_window
            ));
        }
        if self.delack_segments == 0 {
            return Err(
                "delack_segments: must be at least 1 (1 = acknowledge every segment)".into(),
            );
        }
        if self.abc_segments == 0 {
            return Err(
                "abc_segments: must be at least 1 segment per ACK (1 = RFC 5681, 2 = \
                        RFC 3465's L)"
                    .into(),
            );
        }
        if self.iw1_after_syn_retransmits == 0 {
            return Err(
                "iw1_after_syn_retransmits: must be at least 1 (1 = RFC 5681, 2 = Linux)".into(),
            );
        }
        if self.dupthresh == 0 {
            return Err("dupthresh: must be at least 1 duplicate ACK (typically 3)".into());
        }
        if self.initial_rto == Duration::ZERO {
            return Err("initial_rto: must be above 0 (RFC 6298: 1s)".into());
        }
        if self.min_rto > self.max_rto {
            return Err(format!(
                "min_rto: {} must not exceed max_rto ({})",
                self.min_rto, self.max_rto
            ));
        }
        for (k, size) in [
            ("send_buffer", self.send_buffer),
            ("recv_buffer", self.recv_buffer),
        ] {
            if size.bytes() < u64::from(self.mss) {
                return Err(format!(
                    "{k}: {size} must hold at least one segment of mss {} bytes",
                    self.mss
                ));
            }
        }
        if self.app_read_rate == Some(Bitrate(0)) {
            return Err(
                "app_read_rate: must be above 0; leave it out for an instant reader".into(),
            );
        }
        Ok(())
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self::for_profile(Profile::Rfc)
    }
}
