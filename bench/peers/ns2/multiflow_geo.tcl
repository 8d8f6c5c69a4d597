# satpep peer baseline: several bulk TCP flows through one GEO bottleneck with a small drop-tail
# queue, each flow on its own access link (jittered delay).
#
# Usage: ns multiflow_geo.tcl AGENT SEED SIMTIME_S T_MEAS_S QLIM STARTS DELAYS_MS [LOSE_FIRST]
#   AGENT      Newreno | Sack1 | DelAck (Newreno sender, Agent/TCPSink/DelAck: an ACK every
#              second packet or after interval_ 100 ms); Newreno pairs with Agent/TCPSink,
#              Sack1 with Agent/TCPSink/Sack1
#   SEED       only labels the output line (no randomness in the model: the caller draws
#              the starts and delays from it, bench/peers/compare-ns2-multiflow.sh)
#   QLIM       ns-2 queue-limit of the bottleneck (DropTail: QLIM - 1 waiting + 1 on the wire)
#   STARTS     one start time per flow, seconds, as one space-separated argument
#   DELAYS_MS  one access-link delay per flow, milliseconds, one argument
#   LOSE_FIRST 1: the first flow's packet 0 (ns-2's stand-in for the SYN) is lost on its access
#              link (ErrorModel/List, index 0); default 0
# The number of flows is the length of STARTS.
# NS2_EVAL=TCL is evaluated after the Agent/TCP defaults below (diagnostics).
#
#   s_i ─ 100 Mb/s, DELAY_i ─ r0 ══ "bottleneck" 10 Mb/s, 250 ms, DropTail QLIM ══▶ r1 ─ 100 Mb/s, 0 ─ d
#                              ◀══ "return" 10 Mb/s, 250 ms ══
#
# Access links both ways and the return link hold 1000 packets (never full here).
# Conventions as fidelity.tcl: packetSize_ 1000 (1040 B on the wire, ACKs 40 B), timestamps
# off, window_ 1000 packets per flow (1 000 000 B, more than the path holds), all other Agent/TCP
# defaults (packet 0 a 40-byte stand-in for the SYN, then IW 2, minrto 200 ms, tick 10 ms,
# ssthresh_ starting at window_).
# Result line: aggregate goodput (in-order payload at the sinks over [T_MEAS_S, SIMTIME_S]),
# bottleneck drops (QueueMonitor pdrops_, whole run), timeouts = sum of nrexmit_, fastrtx = sum
# of ncwndcuts1_ - nrexmit_, rexmit_pkts = sum of nrexmitpack_.

if {$argc < 7} { puts stderr "usage: ns multiflow_geo.tcl AGENT SEED SIMTIME_S T_MEAS_S QLIM STARTS DELAYS_MS"; exit 2 }
lassign $argv agent seed simtime t_meas qlim starts delays lose_first
if {$lose_first eq ""} { set lose_first 0 }
set n [llength $starts]
if {[llength $delays] != $n} { puts stderr "STARTS and DELAYS_MS differ in length"; exit 2 }
set mss 1000
set win 1000

Agent/TCP set packetSize_ $mss
Agent/TCP set window_ $win
Agent/TCP set timestamps_ false
if {[info exists env(NS2_EVAL)]} { eval $env(NS2_EVAL) }

switch -- $agent {
    Newreno { set sender Newreno; set sinkclass Agent/TCPSink }
    Sack1   { set sender Sack1;   set sinkclass Agent/TCPSink/Sack1 }
    DelAck  { set sender Newreno; set sinkclass Agent/TCPSink/DelAck }
    default { puts stderr "agent $agent?"; exit 2 }
}

set ns [new Simulator]
set r0 [$ns node]
set r1 [$ns node]
set d [$ns node]
$ns simplex-link $r0 $r1 10Mb 250ms DropTail
$ns simplex-link $r1 $r0 10Mb 250ms DropTail
$ns queue-limit $r0 $r1 $qlim
$ns queue-limit $r1 $r0 1000
$ns duplex-link $r1 $d 100Mb 0ms DropTail
$ns queue-limit $r1 $d 1000
$ns queue-limit $d $r1 1000
set nullf [open /dev/null w]
set qm [$ns monitor-queue $r0 $r1 $nullf]

for {set i 0} {$i < $n} {incr i} {
    set s($i) [$ns node]
    $ns duplex-link $s($i) $r0 100Mb [lindex $delays $i]ms DropTail
    $ns queue-limit $s($i) $r0 1000
    $ns queue-limit $r0 $s($i) 1000
    if {$i == 0 && $lose_first} {
        set em [new ErrorModel/List]
        $em droplist 0
        $em drop-target [new Agent/Null]
        $ns lossmodel $em $s($i) $r0
    }
    set tcp($i) [new Agent/TCP/$sender]
    $tcp($i) set fid_ $i
    $ns attach-agent $s($i) $tcp($i)
    set sink($i) [new $sinkclass]
    $ns attach-agent $d $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    $ns at [lindex $starts $i] "$ftp($i) start"
    set b0($i) 0
}

set hdr [Agent/TCP set tcpip_base_hdr_size_]
proc mark {} { global sink b0 n; for {set i 0} {$i < $n} {incr i} { set b0($i) [$sink($i) set bytes_] } }
proc finish {} {
    global sink b0 t_meas simtime mss hdr agent seed tcp qm n qlim
    set tot 0; set to 0; set fr 0; set rx 0
    for {set i 0} {$i < $n} {incr i} {
        # bytes_ counts wire bytes (payload + 40 B header) of in-order data.
        set tot [expr {$tot + ([$sink($i) set bytes_] - $b0($i)) / ($mss + $hdr)}]
        incr to [$tcp($i) set nrexmit_]
        incr fr [expr {[$tcp($i) set ncwndcuts1_] - [$tcp($i) set nrexmit_]}]
        incr rx [$tcp($i) set nrexmitpack_]
    }
    set gp [expr {$tot * $mss * 8.0 / ($simtime - $t_meas)}]
    puts "ns2 agent=$agent seed=$seed flows=$n qlim=$qlim goodput_bps=[format %.1f $gp] drops=[$qm set pdrops_] timeouts=$to fastrtx=$fr rexmit_pkts=$rx"
    exit 0
}
$ns at $t_meas "mark"
$ns at $simtime "finish"
$ns run
