# satpep peer baseline: three bulk TCP flows over a GEO forward link whose ACKs come back over a
# slow return link (asymmetric path, Samaraweera 1999 / Arora et al. style).
#
# Usage: ns slow_return.tcl RETURN_BPS [AGENT] [SEED] [SIMTIME_S] [T_MEAS_S] [START1 START2 START3]
#   RETURN_BPS  return-link rate in bit/s (e.g. 9600, 28800, 430000)
#   AGENT       ns-2 TCP sender class suffix: Newreno (default), Reno
#   SEED        only labels the output line: there is no randomness in the model; the caller
#               derives the flows' start times from it (bench/peers/compare-ns2-return.sh)
#   SIMTIME_S   simulated seconds (default 120); T_MEAS_S start of the goodput interval (20)
#   STARTi      start time of flow i in seconds (default 0 0 0)
# Environment: NS2_TRACE=PREFIX writes PREFIX.tcp<i> (cwnd_, ssthresh_, t_seqno_, ack_, nrexmit_,
# srtt_, rttvar_, backoff_, dupacks_ of sender i) and PREFIX.link (queue events of both links).
# NS2_EVAL=TCL is evaluated after the Agent/TCP defaults below (diagnostics).
#
#   s ══ "fwd" 2 Mb/s, 250 ms, DropTail limit 50 ══▶ d
#     ◀═ "ret" RETURN_BPS, 250 ms, DropTail limit 50 ═
#
# Three Agent/TCP/AGENT senders on s, three Agent/TCPSink on d (one ACK per data packet, 40 B).
# Conventions as fidelity.tcl: packetSize_ 1000 (1040 B on the wire), timestamps off,
# window_ 64 packets per flow (64 000 B, the satpep scenario's recv_buffer), all other
# Agent/TCP defaults (IW 2 after the 40-byte packet 0, minrto 200 ms, tick 10 ms, ssthresh_
# starts at window_). DropTail limit L holds L-1 waiting packets plus the one being sent, so the
# satpep scenario uses limit_packets = 49.
# Goodput = in-order payload bytes delivered to the three sinks in [T_MEAS_S, SIMTIME_S].
# Result line: aggregate goodput, per-flow goodput, timeouts = sum of nrexmit_, fastrtx = sum of
# ncwndcuts1_ - nrexmit_, and the drops of each link (QueueMonitor pdrops_).

if {$argc < 1} { puts stderr "usage: ns slow_return.tcl RETURN_BPS \[AGENT\] \[SEED\] \[SIMTIME_S\] \[T_MEAS_S\] \[START1 START2 START3\]"; exit 2 }
set rbps [lindex $argv 0]
set agent Newreno
if {$argc >= 2} { set agent [lindex $argv 1] }
set seed 1
if {$argc >= 3} { set seed [lindex $argv 2] }
set simtime 120.0
if {$argc >= 4} { set simtime [lindex $argv 3] }
set t_meas 20.0
if {$argc >= 5} { set t_meas [lindex $argv 4] }
set starts {0.0 0.0 0.0}
if {$argc >= 8} { set starts [lrange $argv 5 7] }

set fwd_bps 2000000
set delay 250ms
set qlim 50
set mss 1000
set win 64

Agent/TCP set packetSize_ $mss
Agent/TCP set window_ $win
Agent/TCP set timestamps_ false
if {[info exists env(NS2_EVAL)]} { eval $env(NS2_EVAL) }

set ns [new Simulator]
set s [$ns node]
set d [$ns node]
$ns simplex-link $s $d $fwd_bps $delay DropTail
$ns simplex-link $d $s $rbps $delay DropTail
$ns queue-limit $s $d $qlim
$ns queue-limit $d $s $qlim
set nullf [open /dev/null w]
set qm_f [$ns monitor-queue $s $d $nullf]
set qm_r [$ns monitor-queue $d $s $nullf]

for {set i 0} {$i < 3} {incr i} {
    set tcp($i) [new Agent/TCP/$agent]
    $tcp($i) set fid_ $i
    $ns attach-agent $s $tcp($i)
    set sink($i) [new Agent/TCPSink]
    $ns attach-agent $d $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    $ns at [lindex $starts $i] "$ftp($i) start"
    set b0($i) 0
}
if {[info exists env(NS2_TRACE)]} {
    for {set i 0} {$i < 3} {incr i} {
        set tf($i) [open $env(NS2_TRACE).tcp$i w]
        $tcp($i) attach $tf($i)
        foreach v {cwnd_ ssthresh_ t_seqno_ ack_ nrexmit_ srtt_ rttvar_ backoff_ dupacks_} { $tcp($i) trace $v }
    }
    set lf [open $env(NS2_TRACE).link w]
    $ns trace-queue $s $d $lf
    $ns trace-queue $d $s $lf
}

set hdr [Agent/TCP set tcpip_base_hdr_size_]
proc mark {} { global sink b0; for {set i 0} {$i < 3} {incr i} { set b0($i) [$sink($i) set bytes_] } }
proc finish {} {
    global sink b0 t_meas simtime mss hdr agent seed tcp rbps qm_f qm_r starts
    if {[info exists ::lf]} { flush $::lf; for {set i 0} {$i < 3} {incr i} { flush $::tf($i) } }
    set tot 0; set per {}; set to 0; set fr 0; set rx 0
    for {set i 0} {$i < 3} {incr i} {
        # bytes_ counts wire bytes (payload + 40 B header) of in-order data.
        set pkts [expr {([$sink($i) set bytes_] - $b0($i)) / ($mss + $hdr)}]
        set tot [expr {$tot + $pkts}]
        lappend per [format %.1f [expr {$pkts * $mss * 8.0 / ($simtime - $t_meas)}]]
        incr to [$tcp($i) set nrexmit_]
        incr fr [expr {[$tcp($i) set ncwndcuts1_] - [$tcp($i) set nrexmit_]}]
        incr rx [$tcp($i) set nrexmitpack_]
    }
    set gp [expr {$tot * $mss * 8.0 / ($simtime - $t_meas)}]
    puts "ns2 return_bps=$rbps agent=$agent seed=$seed starts=[join $starts ,] interval=\[$t_meas,$simtime\] goodput_bps=[format %.1f $gp] flows_bps=[join $per ,] timeouts=$to fastrtx=$fr rexmit_pkts=$rx fwd_drops=[$qm_f set pdrops_] ret_drops=[$qm_r set pdrops_]"
    exit 0
}
$ns at $t_meas "mark"
$ns at $simtime "finish"
$ns run
