//! One split connection: two [`TcpEndpoint`] halves joined by a relay buffer.
//!
//! The *accept* half answers the opener (it holds the listener's address as its own), the
//! *connect* half opens a second connection to the listener (holding the opener's address), so
//! both end hosts see their usual 4-tuple. Data received in order by one half is written into
//! the other half's send buffer; it is *read* from the receiving half (freeing its window) only
//! once the other half's peer has acknowledged it. The unread data of a half is therefore
//! exactly what the gateway holds for that direction, and it can never exceed that half's
//! receive buffer: the window it advertises shrinks as the buffer fills (backpressure).
//!
//! A flow carries real bytes when the opener's SYN came with a real (if empty) payload — traffic
//! of real programs in the emulator or a gateway: both halves then hold the bytes they received
//! and sent ([`TcpEndpoint::carry_bytes`]), and each segment leaves with exactly the bytes its
//! stream position holds. Otherwise (the simulator's modelled hosts) payload stays a length.
//! Either way the relay moves the same counts at the same instants.

use std::net::Ipv4Addr;

use crate::tcp::{State, TcpEndpoint};
use crate::time::Instant;
use crate::wire::{emit_ipv4_tcp, emit_tcp_packet, Ipv4Repr, SeqNumber, TcpFlags, TcpRepr};
use crate::Packet;

/// One half of a split connection, with what is needed to reset its peer.
#[derive(Clone, Debug)]
pub(crate) struct Half {
    pub(crate) ep: TcpEndpoint,
    /// Right edge of the sequence space this half has sent (for a RST its peer accepts).
    snd_edge: Option<SeqNumber>,
    /// Last acknowledgement number this half sent.
    last_ack: Option<SeqNumber>,
    ident: u16,
}

impl Half {
    pub(crate) fn new(ep: TcpEndpoint) -> Self {
        Self {
            ep,
            snd_edge: None,
            last_ack: None,
            ident: 0,
        }
    }

    /// The packet for `seg`; `None` only if a real-bytes segment's bytes are missing (a bug of
    /// ours, counted by the caller).
    pub(crate) fn packet(&mut self, seg: &TcpRepr) -> Option<Packet> {
        let end = seg.seq + seg.segment_len();
        self.snd_edge = Some(self.snd_edge.map_or(end, |e| e.max(end)));
        if seg.ack.is_some() {
            self.last_ack = seg.ack;
        }
        let ip = Ipv4Repr::tcp(self.ep.local().0, self.ep.remote().0, self.ident);
        self.ident = self.ident.wrapping_add(1);
        if self.ep.carries_bytes() && seg.payload_len > 0 {
            let ep = &self.ep;
            // `copy_payload` holds every byte of a segment `poll_transmit` just returned (the
            // send ring keeps all unacknowledged data); were it ever to fail, the segment is
            // not sent (its retransmission will be) rather than sent with zeros a checksum
            // computed over zeros would let through.
            return emit_tcp_packet(&ip, seg, |v| {
                ep.copy_payload(seg, v);
            });
        }
        Some(Packet::build(seg.payload_len, |buf| {
            emit_ipv4_tcp(&ip, seg, buf)
        }))
    }

    /// A RST toward this half's peer, at the edge of what we sent (RFC 9293 §3.10.7.3: a RST is
    /// accepted when its sequence number is in the receiver's window). `None` if we never sent.
    pub(crate) fn reset(&mut self) -> Option<Packet> {
        let seq = self.snd_edge?;
        let seg = TcpRepr {
            src_port: self.ep.local().1,
            dst_port: self.ep.remote().1,
            seq,
            ack: self.last_ack,
            flags: TcpFlags::RST,
            ..TcpRepr::default()
        };
        self.packet(&seg)
    }

    /// The RST|ACK a host with no listener answers `syn` with, from this half's address.
    fn refusal(&mut self, syn: &TcpRepr) -> Packet {
        let seg = TcpRepr {
            src_port: self.ep.local().1,
            dst_port: self.ep.remote().1,
            seq: SeqNumber(0),
            ack: Some(syn.seq + syn.segment_len()),
            flags: TcpFlags::RST,
            ..TcpRepr::default()
        };
        let ip = Ipv4Repr::tcp(self.ep.local().0, self.ep.remote().0, self.ident);
        self.ident = self.ident.wrapping_add(1);
        Packet::build(0, |buf| emit_ipv4_tcp(&ip, &seg, buf))
    }
}

/// Which half a packet belongs to.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Side {
    /// Faces the host that opened the connection.
    Accept,
    /// Faces the host the connection was addressed to.
    Connect,
}

impl Side {
    fn other(self) -> Self {
        match self {
            Self::Accept => Self::Connect,
            Self::Connect => Self::Accept,
        }
    }
}

/// A split connection.
#[derive(Clone, Debug)]
pub(crate) struct SplitFlow {
    pub(crate) accept: Half,
    pub(crate) connect: Half,
    /// Bytes written into the other half so far: [accept → connect, connect → accept].
    fed: [u64; 2],
    fin_fed: [bool; 2],
    /// Both halves must be established by then, or the flow is aborted.
    pub(crate) connect_deadline: Instant,
    pub(crate) aborted: bool,
    /// The flow was aborted because a half was not established by the deadline, or the
    /// listener refused the connect half.
    pub(crate) handshake_failed: bool,
    /// `after_listener` handshake: the opener's SYN and its payload, held until the connect
    /// half is established (then the accept half gets it and answers).
    held_syn: Option<(TcpRepr, Option<Vec<u8>>)>,
    /// RSTs from an end that its half did not accept (RFC 5961), since last taken.
    pub(crate) resets_ignored: u64,
    /// Bytes on their way from one half to the other (real-bytes flows only; at most
    /// [`RELAY_CHUNK`] bytes).
    scratch: Vec<u8>,
    /// Real-bytes segments not sent because their bytes were missing (must stay 0).
    pub(crate) unsendable: u64,
}

/// Real bytes move between the halves in pieces of at most this many bytes, so the copy buffer
/// stays small whatever the windows.
const RELAY_CHUNK: usize = 64 * 1024;

impl SplitFlow {
    /// A flow for an opener's SYN `syn` from `opener` to `listener` with halves
    /// `(accept, connect)`: the connect half sends its own SYN, and the accept half answers the
    /// opener's at once, or (`defer`) once the connect half is established. `real_bytes`: the
    /// SYN's payload was real, so both halves carry real bytes.
    pub(crate) fn new(
        now: Instant,
        syn: &TcpRepr,
        (mut accept, mut connect): (TcpEndpoint, TcpEndpoint),
        connect_deadline: Instant,
        defer: bool,
        real_bytes: bool,
        syn_payload: Option<&[u8]>,
    ) -> Self {
        accept.set_manual_read();
        connect.set_manual_read();
        if real_bytes {
            accept.carry_bytes();
            connect.carry_bytes();
        }
        accept.listen();
        let held_syn = if defer {
            Some((*syn, syn_payload.map(<[u8]>::to_vec)))
        } else {
            // A SYN may carry data (TCP Fast Open): with real bytes, it goes in with them.
            accept.handle_segment_with_payload(now, syn, syn_payload);
            None
        };
        connect.connect(now);
        Self {
            accept: Half::new(accept),
            connect: Half::new(connect),
            fed: [0; 2],
            fin_fed: [false; 2],
            connect_deadline,
            aborted: false,
            handshake_failed: false,
            held_syn,
            resets_ignored: 0,
            scratch: Vec::new(),
            unsendable: 0,
        }
    }

    /// Endpoint addresses: (opener, listener).
    pub(crate) fn ends(&self) -> ((Ipv4Addr, u16), (Ipv4Addr, u16)) {
        (self.accept.ep.remote(), self.accept.ep.local())
    }

    /// A segment for `side` arrived, with its payload bytes when they are real. A RST the half
    /// accepts aborts the whole flow (it is passed to the other end).
    pub(crate) fn handle_segment(
        &mut self,
        now: Instant,
        side: Side,
        seg: &TcpRepr,
        payload: Option<&[u8]>,
        out: &mut Vec<Packet>,
    ) {
        if side == Side::Accept {
            if let Some((syn, _)) = &self.held_syn {
                // The opener's SYN is not answered yet: its retransmissions wait with it, and
                // only a RST at the exact next sequence number (RFC 5961 §3.2) is acted on.
                if seg.flags.contains(TcpFlags::RST) && seg.seq == syn.seq + 1 {
                    self.abort_side(Side::Connect, out);
                    self.aborted = true;
                }
                return;
            }
        }
        let half = &mut self.half(side).ep;
        let before = half.state();
        half.handle_segment_with_payload(now, seg, payload);
        if seg.flags.contains(TcpFlags::RST) {
            // A RST changes a half's state only when accepted (to Closed, or back to Listen
            // for a passive half in SYN-RECEIVED).
            if half.state() != before {
                if side == Side::Connect && self.connect.ep.established_at().is_none() {
                    self.handshake_failed = true;
                }
                self.abort_side(side.other(), out);
                self.aborted = true;
                return;
            }
            self.resets_ignored += 1;
        }
        if self.connect.ep.is_established() {
            self.answer_held_syn(now);
        }
        self.pump(now, out);
    }

    /// Run due timers of both halves and the handshake deadline.
    pub(crate) fn handle_timeout(&mut self, now: Instant, out: &mut Vec<Packet>) {
        if self.is_embryonic() && now >= self.connect_deadline {
            self.handshake_failed = true;
            self.abort(out);
            return;
        }
        self.accept.ep.handle_timeout(now);
        self.connect.ep.handle_timeout(now);
        self.pump(now, out);
    }

    /// Either half has not completed its handshake (the flow is half-open).
    pub(crate) fn is_embryonic(&self) -> bool {
        // (A held SYN implies a half-open accept half.)
        self.accept.ep.established_at().is_none() || self.connect.ep.established_at().is_none()
    }

    /// `after_listener`: the listener accepted, so the opener's SYN is answered now.
    fn answer_held_syn(&mut self, now: Instant) {
        if let Some((syn, payload)) = self.held_syn.take() {
            self.accept
                .ep
                .handle_segment_with_payload(now, &syn, payload.as_deref());
        }
    }

    /// Earliest instant this flow needs `handle_timeout`.
    pub(crate) fn poll_timeout(&self) -> Option<Instant> {
        let deadline = self.is_embryonic().then_some(self.connect_deadline);
        [
            self.accept.ep.poll_timeout(),
            self.connect.ep.poll_timeout(),
            deadline,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    /// Reset both ends (the gateway gives up on the connection).
    pub(crate) fn abort(&mut self, out: &mut Vec<Packet>) {
        self.abort_side(Side::Accept, out);
        self.abort_side(Side::Connect, out);
        self.aborted = true;
    }

    fn abort_side(&mut self, side: Side, out: &mut Vec<Packet>) {
        if side == Side::Accept {
            if let Some((syn, _)) = self.held_syn.take() {
                // The opener's SYN was never answered: refuse it as the listener's own stack
                // would (RFC 9293 §3.10.7.1: <SEQ=0><ACK=SEG.SEQ+SEG.LEN><CTL=RST,ACK>).
                out.push(self.accept.refusal(&syn));
                return;
            }
        }
        let h = self.half(side);
        if h.ep.state() != State::Closed {
            out.extend(h.reset());
        }
    }

    fn half(&mut self, side: Side) -> &mut Half {
        match side {
            Side::Accept => &mut self.accept,
            Side::Connect => &mut self.connect,
        }
    }

    /// Move data between the halves, free what the far side acknowledged, pass FINs on, and
    /// drain both halves' segments into `out`.
    fn pump(&mut self, now: Instant, out: &mut Vec<Packet>) {
        // Two rounds: sending can open room (an ACK frees send buffer only on input, but a
        // FIN handed over in round one must reach the wire in the same call).
        for _ in 0..2 {
            relay(
                now,
                &mut self.accept.ep,
                &mut self.connect.ep,
                &mut self.fed[0],
                &mut self.fin_fed[0],
                &mut self.scratch,
            );
            relay(
                now,
                &mut self.connect.ep,
                &mut self.accept.ep,
                &mut self.fed[1],
                &mut self.fin_fed[1],
                &mut self.scratch,
            );
        }
        for h in [&mut self.accept, &mut self.connect] {
            while let Some(seg) = h.ep.poll_transmit(now) {
                match h.packet(&seg) {
                    Some(p) => out.push(p),
                    None => self.unsendable += 1,
                }
            }
        }
    }

    /// Bytes held for the direction opener → listener and listener → opener.
    pub(crate) fn buffered(&self) -> [u64; 2] {
        [
            self.accept
                .ep
                .bytes_received()
                .saturating_sub(self.connect.ep.bytes_acked()),
            self.connect
                .ep
                .bytes_received()
                .saturating_sub(self.accept.ep.bytes_acked()),
        ]
    }

    /// Both halves are closed both ways, or the flow was aborted.
    /// Bytes relayed so far: [opener → listener, listener → opener].
    pub(crate) fn relayed(&self) -> [u64; 2] {
        self.fed
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.aborted
            || (self.accept.ep.is_finished() && self.connect.ep.is_finished())
            || (self.accept.ep.state() == State::Closed && self.connect.ep.state() == State::Closed)
    }
}

/// One direction: `from` received data, `to` sends it on.
fn relay(
    now: Instant,
    from: &mut TcpEndpoint,
    to: &mut TcpEndpoint,
    fed: &mut u64,
    fin_fed: &mut bool,
    scratch: &mut Vec<u8>,
) {
    let avail = from.bytes_received() - *fed;
    if avail > 0 && from.carries_bytes() {
        // The same count as below, with the bytes: those past what was already fed, copied
        // (not read) from `from`'s receive buffer into `to`'s send buffer, a chunk at a time.
        let mut left = avail.min(to.send_space());
        while left > 0 {
            let n = usize::try_from(left).unwrap_or(usize::MAX).min(RELAY_CHUNK);
            scratch.clear();
            let got = from.peek_bytes(*fed, n, scratch);
            let sent = to.send_bytes(now, &scratch[..got]);
            *fed += sent as u64;
            left = left.saturating_sub(sent as u64);
            if sent < n {
                break; // `to`'s send buffer is full (n ≥ 1 here)
            }
        }
    } else if avail > 0 {
        *fed += to.send(now, avail);
    }
    // Read (free window) only what the far end has acknowledged: the buffer stays bounded by
    // `from`'s receive buffer until the data is safe at its destination.
    from.read_to(now, to.bytes_acked());
    if !*fin_fed && from.peer_closed() && *fed == from.bytes_received() {
        to.close(now);
        *fin_fed = true;
    }
    // After the FIN the sender has no more to read; let the buffer count reach zero.
    if *fin_fed && to.all_acked() {
        from.read_to(now, *fed);
    }
}
