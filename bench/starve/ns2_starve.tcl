# ns-2 2.35 side of bench/starve/run.sh: N NewReno flows on the GEO dumbbell of
# scenarios/scale/dumbbell_100k.toml, each on its own host pair, and the flows that deliver nothing.
#
# Usage: ns ns2_starve.tcl N SPACING_MS SIMTIME_S WINDOW_PKTS JITTER
#   s_i --1Gb/d_i-- r0 ==100Mb/250ms==> r1 --1Gb/0ms-- d_i   (every queue 1000 packets, drop-tail)
#                     <==10Mb/250ms==
#   flow i starts at i*SPACING_MS ms; JITTER=1 gives s_i's access link the delay
#   ((i*7919) mod 1000) * 10 us (0 to 9.99 ms, the same formula as run.sh's jitter case), else 0.
# Agent/TCP/Newreno (one-way: no handshake, so a flow's first data packet stands for the SYN),
# TCPSink ACKing every packet, 1448-byte payloads, ns-2 2.35 defaults otherwise: syn_ true (packet 0
# is a 40-byte SYN-like packet, retransmitted on timeout), windowInit_ 2, rtxcur_init_ 3 s, minrto_ 0.2 s.
# Prints one line: flows, flows with no in-order byte at the sink, bottleneck arrivals and drops,
# then one line per starved flow: index, start, data packets sent, retransmissions.
if {$argc < 5} { puts stderr "usage: ns ns2_starve.tcl N SPACING_MS SIMTIME_S WINDOW_PKTS JITTER"; exit 2 }
lassign $argv N spacing simtime win jitter
Agent/TCP set packetSize_ 1448
Agent/TCP set window_ $win
Queue set limit_ 1000
set ns [new Simulator]
set r0 [$ns node]
set r1 [$ns node]
$ns simplex-link $r0 $r1 100Mb 250ms DropTail
$ns simplex-link $r1 $r0 10Mb 250ms DropTail
$ns queue-limit $r0 $r1 1000
$ns queue-limit $r1 $r0 1000
set qm [$ns monitor-queue $r0 $r1 ""]
set sinks {}
set srcs {}
set starts {}
for {set i 0} {$i < $N} {incr i} {
    set s [$ns node]
    set d [$ns node]
    set dl 0
    if {$jitter} { set dl [expr {(($i * 7919) % 1000) * 10}] }
    $ns duplex-link $s $r0 1Gb ${dl}us DropTail
    $ns duplex-link $r1 $d 1Gb 0ms DropTail
    set tcp [new Agent/TCP/Newreno]
    $ns attach-agent $s $tcp
    set sink [new Agent/TCPSink]
    $ns attach-agent $d $sink
    $ns connect $tcp $sink
    set ftp [new Application/FTP]
    $ftp attach-agent $tcp
    set t [expr {$i * $spacing / 1000.0}]
    $ns at $t "$ftp start"
    lappend sinks $sink
    lappend srcs $tcp
    lappend starts $t
}
proc finish {} {
    global sinks srcs starts N qm
    set zero 0
    set lines {}
    for {set i 0} {$i < $N} {incr i} {
        if {[[lindex $sinks $i] set bytes_] == 0} {
            incr zero
            set t [lindex $srcs $i]
            lappend lines "starved $i [lindex $starts $i] [$t set ndatapack_] [$t set nrexmitpack_]"
        }
    }
    puts "ns2 flows=$N zero=$zero bottleneck_arrivals=[$qm set parrivals_] bottleneck_drops=[$qm set pdrops_]"
    foreach l $lines { puts $l }
    exit 0
}
$ns at $simtime "finish"
$ns run
