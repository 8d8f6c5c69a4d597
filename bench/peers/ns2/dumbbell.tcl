# satpep peer baseline: ns-2 speed benchmark (dumbbell of N bulk CUBIC flows).
#
# Usage: ns dumbbell.tcl N [SIMTIME_S]
#
# Topology (same as bench/peers/ns3/dumbbell.cc):
#   s_i --1Gb/0ms-- r0 ==100Mb/250ms==> r1 --1Gb/0ms-- d_i     (i = 0..N-1)
#                     <==10Mb/250ms==
# Bottleneck queue r0->r1: 1000 packets drop-tail (every other queue also 1000).
# TCP: Agent/TCP/Linux with CUBIC, payload 1448 B (+40 B TCP/IP header in ns-2),
# window_ 5793 packets (= 8 MB / 1448 B; ns-2 one-way TCP counts packets),
# timestamps on, initial window 10 segments; receiver Agent/TCPSink/Sack1 ACKs
# every segment (no delayed ACK). No trace files are opened.
# Flow i starts at i*1 ms. At the end the script prints the in-order data
# packets delivered at all sinks.

if {$argc < 1} { puts stderr "usage: ns dumbbell.tcl N \[SIMTIME_S\]"; exit 2 }
set N [lindex $argv 0]
set simtime 60.0
if {$argc >= 2} { set simtime [lindex $argv 1] }

set mss 1448
set win [expr {8 * 1024 * 1024 / $mss}]

Queue set limit_ 1000
Agent/TCP set packetSize_ $mss
Agent/TCP set window_ $win
Agent/TCP set windowInit_ 10
Agent/TCP set timestamps_ true
Agent/TCPSink set ts_echo_rfc1323_ true

set ns [new Simulator]
set r0 [$ns node]
set r1 [$ns node]
$ns simplex-link $r0 $r1 100Mb 250ms DropTail
$ns simplex-link $r1 $r0 10Mb 250ms DropTail
$ns queue-limit $r0 $r1 1000
$ns queue-limit $r1 $r0 1000

set sinks {}
set srcs {}
for {set i 0} {$i < $N} {incr i} {
    set s [$ns node]
    set d [$ns node]
    $ns duplex-link $s $r0 1Gb 0ms DropTail
    $ns duplex-link $r1 $d 1Gb 0ms DropTail
    set tcp [new Agent/TCP/Linux]
    $ns attach-agent $s $tcp
    set sink [new Agent/TCPSink/Sack1]
    $ns attach-agent $d $sink
    $ns connect $tcp $sink
    $ns at 0 "$tcp select_ca cubic"
    set ftp [new Application/FTP]
    $ftp attach-agent $tcp
    $ns at [expr {$i * 0.001}] "$ftp start"
    lappend sinks $sink
    lappend srcs $tcp
}

proc finish {} {
    global sinks srcs N simtime mss
    set bytes 0
    foreach k $sinks { set bytes [expr {$bytes + [$k set bytes_]}] }
    set acked 0
    set sent 0
    set rexmit 0
    foreach t $srcs {
        set acked [expr {$acked + [$t set ack_] + 1}]
        set sent [expr {$sent + [$t set ndatapack_]}]
        set rexmit [expr {$rexmit + [$t set nrexmitpack_]}]
    }
    # TCPSink bytes_ counts in-order bytes including the 40 B header ns-2 adds.
    set hdr [Agent/TCP set tcpip_base_hdr_size_]
    set delivered [expr {$bytes / ($mss + $hdr)}]
    puts "ns2 flows=$N simtime=$simtime delivered_pkts=$delivered sink_bytes=$bytes acked_pkts=$acked sent_pkts=$sent rexmit_pkts=$rexmit goodput_mbps=[format %.3f [expr {$delivered * $mss * 8.0 / $simtime / 1e6}]]"
    exit 0
}
$ns at $simtime "finish"
$ns run
