# satpep peer baseline: ns-2 fidelity checks for simple analytic models.
#
# Usage: ns fidelity.tcl SCENARIO [AGENT] [SEED] [SIMTIME_S] [LOSS]
#   SCENARIO  window | rate | loss | single | single-fast
#   AGENT     ns-2 TCP sender class suffix: Newreno (default), Reno, Sack1
#             (Sack1 pairs with Agent/TCPSink/Sack1, the others with Agent/TCPSink)
#   SEED      RNG seed for the loss model (default 1; 0 = ns-2 picks one)
#   SIMTIME_S simulated seconds (defaults: window 60, rate 60, loss 1000, single* 60)
#   LOSS      loss: the packet error rate (default 0.01);
#             single, single-fast: the data packet to drop (default 100)
# Environment: NS2_TRACE=PREFIX writes PREFIX.tcp (cwnd_, ssthresh_, t_seqno_, ack_, maxseq_, ncwndcuts1_,
# nrexmit_, rtt_, srtt_, rttvar_, backoff_, dupacks_ of the sender, Agent trace format) and
# PREFIX.link (queue/link events of both directions).
# NS2_EVAL=TCL is evaluated after the Agent/TCP defaults above (diagnostics).
# NS2_LOSS_AT=link puts the loss model behind the link (link-lossmodel: a lost packet takes its
# serialisation time, as in satpep) instead of before the queue (lossmodel, the default).
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
#   single: the window path with exactly one data packet lost (ErrorModel/List on s->d;
#           list index 0 is the 40-byte packet 0, so index N is data packet N).
#           Goodput over [10 s, end].
#   single-fast: the loss path (100 Mb/s, 50 ms) without random loss and one data packet
#           lost as in single (in slow start). Goodput over [10 s, end].
# Goodput = in-order payload bytes delivered to the sink in the interval.
# The result line also gives timeouts=nrexmit_ (RTO expirations with data outstanding) and
# fastrtx = ncwndcuts1_ - nrexmit_ (window cuts with data outstanding that were not
# timeouts: entries into fast retransmit; no ECN or Quick-Start here).

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
    single { set rate 10Mb;  set delay 280ms; set mss 1448; set win [expr {65535 / 1448}]; set qlim 1000; set t_meas 10.0; set simtime 60.0; set loss 0.0; set drop 100 }
    single-fast { set rate 100Mb; set delay 50ms; set mss 1448; set win 10000; set qlim 10000; set t_meas 10.0; set simtime 60.0; set loss 0.0; set drop 100 }
    default { puts stderr "unknown scenario $scenario"; exit 2 }
}
if {$argc >= 4} { set simtime [lindex $argv 3] }
if {$argc >= 5} {
    if {[info exists drop]} { set drop [lindex $argv 4] } else { set loss [lindex $argv 4] }
}

Agent/TCP set packetSize_ $mss
Agent/TCP set window_ $win
Agent/TCP set timestamps_ false
# Diagnostics: NS2_EVAL=TCL runs TCL here (e.g. "Agent/TCP set singledup_ 0").
if {[info exists env(NS2_EVAL)]} { eval $env(NS2_EVAL) }

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
    if {[info exists env(NS2_LOSS_AT)] && $env(NS2_LOSS_AT) eq "link"} { $ns link-lossmodel $em $s $d } else { $ns lossmodel $em $s $d }
}

if {[info exists drop]} {
    set em [new ErrorModel/List]
    $em droplist $drop
    $em drop-target [new Agent/Null]
    if {[info exists env(NS2_LOSS_AT)] && $env(NS2_LOSS_AT) eq "link"} { $ns link-lossmodel $em $s $d } else { $ns lossmodel $em $s $d }
}

set tcp [new Agent/TCP/$agent]
$ns attach-agent $s $tcp
if {$agent eq "Sack1"} { set sink [new Agent/TCPSink/Sack1] } else { set sink [new Agent/TCPSink] }
$ns attach-agent $d $sink
$ns connect $tcp $sink
set ftp [new Application/FTP]
$ftp attach-agent $tcp
$ns at 0.0 "$ftp start"
if {[info exists env(NS2_TRACE)]} {
    set tf [open $env(NS2_TRACE).tcp w]
    $tcp attach $tf
    foreach v {cwnd_ ssthresh_ t_seqno_ ack_ nrexmit_ rtt_ srtt_ rttvar_ backoff_ dupacks_ maxseq_ ncwndcuts1_} { $tcp trace $v }
    set lf [open $env(NS2_TRACE).link w]
    $ns trace-queue $s $d $lf
    $ns trace-queue $d $s $lf
}

set hdr [Agent/TCP set tcpip_base_hdr_size_]
set b0 0
proc mark {} { global sink b0; set b0 [$sink set bytes_] }
proc finish {} {
    global sink b0 t_meas simtime mss hdr scenario agent seed tcp loss
    if {[info exists ::tf]} { flush $::tf; flush $::lf }
    set b1 [$sink set bytes_]
    # bytes_ counts wire bytes (payload + 40 B header) of in-order data.
    set pkts [expr {($b1 - $b0) / ($mss + $hdr)}]
    set gp [expr {$pkts * $mss * 8.0 / ($simtime - $t_meas)}]
    puts "ns2 scenario=$scenario agent=$agent seed=$seed simtime=$simtime interval=\[$t_meas,$simtime\] delivered_pkts=$pkts goodput_bps=[format %.1f $gp] rexmit_pkts=[$tcp set nrexmitpack_] sent_pkts=[$tcp set ndatapack_] timeouts=[$tcp set nrexmit_] fastrtx=[expr {[$tcp set ncwndcuts1_] - [$tcp set nrexmit_]}] loss=$loss"
    exit 0
}
$ns at $t_meas "mark"
$ns at $simtime "finish"
$ns run
