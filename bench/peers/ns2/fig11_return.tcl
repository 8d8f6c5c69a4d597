# scenarios/samaraweera/fig11.toml with its drop-tail return queue, in ns-2 2.35: three bulk
# flows server -> client from t = 0 over a 10 Mb/s, 280 ms forward link (hub queue 2200
# packets: never full), ACKs over RETURN_BPS, 200 ms, with a 1000-packet queue; server-hub
# 100 Mb/s, 1 ms. packetSize_ 1024 (1064 B on the wire), window_ 703 packets (720 KB),
# windowInit_ 1, timestamps off, one ACK per packet. ns-2 limits are satpep's + 1 (DropTail
# counts the packet on the wire: docs/tcp-profiles.md).
#
# Usage: ns fig11_return.tcl RETURN_BPS AGENT SIMTIME_S      (AGENT Reno | Newreno | Sack1)
# Prints aggregate goodput over [0, SIMTIME_S] (in-order payload at the three sinks), timeouts
# (nrexmit_), retransmitted packets and the drops of both hub-side queues. The satpep run it
# pairs with (docs/validation.md §1b, "the unexplained 22 %"):
#   satpep sim scenarios/samaraweera/fig11.toml --out DIR --set defaults.tcp.profile=ns2 \
#     --set defaults.tcp.recovery=sack --set defaults.tcp.sack=true \
#     --set 'sweep={"link.return.rate"=["430kbps"]}'        (DIR/sweep.csv total_goodput_bps)
lassign $argv rbps agent simtime
set mss 1024
Agent/TCP set packetSize_ $mss
Agent/TCP set window_ 703
Agent/TCP set windowInit_ 1
Agent/TCP set timestamps_ false
if {[info exists env(NS2_EVAL)]} { eval $env(NS2_EVAL) }
set ns [new Simulator]
set server [$ns node]
set hub [$ns node]
set client [$ns node]
$ns duplex-link $server $hub 100Mb 1ms DropTail
$ns queue-limit $server $hub 1001
$ns queue-limit $hub $server 1001
$ns simplex-link $hub $client 10Mb 280ms DropTail
$ns simplex-link $client $hub $rbps 200ms DropTail
$ns queue-limit $hub $client 2201
$ns queue-limit $client $hub 1001
set nullf [open /dev/null w]
set qf [$ns monitor-queue $hub $client $nullf]
set qr [$ns monitor-queue $client $hub $nullf]
for {set i 0} {$i < 3} {incr i} {
    set tcp($i) [new Agent/TCP/$agent]
    $ns attach-agent $server $tcp($i)
    if {$agent eq "Sack1"} { set sink($i) [new Agent/TCPSink/Sack1] } else { set sink($i) [new Agent/TCPSink] }
    $ns attach-agent $client $sink($i)
    $ns connect $tcp($i) $sink($i)
    set ftp($i) [new Application/FTP]
    $ftp($i) attach-agent $tcp($i)
    $ns at 0.0 "$ftp($i) start"
}
proc finish {} {
    global sink tcp simtime mss qf qr agent rbps
    set tot 0; set to 0; set rx 0
    for {set i 0} {$i < 3} {incr i} {
        set tot [expr {$tot + [$sink($i) set bytes_] / ($mss + 40)}]
        incr to [$tcp($i) set nrexmit_]
        incr rx [$tcp($i) set nrexmitpack_]
    }
    puts "ns2 rbps=$rbps agent=$agent goodput_bps=[format %.1f [expr {$tot * $mss * 8.0 / $simtime}]] timeouts=$to rexmit_pkts=$rx fwd_drops=[$qf set pdrops_] ret_drops=[$qr set pdrops_]"
    exit 0
}
$ns at $simtime "finish"
$ns run
