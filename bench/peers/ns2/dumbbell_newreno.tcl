# satpep peer baseline: ns-2 dumbbell of N bulk NewReno flows, paired with
# `satpep bench --peer ns2` (bench/peers/paired-ns2.sh runs both).
#
# Usage: ns dumbbell_newreno.tcl N [SIMTIME_S]
#
# Topology (as bench/peers/ns2/dumbbell.tcl):
#   s_i --1Gb/0ms-- r0 ==100Mb/250ms==> r1 --1Gb/0ms-- d_i     (i = 0..N-1)
#                     <==10Mb/250ms==
# Every queue 1000 packets drop-tail. TCP: Agent/TCP/Newreno with ns-2's defaults
# (windowInit_ 2, no timestamps, minrto_ 200 ms, tcpTick_ 10 ms) except payload
# 1448 B and window_ 5793 packets (8 MiB / 1448 B); receiver Agent/TCPSink (ACKs
# every packet). satpep's `tcp.profile = "ns2"` imitates these defaults. No trace
# files. Flow i starts at i*1 ms.
#
# Prints the in-order data packets at all sinks (TCPSink bytes_ / (1448 + 40)), and
# the CPU time of the event loop alone (`$ns run` until finish), so set-up (Tcl
# topology and route computation) is the whole process minus sim_cpu_s.

if {$argc < 1} { puts stderr "usage: ns dumbbell_newreno.tcl N \[SIMTIME_S\]"; exit 2 }
set N [lindex $argv 0]
set simtime 60.0
if {$argc >= 2} { set simtime [lindex $argv 1] }

set mss 1448
set win [expr {8 * 1024 * 1024 / $mss}]

Queue set limit_ 1000
Agent/TCP set packetSize_ $mss
Agent/TCP set window_ $win

set ns [new Simulator]
set r0 [$ns node]
set r1 [$ns node]
$ns simplex-link $r0 $r1 100Mb 250ms DropTail
$ns simplex-link $r1 $r0 10Mb 250ms DropTail
$ns queue-limit $r0 $r1 1000
$ns queue-limit $r1 $r0 1000

set sinks {}
for {set i 0} {$i < $N} {incr i} {
    set s [$ns node]
    set d [$ns node]
    $ns duplex-link $s $r0 1Gb 0ms DropTail
    $ns duplex-link $r1 $d 1Gb 0ms DropTail
    set tcp [new Agent/TCP/Newreno]
    $ns attach-agent $s $tcp
    set sink [new Agent/TCPSink]
    $ns attach-agent $d $sink
    $ns connect $tcp $sink
    set ftp [new Application/FTP]
    $ftp attach-agent $tcp
    $ns at [expr {$i * 0.001}] "$ftp start"
    lappend sinks $sink
}

proc cpu_s {} {
    # user + system CPU of this process so far, from /proc (Tcl has no getrusage).
    set f [open /proc/self/stat]
    set fields [split [read $f] " "]
    close $f
    return [expr {([lindex $fields 13] + [lindex $fields 14]) / 100.0}]
}

proc finish {} {
    global sinks N simtime mss run_cpu0 run_wall0
    set cpu [expr {[cpu_s] - $run_cpu0}]
    set wall [expr {([clock microseconds] - $run_wall0) / 1e6}]
    set bytes 0
    foreach k $sinks { set bytes [expr {$bytes + [$k set bytes_]}] }
    set hdr [Agent/TCP set tcpip_base_hdr_size_]
    set delivered [expr {$bytes / ($mss + $hdr)}]
    puts "ns2 flows=$N simtime=$simtime delivered_pkts=$delivered sim_cpu_s=[format %.3f $cpu] sim_wall_s=[format %.3f $wall]"
    exit 0
}
$ns at $simtime "finish"
set run_cpu0 [cpu_s]
set run_wall0 [clock microseconds]
$ns run
