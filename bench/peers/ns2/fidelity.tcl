# satpep peer baseline: ns-2 fidelity checks for simple analytic models.
#
# Usage: ns fidelity.tcl SCENARIO [AGENT] [SEED] [SIMTIME_S]
#   SCENARIO  window | rate | loss
#   AGENT     ns-2 TCP sender class suffix: Newreno (default), Reno, Sack1
#             (Sack1 pairs with Agent/TCPSink/Sack1, the others with Agent/TCPSink)
#   SEED      RNG seed for the loss model (default 1; 0 = ns-2 picks one)
#   SIMTIME_S simulated seconds (defaults: window 60, rate 60, loss 1000)
#
# Every scenario is one sender node s and one receiver node d joined by a
# duplex link; the receiver ACKs every segment (Agent/TCPSink, no delayed ACK).
# ns-2 one-way TCP: no handshake, windows and sequence numbers count packets,
# every data packet is packetSize_ + 40 B (tcpip_base_hdr_size_) on the wire,
# every ACK is 40 B, timestamps off, tcpTick_ 10 ms, minrto_ 200 ms,
# initial window 2 (windowInit_), limited transmit (singledup_) on.
#
#   window: 10 Mb/s, 280 ms each way, lossless, receiver window 65535 B.
#           MSS 1448 -> window_ = floor(65535/1448) = 45 packets (65160 B).
#           Goodput measured over [10 s, end].
#   rate:   2 Mb/s, 50 ms each way, queue 100 packets drop-tail at s,
#           MSS 1000, window_ 10000 packets (never limits). Goodput over [20 s, end].
#   loss:   100 Mb/s, 50 ms each way, uniform per-packet loss p = 0.01 on the
#           s->d direction only (ACKs never lost), MSS 1448, window_ 10000.
#           Goodput over [10 s, end].
# Goodput = in-order payload bytes delivered to the sink in the interval.

if {$argc < 1} { puts stderr "usage: ns fidelity.tcl window|rate|loss \[AGENT\] \[SEED\] \[SIMTIME_S\]"; exit 2 }
set scenario [lindex $argv 0]
set agent Newreno
if {$argc >= 2} { set agent [lindex $argv 1] }
set seed 1
if {$argc >= 3} { set seed [lindex $argv 2] }

switch -- $scenario {
    window { set rate 10Mb;  set delay 280ms; set mss 1448; set win [expr {65535 / 1448}]; set qlim 1000; set t_meas 10.0; set simtime 60.0; set loss 0.0 }
    rate   { set rate 2Mb;   set delay 50ms;  set mss 1000; set win 10000; set qlim 100;  set t_meas 20.0; set simtime 60.0; set loss 0.0 }
    loss   { set rate 100Mb; set delay 50ms;  set mss 1448; set win 10000; set qlim 10000; set t_meas 10.0; set simtime 1000.0; set loss 0.01 }
    default { puts stderr "unknown scenario $scenario"; exit 2 }
}
if {$argc >= 4} { set simtime [lindex $argv 3] }

Agent/TCP set packetSize_ $mss
Agent/TCP set window_ $win
Agent/TCP set timestamps_ false

set ns [new Simulator]
if {$seed != 0} { global defaultRNG; $defaultRNG seed $seed }
set s [$ns node]
set d [$ns node]
$ns duplex-link $s $d $rate $delay DropTail
$ns queue-limit $s $d $qlim
$ns queue-limit $d $s $qlim

if {$loss > 0} {
    set em [new ErrorModel]
    $em unit pkt
    $em set rate_ $loss
    set rv [new RandomVariable/Uniform]
    set rng [new RNG]
    if {$seed != 0} { $rng seed $seed }
    $rv use-rng $rng
    $em ranvar $rv
    $em drop-target [new Agent/Null]
    # Forward (data) direction only.
    $ns lossmodel $em $s $d
}

set tcp [new Agent/TCP/$agent]
$ns attach-agent $s $tcp
if {$agent eq "Sack1"} { set sink [new Agent/TCPSink/Sack1] } else { set sink [new Agent/TCPSink] }
$ns attach-agent $d $sink
$ns connect $tcp $sink
set ftp [new Application/FTP]
$ftp attach-agent $tcp
$ns at 0.0 "$ftp start"

set hdr [Agent/TCP set tcpip_base_hdr_size_]
set b0 0
proc mark {} { global sink b0; set b0 [$sink set bytes_] }
proc finish {} {
    global sink b0 t_meas simtime mss hdr scenario agent seed tcp
    set b1 [$sink set bytes_]
    # bytes_ counts wire bytes (payload + 40 B header) of in-order data.
    set pkts [expr {($b1 - $b0) / ($mss + $hdr)}]
    set gp [expr {$pkts * $mss * 8.0 / ($simtime - $t_meas)}]
    puts "ns2 scenario=$scenario agent=$agent seed=$seed simtime=$simtime interval=\[$t_meas,$simtime\] delivered_pkts=$pkts goodput_bps=[format %.1f $gp] rexmit_pkts=[$tcp set nrexmitpack_] sent_pkts=[$tcp set ndatapack_]"
    exit 0
}
$ns at $t_meas "mark"
$ns at $simtime "finish"
$ns run
