#!/bin/sh
# PEPsal 2.0.2 (CNES's split-TCP PEP) as the gateway-side peer of the deployment benchmark
# (bench/deploy/run.sh). Nothing of PEPsal is committed here: this script builds it into
# /opt/pepsal from a source it is given, and runs it in PEPsal's documented integrated mode
# (TPROXY + policy routing; README.md of PEPsal, "Network Configuration").
#
#   sh bench/peers/pepsal-gateway.sh build     # build/install into $PEPSAL_PREFIX if not there yet
#                                              # (do it before a run: `run` builds too, but
#                                              # inside run.sh's 2 s start-up window)
#   GATEWAY_CMD='sh /work/main/bench/peers/pepsal-gateway.sh run' bench/deploy/run.sh
#
# `run` must be started inside the gateway namespace (run.sh does: `ip netns exec $P-gw sh -c
# "$GATEWAY_CMD"`). It adds one nftables table, one `ip rule` and one routing table, runs
# pepsal in the foreground, and on SIGTERM/SIGINT (or pepsal's own exit) stops pepsal and
# removes every one of them. `clean` removes them without running anything (after a kill -9).
#
# Environment:
#   PEPSAL_SRC     PEPsal source: a git repository (the tag $PEPSAL_REF is exported from it) or
#                  an unpacked source tree (default /work/.mirror/CNES+pepsal/repo, the copy of
#                  github.com/CNES/pepsal this was written against)
#   PEPSAL_REF     tag or commit to build from a git PEPSAL_SRC (default pepsal-2.0.2, commit
#                  1045d3c828e2d37a8faa210ab8e60ecb2b2a390e)
#   PEPSAL_PREFIX  install prefix (default /opt/pepsal, or /opt/pepsal/bind-client for
#                  PEPSAL_BIND_CLIENT=1, so both builds coexist; binary $PEPSAL_PREFIX/bin/pepsal)
#   PEPSAL_PORT    PEPsal's listening port (default 5000, PEPsal's own default)
#   PEPSAL_PORTS   destination TCP ports to split (default 5001, run.sh's server port; an nft
#                  set such as `{ 80, 443, 5001 }` works too)
#   PEPSAL_IIF     interface(s) the satellite side arrives on, an nft iifname pattern
#                  (default `satpep*`, the emulator's TUN device)
#   PEPSAL_MARK    fwmark and routing table number of the local delivery (default 7700;
#                  chosen not to collide with satpep's own daemon tables)
#   PEPSAL_ARGS    extra pepsal options (e.g. `-C bbr`, `-n`); default none
#   PEPSAL_BIND_CLIENT=1  build a variant whose server-side connection is bound to the
#                  client's address (see patch_bind_client); default 0, upstream behaviour:
#                  the server sees the gateway's address 10.77.2.1, not the client's
#
# Note on stopping: run.sh sends SIGTERM to the `sh -c "$GATEWAY_CMD"` process, and dash
# does not exec a -c command's last command, so the signal reaches that wrapper, not this
# script. Use GATEWAY_CMD='exec sh …/pepsal-gateway.sh run' to have it delivered here; without
# `exec`, `run` notices its parent's death within 0.2 s and cleans up then (run.sh deletes
# the namespace right after, which removes the rules too).
set -eu

PEPSAL_SRC=${PEPSAL_SRC:-/work/.mirror/CNES+pepsal/repo}
PEPSAL_REF=${PEPSAL_REF:-pepsal-2.0.2}
PEPSAL_PORT=${PEPSAL_PORT:-5000}
PEPSAL_PORTS=${PEPSAL_PORTS:-5001}
PEPSAL_IIF=${PEPSAL_IIF:-satpep*}
PEPSAL_MARK=${PEPSAL_MARK:-7700}
PEPSAL_ARGS=${PEPSAL_ARGS:-}
PEPSAL_BIND_CLIENT=${PEPSAL_BIND_CLIENT:-0}
if [ "$PEPSAL_BIND_CLIENT" = 1 ]; then
    PEPSAL_PREFIX=${PEPSAL_PREFIX:-/opt/pepsal/bind-client}
else
    PEPSAL_PREFIX=${PEPSAL_PREFIX:-/opt/pepsal}
fi
PEPSAL_BIN=$PEPSAL_PREFIX/bin/pepsal
# Our own nftables table: deleting it removes every nft statement this script added, and it
# never touches other tables (PEPsal's example config starts with `flush ruleset`, which would
# also wipe whatever else runs in the namespace).
NFT_TABLE=pepsal_gw

log() { echo "pepsal-gateway: $*" >&2; }

# --- build -------------------------------------------------------------------------------

# Runs a command in the machine's own network namespace when this one has no route out (the
# benchmark's namespaces have none): apt-get needs the package mirror.
in_host_net() {
    if ip route get 1.1.1.1 >/dev/null 2>&1 || [ ! -e /proc/1/ns/net ]; then
        "$@"
    else
        nsenter --net=/proc/1/ns/net "$@"
    fi
}

# PEPsal 2.0.2 needs only autotools, libtool and a C compiler (its configure checks pthread,
# rt and m; the libnetfilter-queue dependency of the 1.x series is gone), and nft/ip to run.
install_deps() {
    missing=""
    for pair in autoconf:autoconf automake:automake libtoolize:libtool gcc:gcc make:make \
        nft:nftables ip:iproute2 git:git; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing="$missing ${pair#*:}"
    done
    [ -z "$missing" ] && return 0
    log "installing build dependencies:$missing"
    # shellcheck disable=SC2086
    in_host_net sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing" >&2
}

# The stamp names the source and the local patch, so a build from before the patch (or of
# another version) is redone.
STAMP_TEXT="pepsal-2.0.2 + rlimit clamp"
[ "$PEPSAL_BIND_CLIENT" = 1 ] && STAMP_TEXT="$STAMP_TEXT + bind client"
built() {
    [ -x "$PEPSAL_BIN" ] && "$PEPSAL_BIN" -V 2>/dev/null | grep -q "ver\. 2\.0\.2" &&
        [ "$(cat "$PEPSAL_PREFIX/.built" 2>/dev/null)" = "$STAMP_TEXT" ]
}

# The one local change to PEPsal. At start it calls setrlimit(RLIMIT_NOFILE) with a hard limit
# of 1048576 and a soft one of 10 × max_conns (21120 by default) and exits ("Failed to set new
# ressources limits", EPERM) when that fails: raising a hard limit needs CAP_SYS_RESOURCE,
# which this machine's root lacks (its hard limit is 20000). The patch keeps the process's
# hard limit when it is lower, and the soft limit within it; nothing else changes.
patch_rlimit() {
    f=src/conntrack.c
    grep -q 'new_lim.rlim_max = 1048576;' "$f" || { log "$f: rlimit line not found"; exit 1; }
    sed -i 's|^\( *\)new_lim.rlim_max = 1048576;|\1struct rlimit old_lim;\
\1new_lim.rlim_max = 1048576;\
\1if (getrlimit(RLIMIT_NOFILE, \&old_lim) == 0 \&\& old_lim.rlim_max < new_lim.rlim_max)\
\1    new_lim.rlim_max = old_lim.rlim_max; /* satpep bench: no CAP_SYS_RESOURCE */\
\1if (new_lim.rlim_cur > new_lim.rlim_max)\
\1    new_lim.rlim_cur = new_lim.rlim_max;|' "$f"
    grep -q 'satpep bench: no CAP_SYS_RESOURCE' "$f" || { log "$f: patch did not apply"; exit 1; }
}

# Opt-in (PEPSAL_BIND_CLIENT=1), not upstream 2.0.2: PEPsal up to 1.9.0 bound its connection
# toward the server to the client's address (IP_TRANSPARENT is still set on that socket), so
# the server saw the client; upstream commit 986a413 ("Removed useless bind on proxy local
# socket", in every tag from pepsal-1.9.1 on, 2.0.2 included) dropped the bind, and 2.0.2's
# server-side connection leaves from the gateway's own address. This puts the bind back for
# IPv4 (address only, port chosen by the kernel); the `socket transparent` rule below already
# delivers the server's answers to that socket.
patch_bind_client() {
    f=src/listener.c
    grep -q '^ *r_servaddr.sin_port = htons(r_port);$' "$f" || { log "$f: connect line not found"; exit 1; }
    sed -i 's|^\( *\)r_servaddr.sin_port = htons(r_port);$|&\
\1{ /* satpep bench: bind to the client address */\
\1    struct sockaddr_in l_addr;\
\1    memset(\&l_addr, 0, sizeof(l_addr));\
\1    l_addr.sin_family = AF_INET;\
\1    l_addr.sin_addr.s_addr = cliaddr.sin6_addr.s6_addr32[3];\
\1    if (bind(out_fd, (struct sockaddr*)\&l_addr, sizeof(l_addr)) < 0)\
\1        pep_warning("Failed to bind to the client address! [%s:%d]", strerror(errno), errno);\
\1}|' "$f"
    grep -q 'satpep bench: bind to the client address' "$f" || { log "$f: patch did not apply"; exit 1; }
}

build() {
    if built; then
        return 0
    fi
    install_deps
    src=$PEPSAL_PREFIX/src
    rm -rf "$src"
    mkdir -p "$src"
    # A fresh copy of the source per build, so a half-finished earlier build never leaks in.
    if git -C "$PEPSAL_SRC" rev-parse --verify -q "$PEPSAL_REF^{commit}" >/dev/null 2>&1; then
        log "exporting $PEPSAL_REF ($(git -C "$PEPSAL_SRC" rev-parse "$PEPSAL_REF^{commit}")) from $PEPSAL_SRC"
        git -C "$PEPSAL_SRC" archive "$PEPSAL_REF" | tar -x -C "$src"
    elif [ -f "$PEPSAL_SRC/configure.ac" ]; then
        log "copying the source tree $PEPSAL_SRC"
        cp -R "$PEPSAL_SRC"/. "$src"/
    else
        log "PEPSAL_SRC=$PEPSAL_SRC is neither a git repository with $PEPSAL_REF nor a source tree"
        exit 1
    fi
    (
        cd "$src"
        patch_rlimit
        if [ "$PEPSAL_BIND_CLIENT" = 1 ]; then
            patch_bind_client
        fi
        # autogen.sh runs aclocal/libtoolize/autoconf/autoheader/automake, then configure with
        # --enable-fail-on-warning (-Werror); the later --disable-… lets a newer compiler's
        # new warnings through. stderr logging makes -v print each split connection (without
        # it PEPsal logs nothing at all).
        sh ./autogen.sh --prefix="$PEPSAL_PREFIX" --disable-fail-on-warning \
            --enable-stderr-logging >&2
        make -j"$(nproc)" >&2
        make install >&2
    )
    echo "$STAMP_TEXT" >"$PEPSAL_PREFIX/.built"
    built || { log "build finished but $PEPSAL_BIN -V does not report 2.0.2"; exit 1; }
    log "built $("$PEPSAL_BIN" -V) into $PEPSAL_PREFIX"
}

# --- network configuration ---------------------------------------------------------------

# PEPsal's integrated mode, as its README describes it, plus the return direction:
#  - `ip rule fwmark M lookup M` + `local 0.0.0.0/0 dev lo table M`: a marked segment is
#    delivered to a local socket although its destination address is not ours.
#  - `socket transparent 1`: a segment that belongs to one of pepsal's transparent sockets is
#    marked, so it is delivered locally. This carries (a) the rest of a split connection from
#    the client (the accepted socket is bound to the server's address) and (b) the return
#    direction: pepsal connects to the server *from the client's address* (IP_TRANSPARENT),
#    so the server's answers come back on lan0 addressed to 10.77.1.2 and would otherwise be
#    forwarded to the satellite instead of reaching pepsal. (PEPsal's OpenSAND example gets
#    the same effect by TPROXYing the LAN interface too; the kernel's tproxy.txt uses this
#    socket match.) It comes first, so established segments skip the TPROXY lookup.
#  - `fib daddr type local accept`: connections to the gateway itself are never split.
#  - `tproxy to 127.0.0.1:PORT`: a new TCP connection arriving from the satellite side to one
#    of $PEPSAL_PORTS is handed to pepsal's listener (bound to [::]:PORT, IP_TRANSPARENT,
#    which also takes IPv4), with the mark so it is routed locally.
#  Counters on each rule are printed at exit: evidence that connections were split.
rules_up() {
    nft -f - <<EOF
table ip $NFT_TABLE {}
delete table ip $NFT_TABLE
table ip $NFT_TABLE {
	chain prerouting {
		type filter hook prerouting priority mangle; policy accept;
		meta l4proto tcp socket transparent 1 counter meta mark set $PEPSAL_MARK accept
		fib daddr type local accept
		iifname "$PEPSAL_IIF" tcp dport $PEPSAL_PORTS counter tproxy to 127.0.0.1:$PEPSAL_PORT meta mark set $PEPSAL_MARK accept
	}
}
EOF
    ip rule del fwmark "$PEPSAL_MARK" lookup "$PEPSAL_MARK" 2>/dev/null || true
    ip rule add fwmark "$PEPSAL_MARK" lookup "$PEPSAL_MARK"
    ip route replace local 0.0.0.0/0 dev lo table "$PEPSAL_MARK"
}

# Removes exactly what rules_up added; each step tolerates its object being gone already.
rules_down() {
    if nft list table ip "$NFT_TABLE" >/dev/null 2>&1; then
        log "nft counters at exit:"
        nft list table ip "$NFT_TABLE" | grep counter >&2 || true
        nft delete table ip "$NFT_TABLE" || true
    fi
    while ip rule del fwmark "$PEPSAL_MARK" lookup "$PEPSAL_MARK" 2>/dev/null; do :; done
    ip route flush table "$PEPSAL_MARK" 2>/dev/null || true
}

# --- run ---------------------------------------------------------------------------------

run() {
    build
    # The sysctls the path depends on, for the log only (this script changes none): routers
    # forward (ip_forward=1, set by topology.sh); each direction of a split connection arrives
    # on the interface its source address routes back through, so any rp_filter mode passes.
    log "ip_forward=$(cat /proc/sys/net/ipv4/ip_forward) rp_filter(all)=$(cat /proc/sys/net/ipv4/conf/all/rp_filter)"
    PID=""
    stop() {
        trap - EXIT INT TERM
        if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
            kill -TERM "$PID" 2>/dev/null || true
            # pepsal has no SIGTERM handler: the default action ends it at once.
            wait "$PID" 2>/dev/null || true
        fi
        log "pepsal stopped; removing the rules"
        rules_down
        exit 0
    }
    trap stop EXIT INT TERM
    rules_up
    log "rules up: $PEPSAL_IIF tcp dport $PEPSAL_PORTS -> tproxy 127.0.0.1:$PEPSAL_PORT, fwmark/table $PEPSAL_MARK"
    # Foreground (no -d): -v logs each intercepted connection ("New incomming connection from
    # …", "Connecting to …") to stderr, i.e. run.sh's gateway.log.
    # shellcheck disable=SC2086
    "$PEPSAL_BIN" -v -p "$PEPSAL_PORT" $PEPSAL_ARGS &
    PID=$!
    log "pepsal $PID listening on port $PEPSAL_PORT"
    # Wait in short slices (`sleep & wait`, so a trapped signal is handled at once): stop when
    # pepsal dies by itself, or when the parent that started us is gone (see the note on
    # stopping at the top: a signal sent to a non-exec'ing `sh -c` wrapper never reaches us).
    parent=$PPID
    while kill -0 "$PID" 2>/dev/null; do
        if ! kill -0 "$parent" 2>/dev/null; then
            log "parent $parent is gone; stopping"
            stop
        fi
        sleep 0.2 &
        wait $! || true
    done
    status=0
    wait "$PID" || status=$?
    log "pepsal exited by itself (status $status)"
    PID=""
    stop
}

case "${1:-}" in
    build) build ;;
    run) run ;;
    clean) rules_down ;;
    *)
        echo "usage: $0 build|run|clean" >&2
        exit 2
        ;;
esac
