//! One connection of the kernel split engine: the client's leg and the server's leg, both Linux
//! TCP sockets, and one pipe per direction through which splice(2) moves the bytes without
//! copying them into user space.
//!
//! Driven edge-triggered: [`Conn::pump`] moves bytes in both directions until every move would
//! block, so the next edge on either socket (data, room to write, FIN, RST, the end of the
//! server leg's handshake) is what wakes it again. Semantics:
//!
//! - **Flush at once**: both legs have `TCP_NODELAY` (set by the caller), and every splice into
//!   a socket is written without `SPLICE_F_MORE`, so a byte leaves as soon as it arrived.
//! - **Backpressure**: a direction holds at most its pipe's capacity; a full pipe stops the
//!   reads, the source socket's receive queue fills and its window closes.
//! - **Half-close**: a FIN read on one leg becomes `shutdown(SHUT_WR)` on the other once the
//!   pipe of that direction is empty; the other direction carries on.
//! - **Reset**: an error on either leg (a RST read, a write refused, a failed connect) ends
//!   both; [`Conn::reset`] closes the other leg with `SO_LINGER {1, 0}`, so its peer gets a RST.

use std::io;
use std::net::{Shutdown, TcpStream};
use std::os::fd::OwnedFd;

use nix::errno::Errno;
use nix::fcntl::{fcntl, splice, FcntlArg, OFlag, SpliceFFlags};
use nix::sys::socket::{setsockopt, sockopt};

/// A split connection.
#[derive(Debug)]
pub struct Conn {
    /// The client's leg: the accepted socket, whose local address is the server's.
    pub client: TcpStream,
    /// The server's leg: opened from the client's address (or, in tests, any socket).
    pub server: TcpStream,
    connected: bool,
    /// Client to server.
    up: Half,
    /// Server to client.
    down: Half,
    /// When a byte last moved or the state changed (the caller's clock, ns).
    pub last_active_ns: u64,
}

/// One direction: its pipe and how far it got.
#[derive(Debug)]
struct Half {
    read: OwnedFd,
    write: OwnedFd,
    /// Bytes in the pipe.
    queued: usize,
    /// Pipe capacity (what the kernel granted).
    cap: usize,
    /// The source sent its FIN.
    eof: bool,
    /// The FIN was passed on (`shutdown(SHUT_WR)` on the destination).
    shut: bool,
}

/// What [`Conn::pump`] left the connection in.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Step {
    /// Still relaying (possibly half-closed).
    Open,
    /// Both directions finished with FINs: drop the connection (an orderly close).
    Closed,
    /// A leg failed: [`Conn::reset`] the connection.
    Reset(Leg),
    /// The server leg's handshake failed (refused, unreachable, timed out): reset the client.
    ConnectFailed,
}

/// Which leg.
#[derive(Clone, Copy, Debug, Eq, PartialEq)]
pub enum Leg {
    /// The client's.
    Client,
    /// The server's.
    Server,
}

/// Bytes moved by one [`Conn::pump`].
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct Moved {
    /// Client to server.
    pub up: u64,
    /// Server to client.
    pub down: u64,
}

const FLAGS: SpliceFFlags = SpliceFFlags::SPLICE_F_MOVE.union(SpliceFFlags::SPLICE_F_NONBLOCK);

impl Conn {
    /// A connection over `client` and `server` (both non-blocking), with pipes of about
    /// `buffer` bytes; `connected`: the server leg's handshake is done (else it is in progress
    /// and nothing is written to it until it is).
    pub fn new(
        client: TcpStream,
        server: TcpStream,
        connected: bool,
        buffer: usize,
        now_ns: u64,
    ) -> io::Result<Self> {
        // While the connection is open, a close — the daemon's death included — resets both
        // ends: a killed relay must not look like an orderly end (a FIN after a truncated
        // response). [`Conn::finish`] takes this back for the orderly close.
        abort(&client);
        abort(&server);
        Ok(Self {
            client,
            server,
            connected,
            up: Half::new(buffer)?,
            down: Half::new(buffer)?,
            last_active_ns: now_ns,
        })
    }

    /// Move what can be moved both ways, pass FINs on, notice failures; called on every edge
    /// of either socket. Adds the bytes moved to `moved`.
    pub fn pump(&mut self, now_ns: u64, moved: &mut Moved) -> Step {
        let mut changed = false;
        if !self.connected {
            match self.server.take_error() {
                Ok(None) => {}
                Ok(Some(_)) | Err(_) => return Step::ConnectFailed,
            }
            if self.server.peer_addr().is_err() {
                // Still in its handshake: buffer what the client sends meanwhile.
                return match self.up.fill(&self.client) {
                    Ok(n) => {
                        if n > 0 {
                            self.last_active_ns = now_ns;
                        }
                        Step::Open
                    }
                    Err(()) => Step::Reset(Leg::Client),
                };
            }
            self.connected = true;
            changed = true;
        }
        let up = match self.up.relay(&self.client, &self.server) {
            Ok(r) => r,
            Err(leg) => return Step::Reset(if leg { Leg::Client } else { Leg::Server }),
        };
        let down = match self.down.relay(&self.server, &self.client) {
            Ok(r) => r,
            Err(leg) => return Step::Reset(if leg { Leg::Server } else { Leg::Client }),
        };
        moved.up += up.0;
        moved.down += down.0;
        if up.0 + down.0 > 0 || up.1 || down.1 || changed {
            self.last_active_ns = now_ns;
        } else {
            // An edge that moved nothing: a RST on a leg no longer read (after its FIN) shows
            // only here.
            for (sock, leg) in [(&self.client, Leg::Client), (&self.server, Leg::Server)] {
                if !matches!(sock.take_error(), Ok(None)) {
                    return Step::Reset(leg);
                }
            }
        }
        if self.up.shut && self.down.shut {
            Step::Closed
        } else {
            Step::Open
        }
    }

    /// End both legs with a RST (`SO_LINGER {1, 0}` then close).
    pub fn reset(self) {
        for sock in [&self.client, &self.server] {
            abort(sock);
        }
    }

    /// Close after [`Step::Closed`]: both FINs were passed on, and what the sockets still hold
    /// is delivered by the kernel after the close (no RST).
    pub fn finish(self) {
        for sock in [&self.client, &self.server] {
            let _ = setsockopt(
                sock,
                sockopt::Linger,
                &nix::libc::linger {
                    l_onoff: 0,
                    l_linger: 0,
                },
            );
        }
    }

    /// Bytes held in the pipes now.
    pub fn queued(&self) -> usize {
        self.up.queued + self.down.queued
    }
}

/// Make the next close of `sock` send a RST instead of a FIN.
pub fn abort(sock: &TcpStream) {
    let _ = setsockopt(
        sock,
        sockopt::Linger,
        &nix::libc::linger {
            l_onoff: 1,
            l_linger: 0,
        },
    );
}

impl Half {
    fn new(buffer: usize) -> io::Result<Self> {
        let (read, write) = nix::unistd::pipe2(OFlag::O_NONBLOCK | OFlag::O_CLOEXEC)?;
        let want = i32::try_from(buffer).unwrap_or(i32::MAX);
        // Above /proc/sys/fs/pipe-max-size only with CAP_SYS_RESOURCE: keep the default then.
        let cap = fcntl(&write, FcntlArg::F_SETPIPE_SZ(want))
            .or_else(|_| fcntl(&write, FcntlArg::F_GETPIPE_SZ))?;
        Ok(Self {
            read,
            write,
            queued: 0,
            cap: usize::try_from(cap).unwrap_or(4096),
            eof: false,
            shut: false,
        })
    }

    /// Read from `src` into the pipe while there is room. `Err` when `src` failed.
    fn fill(&mut self, src: &TcpStream) -> Result<u64, ()> {
        let mut total = 0;
        while !self.eof && self.queued < self.cap {
            match splice(src, None, &self.write, None, self.cap - self.queued, FLAGS) {
                Ok(0) => self.eof = true,
                Ok(n) => {
                    self.queued += n;
                    total += n as u64;
                }
                Err(Errno::EAGAIN) => break,
                Err(Errno::EINTR) => {}
                Err(_) => return Err(()),
            }
        }
        Ok(total)
    }

    /// Alternate writing the pipe to `dst` and reading `src` into it until neither can go on;
    /// pass the FIN on once the pipe is empty. Returns (bytes written, whether the FIN was
    /// read or passed on now), or `Err(true)` when `src` failed and `Err(false)` when `dst`
    /// did.
    fn relay(&mut self, src: &TcpStream, dst: &TcpStream) -> Result<(u64, bool), bool> {
        let mut written = 0;
        let mut fin = false;
        loop {
            let mut progress = false;
            if self.queued > 0 {
                match splice(&self.read, None, dst, None, self.queued, FLAGS) {
                    Ok(n) => {
                        self.queued -= n;
                        written += n as u64;
                        progress = n > 0;
                    }
                    Err(Errno::EAGAIN) => {}
                    Err(Errno::EINTR) => progress = true,
                    Err(_) => return Err(false),
                }
            }
            if !self.eof && self.queued < self.cap {
                match splice(src, None, &self.write, None, self.cap - self.queued, FLAGS) {
                    Ok(0) => {
                        self.eof = true;
                        fin = true;
                        progress = true;
                    }
                    Ok(n) => {
                        self.queued += n;
                        progress = true;
                    }
                    Err(Errno::EAGAIN) => {}
                    Err(Errno::EINTR) => progress = true,
                    Err(_) => return Err(true),
                }
            }
            if self.eof && self.queued == 0 && !self.shut {
                self.shut = true;
                fin = true;
                match dst.shutdown(Shutdown::Write) {
                    Ok(()) => {}
                    // The destination already ended (its own RST shows on the next edge).
                    Err(e) if e.kind() == io::ErrorKind::NotConnected => {}
                    Err(_) => return Err(false),
                }
            }
            if !progress {
                return Ok((written, fin));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpListener;

    /// A pair of connected loopback sockets: (the one we keep, the one the relay gets).
    fn pair() -> (TcpStream, TcpStream) {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let a = TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (b, _) = l.accept().unwrap();
        b.set_nonblocking(true).unwrap();
        (a, b)
    }

    /// client app ⇄ [client leg | relay | server leg] ⇄ server app.
    fn relay(buffer: usize) -> (TcpStream, Conn, TcpStream) {
        let (client_app, client_leg) = pair();
        let (server_app, server_leg) = pair();
        let conn = Conn::new(client_leg, server_leg, true, buffer, 0).unwrap();
        (client_app, conn, server_app)
    }

    /// Pump until `done` or 2000 rounds (a few ms each at most).
    fn pump_until(conn: &mut Conn, moved: &mut Moved, mut done: impl FnMut(Step) -> bool) -> Step {
        for _ in 0..2000 {
            let s = conn.pump(1, moved);
            if done(s) {
                return s;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        panic!("relay did not get there");
    }

    #[test]
    fn bytes_cross_exactly_both_ways_through_a_pipe_smaller_than_the_transfer() {
        let (mut c, mut conn, mut s) = relay(4096);
        let data: Vec<u8> = (0..300_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        let sent = data.clone();
        let writer = std::thread::spawn(move || {
            c.write_all(&sent).unwrap();
            c.shutdown(Shutdown::Write).unwrap();
            let mut back = Vec::new();
            c.read_to_end(&mut back).unwrap();
            back
        });
        let reader = std::thread::spawn(move || {
            let mut got = Vec::new();
            s.read_to_end(&mut got).unwrap();
            s.write_all(b"thanks").unwrap();
            s.shutdown(Shutdown::Write).unwrap();
            got
        });
        let mut moved = Moved::default();
        let end = pump_until(&mut conn, &mut moved, |s| s != Step::Open);
        assert_eq!(end, Step::Closed);
        conn.finish();
        assert_eq!(reader.join().unwrap(), data);
        assert_eq!(writer.join().unwrap(), b"thanks");
        assert_eq!(
            moved,
            Moved {
                up: 300_000,
                down: 6
            }
        );
    }

    #[test]
    fn a_fin_half_closes_and_the_other_direction_stays_open() {
        let (mut c, mut conn, mut s) = relay(65_536);
        c.write_all(b"request").unwrap();
        c.shutdown(Shutdown::Write).unwrap();
        let mut moved = Moved::default();
        for _ in 0..2000 {
            assert_eq!(conn.pump(1, &mut moved), Step::Open);
            if conn.up.shut {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(conn.up.shut && moved.up == 7, "{moved:?}");
        let mut got = Vec::new();
        s.read_to_end(&mut got).unwrap(); // EOF: the FIN was passed on
        assert_eq!(got, b"request");
        // The server can still answer, many times, after the client's FIN.
        for i in 0..3u8 {
            s.write_all(&[i; 1000]).unwrap();
            let mut buf = [0u8; 1000];
            let mut n = 0;
            while n < 1000 {
                assert_eq!(conn.pump(2, &mut moved), Step::Open);
                match c.read(&mut buf[n..]) {
                    Ok(k) => n += k,
                    Err(e) => panic!("{e}"),
                }
            }
            assert_eq!(buf, [i; 1000]);
        }
        s.shutdown(Shutdown::Write).unwrap();
        assert_eq!(
            pump_until(&mut conn, &mut moved, |s| s != Step::Open),
            Step::Closed
        );
    }

    #[test]
    fn a_reset_server_resets_the_client() {
        let (mut c, mut conn, s) = relay(65_536);
        abort(&s);
        drop(s);
        let mut moved = Moved::default();
        let step = pump_until(&mut conn, &mut moved, |s| s != Step::Open);
        assert_eq!(step, Step::Reset(Leg::Server));
        conn.reset();
        let mut buf = [0u8; 16];
        let e = c.read(&mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::ConnectionReset, "{e}");
    }

    #[test]
    fn an_open_connection_dropped_as_by_a_dying_daemon_resets_both_ends() {
        let (mut c, mut conn, mut s) = relay(65_536);
        c.write_all(b"partial").unwrap();
        let mut moved = Moved::default();
        for _ in 0..2000 {
            conn.pump(1, &mut moved);
            if moved.up == 7 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert_eq!(moved.up, 7);
        drop(conn);
        let mut buf = [0u8; 16];
        assert_eq!(
            c.read(&mut buf).unwrap_err().kind(),
            io::ErrorKind::ConnectionReset
        );
        assert_eq!(s.read(&mut buf).unwrap(), 7);
        assert_eq!(
            s.read(&mut buf).unwrap_err().kind(),
            io::ErrorKind::ConnectionReset
        );
    }

    #[test]
    fn a_full_pipe_stops_reading_and_backpressure_holds_the_rest_in_the_sender() {
        let (mut c, mut conn, _s) = relay(4096);
        c.set_nonblocking(true).unwrap();
        // The server never reads: the relay holds one pipe and no more.
        let mut sent = 0usize;
        let chunk = [7u8; 65_536];
        let mut moved = Moved::default();
        let mut blocked = 0;
        for _ in 0..2000 {
            conn.pump(1, &mut moved);
            match c.write(&chunk) {
                Ok(n) => sent += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => blocked += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!(conn.up.cap, 4096);
        // Full, and no fuller: a pipe counts pages, and a socket's data may fill one partly.
        assert!((1..=4096).contains(&conn.queued()), "{}", conn.queued());
        // The client was stopped: the rest waits in the sockets' buffers, which are bounded.
        assert!(blocked > 1000, "{blocked} {sent}");
        assert!(moved.up < sent as u64);
    }
}
