//! The only module with `unsafe`: thin, checked wrappers over the Linux system calls the
//! emulator needs and the standard library does not offer — the TUN ioctl, `setns`, epoll,
//! timerfd, a self-pipe for signals, `kill`, the parent-death signal and the timer slack.
//!
//! Every wrapper turns a `-1` return into an [`io::Error`] and owns its descriptors through
//! [`OwnedFd`], so nothing here can leak a descriptor or touch memory it does not own.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};

fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// CLOCK_MONOTONIC in nanoseconds.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// CPU time this thread has run, in nanoseconds (CLOCK_THREAD_CPUTIME_ID: a system call, not
/// the vDSO). Under a hypervisor with steal-time accounting, time stolen from the vCPU is not
/// counted, so wall time minus this over a stretch of work is what the loop lost to others.
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the calling thread's CPU clock always exists.
    unsafe {
        libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts);
    }
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid cannot fail and takes no arguments.
    unsafe { libc::geteuid() }
}

/// Lower this thread's timer slack to 1 ns (the default, 50 µs, would add up to 50 µs of
/// lateness to every timerfd wake-up).
pub fn set_timer_slack_1ns() {
    // SAFETY: PR_SET_TIMERSLACK takes one integer argument.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong);
    }
}

/// Run this thread under SCHED_FIFO at `priority` (1–99), so that ordinary (CFS) processes —
/// the emulated programs included — cannot delay its wake-ups; children forked afterwards
/// start under the normal policy again (`SCHED_RESET_ON_FORK`). The loop blocks in epoll when
/// idle, and the kernel's real-time throttling keeps 5 % of each CPU for others anyway.
pub fn set_realtime(priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` lives across the call; pid 0 is the calling thread.
    check(unsafe {
        libc::sched_setscheduler(0, libc::SCHED_FIFO | libc::SCHED_RESET_ON_FORK, &param)
    })
    .map(|_| ())
}

/// Back to the normal (CFS) policy for this thread.
pub fn set_normal() {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: as in `set_realtime`.
    unsafe {
        libc::sched_setscheduler(0, libc::SCHED_OTHER, &param);
    }
}

/// Let a write to a closed pipe end the process quietly, as it ends any Unix filter
/// (`satpep sim | head`): Rust starts with SIGPIPE ignored, so `println!` would panic instead.
/// Only for commands whose writes are their output: the emulator and the daemons keep it
/// ignored, so that a peer closing a socket is an error they handle, not their death.
pub fn default_sigpipe() {
    // SAFETY: setting a signal's disposition to the default touches no memory of ours.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Whether `fd` is a terminal.
pub fn isatty(fd: RawFd) -> bool {
    // SAFETY: isatty only inspects the descriptor number.
    unsafe { libc::isatty(fd) == 1 }
}

/// Columns of the terminal on `fd`, if it is one and says.
pub fn terminal_columns(fd: RawFd) -> Option<usize> {
    // SAFETY: an all-zero winsize is valid; TIOCGWINSZ fills it in.
    let mut ws: libc::winsize = unsafe { std::mem::zeroed() };
    // SAFETY: `ws` lives across the call and has the layout TIOCGWINSZ writes.
    let r = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut ws) };
    (r == 0 && ws.ws_col > 0).then_some(usize::from(ws.ws_col))
}

/// Make `fd` non-blocking.
pub fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    // SAFETY: F_GETFL/F_SETFL take and return plain integers.
    let flags = check(unsafe { libc::fcntl(fd, libc::F_GETFL) })?;
    // SAFETY: as above.
    check(unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) })?;
    Ok(())
}

/// Read what is waiting on non-blocking `fd` into `buf`: `Ok(Some(0))` at end of file,
/// `Ok(None)` when nothing is waiting.
pub fn read_fd(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
    would_block(n)
}

/// Send `sig` to process `pid` (a negative `pid` names a process group). Errors (the process
/// is gone) are returned, not fatal.
pub fn kill(pid: i32, sig: i32) -> io::Result<()> {
    // SAFETY: kill takes plain integers.
    check(unsafe { libc::kill(pid, sig) }).map(|_| ())
}

/// Make the command's process receive SIGKILL when the thread that spawned it dies, so that a
/// crashed emulator does not leave `iperf3 -s` running in a namespace about to vanish.
pub fn kill_child_with_parent(cmd: &mut Command) {
    // SAFETY: the closure runs between fork and exec and only calls prctl, which is
    // async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            Ok(())
        });
    }
}

/// `struct ifreq` as TUNSETIFF reads it: the name, the flags, and padding to 40 bytes.
#[repr(C)]
struct IfReq {
    name: [u8; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

/// Most parts [`Tun::write_gather`] writes at once: a super-packet's headers and the payloads of
/// up to 64 segments, with room to spare (the kernel allows 1 024).
pub const GATHER_MAX: usize = 72;

/// A TUN device, non-blocking: IPv4 packets without any header (`IFF_TUN | IFF_NO_PI`), or,
/// with offloads, each behind a `struct virtio_net_hdr` (`IFF_VNET_HDR`, see
/// [`crate::vnet`]). The device is not persistent: it disappears when this descriptor is
/// closed, even if the process is killed.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    vnet_hdr: bool,
}

/// Offloads asked of an offloading device (`TUNSETOFFLOAD`): checksums left to us, and IPv4
/// TCP super-packets (TSO4 needs CSUM). No TSO6 (the emulator carries IPv4), no ECN-marked
/// super-packets (the kernel cuts those itself), no UFO/USO.
const TUN_OFFLOADS: libc::c_uint = libc::TUN_F_CSUM | libc::TUN_F_TSO4;

impl Tun {
    /// Create TUN device `name` inside the network namespace whose handle is the file
    /// `netns` (e.g. `/var/run/netns/satpep-…`). This thread enters the namespace for the
    /// ioctl and returns to its own namespace before returning, whatever happens.
    pub fn create_in_netns(netns: &Path, name: &str) -> io::Result<Self> {
        Self::create_in_netns_with(netns, name, false)
    }

    /// [`create_in_netns`](Self::create_in_netns), with offloads when `offload` is set and
    /// the kernel grants them (see [`create_with`](Self::create_with)).
    pub fn create_in_netns_with(netns: &Path, name: &str, offload: bool) -> io::Result<Self> {
        let own = File::open("/proc/thread-self/ns/net")?;
        let target = File::open(netns)?;
        // SAFETY: both descriptors are open namespace files.
        check(unsafe { libc::setns(target.as_raw_fd(), libc::CLONE_NEWNET) })?;
        let tun = Self::create_with(name, offload);
        // SAFETY: as above; going back cannot fail for our own namespace unless the kernel is
        // broken, and then continuing in the wrong namespace would be worse than aborting.
        let back = check(unsafe { libc::setns(own.as_raw_fd(), libc::CLONE_NEWNET) });
        if let Err(e) = back {
            panic!("cannot return to the original network namespace: {e}");
        }
        tun
    }

    /// Create TUN device `name` in this process's own network namespace.
    pub fn create_here(name: &str) -> io::Result<Self> {
        Self::create_with(name, false)
    }

    /// Create TUN device `name` here; with `offload`, as an `IFF_VNET_HDR` device with a
    /// 10-byte little-endian header and checksum and TSO4 offloads. When the kernel refuses
    /// any of that, the device is closed (it vanishes) and made again without: see
    /// [`vnet_hdr`](Self::vnet_hdr).
    pub fn create_with(name: &str, offload: bool) -> io::Result<Self> {
        if offload {
            if let Ok(tun) = Self::open(name, true).and_then(|t| t.enable_offloads().map(|()| t)) {
                return Ok(tun);
            }
        }
        Self::open(name, false)
    }

    /// Whether packets read and written carry a `virtio_net_hdr` (offloads granted).
    pub fn vnet_hdr(&self) -> bool {
        self.vnet_hdr
    }

    fn open(name: &str, vnet_hdr: bool) -> io::Result<Self> {
        let path = CString::new("/dev/net/tun").map_err(io::Error::other)?;
        // SAFETY: `path` is a valid NUL-terminated string.
        let raw = check(unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        })?;
        // SAFETY: `raw` was just returned by open and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut flags = libc::IFF_TUN | libc::IFF_NO_PI;
        if vnet_hdr {
            flags |= libc::IFF_VNET_HDR;
        }
        let mut req = IfReq {
            name: [0; libc::IFNAMSIZ],
            flags: flags as libc::c_short,
            _pad: [0; 22],
        };
        let n = name.len().min(libc::IFNAMSIZ - 1);
        req.name[..n].copy_from_slice(&name.as_bytes()[..n]);
        // SAFETY: `req` is a properly laid out ifreq that lives across the call.
        check(unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) })?;
        Ok(Self { fd, vnet_hdr })
    }

    /// Header size, byte order and offloads of an `IFF_VNET_HDR` device.
    fn enable_offloads(&self) -> io::Result<()> {
        let size = crate::vnet::VNET_HDR_LEN as libc::c_int;
        // SAFETY: TUNSETVNETHDRSZ reads one int through the pointer, which lives across the
        // call.
        check(unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::TUNSETVNETHDRSZ, &size) })?;
        let le: libc::c_int = 1;
        // SAFETY: TUNSETVNETLE reads one int through the pointer, which lives across the call.
        // Kernels without it (before 4.1, or built without cross-endian support) refuse; on a
        // little-endian machine the header is little-endian anyway.
        let le_set = check(unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::TUNSETVNETLE, &le) });
        if le_set.is_err() && cfg!(target_endian = "big") {
            return Err(io::Error::other(
                "cannot make the virtio_net_hdr little-endian",
            ));
        }
        // SAFETY: TUNSETOFFLOAD takes the flags as the integer argument itself.
        check(unsafe {
            libc::ioctl(
                self.fd.as_raw_fd(),
                libc::TUNSETOFFLOAD,
                libc::c_ulong::from(TUN_OFFLOADS),
            )
        })?;
        Ok(())
    }

    /// Read one packet into `buf`; `Ok(None)` when none is waiting.
    #[inline]
    pub fn read(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is valid for writes of `buf.len()` bytes.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        would_block(n)
    }

    /// Write one packet; `Ok(None)` when the device cannot take it now.
    #[inline]
    pub fn write(&self, buf: &[u8]) -> io::Result<Option<usize>> {
        // SAFETY: `buf` is valid for reads of `buf.len()` bytes.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        would_block(n)
    }

    /// Write one packet gathered from `parts` (headers, then payloads, without joining them
    /// first: the kernel's copy is the only one); `Ok(None)` when the device cannot take it now.
    /// Up to [`GATHER_MAX`] parts; more are an `InvalidInput` error.
    #[inline]
    pub fn write_gather(&self, parts: &[&[u8]]) -> io::Result<Option<usize>> {
        if parts.len() > GATHER_MAX {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} parts for one write, at most {GATHER_MAX}", parts.len()),
            ));
        }
        let mut iov = [libc::iovec {
            iov_base: std::ptr::null_mut(),
            iov_len: 0,
        }; GATHER_MAX];
        for (v, p) in iov.iter_mut().zip(parts) {
            *v = libc::iovec {
                iov_base: p.as_ptr().cast_mut().cast(),
                iov_len: p.len(),
            };
        }
        // SAFETY: the first `parts.len()` iovecs describe live slices valid for reads of their
        // lengths; writev only reads them.
        let n = unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), parts.len() as i32) };
        would_block(n)
    }

    /// The descriptor, to register with [`Epoll`].
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

fn would_block(n: isize) -> io::Result<Option<usize>> {
    if n >= 0 {
        return Ok(Some(n as usize));
    }
    let e = io::Error::last_os_error();
    match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted => Ok(None),
        _ => Err(e),
    }
}

/// A level-triggered epoll instance; each registered descriptor carries a `u64` token.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
    events: Vec<libc::epoll_event>,
}

impl Epoll {
    /// An epoll instance that returns up to 64 events per wait.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain flags.
        let raw = check(unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) })?;
        // SAFETY: fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Self {
            fd,
            events: vec![libc::epoll_event { events: 0, u64: 0 }; 64],
        })
    }

    /// Watch `fd` for input, reporting it as `token`.
    pub fn add(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: libc::EPOLLIN as u32,
            u64: token,
        };
        // SAFETY: `ev` lives across the call; `fd` is a descriptor the caller keeps open.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Watch `fd` for input, output room, the peer's FIN and errors, edge-triggered, reporting
    /// it as `token`: for a relay that moves bytes until the kernel says `EAGAIN` and then
    /// waits for the next change on either side (the daemon's kernel split engine).
    pub fn add_edge(&self, fd: RawFd, token: u64) -> io::Result<()> {
        let mut ev = libc::epoll_event {
            events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
            u64: token,
        };
        // SAFETY: `ev` lives across the call; `fd` is a descriptor the caller keeps open.
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_ADD, fd, &mut ev) })?;
        Ok(())
    }

    /// Stop watching `fd` (before closing it, or once it reached end of file).
    pub fn delete(&self, fd: RawFd) -> io::Result<()> {
        let mut ev = libc::epoll_event { events: 0, u64: 0 };
        // SAFETY: `ev` lives across the call (old kernels want a non-null pointer).
        check(unsafe { libc::epoll_ctl(self.fd.as_raw_fd(), libc::EPOLL_CTL_DEL, fd, &mut ev) })?;
        Ok(())
    }

    /// Wait up to `timeout_ns` (`None`: forever) with nanosecond resolution (`epoll_pwait2`,
    /// Linux 5.11) and call `f` with every ready token; one system call instead of re-arming a
    /// timerfd and waiting. `Ok(None)` when the kernel (or this architecture) lacks it: use
    /// [`wait`](Self::wait) with a [`TimerFd`] instead.
    pub fn wait_ns(
        &mut self,
        timeout_ns: Option<u64>,
        mut f: impl FnMut(u64),
    ) -> io::Result<Option<usize>> {
        #[cfg(target_arch = "x86_64")]
        {
            let ts = timeout_ns.map(|ns| libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            });
            let tsp = ts
                .as_ref()
                .map_or(std::ptr::null(), |t| t as *const libc::timespec);
            // SAFETY: `events` is a valid buffer of `len` entries; `tsp` is null or points to
            // a timespec that lives across the call; no signal mask.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_epoll_pwait2,
                    self.fd.as_raw_fd(),
                    self.events.as_mut_ptr(),
                    self.events.len() as libc::c_int,
                    tsp,
                    std::ptr::null::<libc::sigset_t>(),
                    0usize,
                )
            };
            if n < 0 {
                let e = io::Error::last_os_error();
                return match e.raw_os_error() {
                    Some(libc::ENOSYS) => Ok(None),
                    Some(libc::EINTR) => Ok(Some(0)),
                    _ => Err(e),
                };
            }
            let n = n as usize;
            for ev in &self.events[..n] {
                f(ev.u64);
            }
            Ok(Some(n))
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (timeout_ns, &mut f);
            Ok(None)
        }
    }

    /// Wait up to `timeout_ms` (−1: forever) and call `f` with the token of every ready
    /// descriptor. Returns the number of events.
    pub fn wait(&mut self, timeout_ms: i32, mut f: impl FnMut(u64)) -> io::Result<usize> {
        // SAFETY: `events` is a valid buffer of `len` entries.
        let n = unsafe {
            libc::epoll_wait(
                self.fd.as_raw_fd(),
                self.events.as_mut_ptr(),
                self.events.len() as libc::c_int,
                timeout_ms,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted {
                Ok(0)
            } else {
                Err(e)
            };
        }
        let n = n as usize;
        for ev in &self.events[..n] {
            f(ev.u64);
        }
        Ok(n)
    }
}

/// A CLOCK_MONOTONIC timerfd armed at absolute instants.
#[derive(Debug)]
pub struct TimerFd {
    fd: OwnedFd,
    armed: Option<u64>,
}

impl TimerFd {
    /// A disarmed, non-blocking timer.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain flags.
        let raw = check(unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        })?;
        // SAFETY: fresh descriptor owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        Ok(Self { fd, armed: None })
    }

    /// Fire at absolute CLOCK_MONOTONIC `at_ns` (or never, with `None`). A no-op when already
    /// armed for that instant, so the loop can call this on every pass.
    pub fn set(&mut self, at_ns: Option<u64>) -> io::Result<()> {
        if self.armed == at_ns {
            return Ok(());
        }
        // An all-zero it_value disarms; 0 ns absolute would too, so fire at 1 ns instead.
        let ns = at_ns.map_or(0, |t| t.max(1));
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (ns / 1_000_000_000) as libc::time_t,
                tv_nsec: (ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: `spec` lives across the call; old value not requested.
        check(unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        })?;
        self.armed = at_ns;
        Ok(())
    }

    /// Consume an expiry (after epoll reported the timer readable); the timer is then
    /// disarmed until the next [`set`](Self::set).
    pub fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: `buf` is valid for 8 bytes; a non-blocking read that finds nothing is fine.
        unsafe {
            libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8);
        }
        self.armed = None;
    }

    /// The descriptor, to register with [`Epoll`].
    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Write end of the signal self-pipe, read by the handler (−1: none installed).
static SIGNAL_PIPE: AtomicI32 = AtomicI32::new(-1);

extern "C" fn on_signal(sig: libc::c_int) {
    let fd = SIGNAL_PIPE.load(Ordering::Relaxed);
    if fd >= 0 {
        let b = sig as u8;
        // SAFETY: write is async-signal-safe; a full pipe just loses the byte (the loop
        // already has one to wake for).
        unsafe {
            libc::write(fd, (&raw const b).cast(), 1);
        }
    }
}

/// SIGINT, SIGTERM, SIGHUP and SIGCHLD delivered as bytes on a non-blocking pipe, so the event loop
/// sees them as input (the classic self-pipe trick). Handlers are reset to the default when
/// this is dropped. Child processes start with default handlers (exec resets caught signals).
#[derive(Debug)]
pub struct SignalPipe {
    read: OwnedFd,
    _write: OwnedFd,
}

/// The signals [`SignalPipe`] catches.
const CAUGHT: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGCHLD];

/// What [`SignalPipe::drain`] found.
#[derive(Clone, Copy, Debug, Default, Eq, PartialEq)]
pub struct Caught {
    /// SIGINT (Ctrl-C).
    pub interrupt: bool,
    /// SIGTERM or SIGHUP (`kill`, `timeout`, a closed terminal).
    pub terminate: bool,
    /// SIGCHLD: a child changed state.
    pub child: bool,
}

impl SignalPipe {
    /// Install the handlers. Only one may exist per process at a time.
    pub fn install() -> io::Result<Self> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors.
        check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) })?;
        // SAFETY: fresh descriptors owned by nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        if SIGNAL_PIPE
            .compare_exchange(-1, write.as_raw_fd(), Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return Err(io::Error::other(
                "another emulator is already running in this process",
            ));
        }
        for sig in CAUGHT {
            set_handler(sig, on_signal as extern "C" fn(libc::c_int) as usize)?;
        }
        Ok(Self {
            read,
            _write: write,
        })
    }

    /// Drain the pipe; returns which signals arrived.
    pub fn drain(&self) -> Caught {
        let mut got = Caught::default();
        let mut buf = [0u8; 64];
        loop {
            // SAFETY: `buf` is valid for 64 bytes.
            let n = unsafe { libc::read(self.read.as_raw_fd(), buf.as_mut_ptr().cast(), 64) };
            if n <= 0 {
                break;
            }
            for &b in &buf[..n as usize] {
                match libc::c_int::from(b) {
                    libc::SIGCHLD => got.child = true,
                    libc::SIGINT => got.interrupt = true,
                    _ => got.terminate = true,
                }
            }
        }
        got
    }

    /// The read end, to register with [`Epoll`].
    pub fn raw_fd(&self) -> RawFd {
        self.read.as_raw_fd()
    }
}

impl Drop for SignalPipe {
    fn drop(&mut self) {
        for sig in CAUGHT {
            let _ = set_handler(sig, libc::SIG_DFL);
        }
        SIGNAL_PIPE.store(-1, Ordering::SeqCst);
    }
}

fn set_handler(sig: libc::c_int, handler: usize) -> io::Result<()> {
    // SAFETY: an all-zero sigaction is valid (empty mask, no flags) before we fill it in.
    let mut sa: libc::sigaction = unsafe { std::mem::zeroed() };
    sa.sa_sigaction = handler;
    sa.sa_flags = libc::SA_RESTART;
    // SAFETY: `sa` is initialised; the handler only calls async-signal-safe functions.
    check(unsafe { libc::sigaction(sig, &sa, std::ptr::null_mut()) })?;
    Ok(())
}
