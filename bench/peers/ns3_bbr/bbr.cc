// satpep peer baseline: ns-3's TcpBbr (and, for reference, TcpCubic) on the deployment test path
// of scenarios/bbr/deploy.toml, for bench/peers/ns3_bbr/run.sh (docs/bbr-ns3.md).
//
//   srv --20 Mb/s, 300 ms--> term        (forward: data)
//   srv <--2 Mb/s, 300 ms--  term        (return: ACKs)
//
// One point-to-point channel (its delay, 300 ms, is the same both ways) whose two devices have
// different DataRates: srv's device sends at 20 Mb/s, term's at 2 Mb/s. Each device has a
// 1000-packet DropTailQueue and the traffic-control layer is removed (ns-3 would otherwise put
// FqCoDel in front of every device), so each direction is a plain 1000-packet drop-tail FIFO as in
// satpep (a full queue's drops are made by the traffic-control layer, see below). Packet errors: a RateErrorModel (ERROR_UNIT_PACKET, rate --per) as the
// ReceiveErrorModel of the receiving device of each direction, so every packet (SYN, data, ACK)
// is lost with probability PER after it used the link, like satpep's `error = { model = "per" }`.
//
// TCP as close to Linux (satpep's `profile = "linux"`) as ns-3 3.37 allows: MSS 1448 with
// timestamps (1500-byte IP packets), SACK and window scaling on, SndBufSize = RcvBufSize = 64 MiB,
// InitialCwnd 10, MinRto 200 ms, ClockGranularity 200 ms (Linux floors the variance term of the
// RTO at TCP_RTO_MIN), ConnTimeout 1 s (the SYN's RTO), DelAckCount 2, DelAckTimeout 40 ms,
// pacing on (TcpBbr needs it) with the initial window paced too (Linux BBR paces from the start).
// ns-3's PPP device adds a 2-byte header to every packet (1502 bytes on the wire).
//
// The flow: a BulkSendApplication from srv, started at 0 s and stopped at --appTime (42 s), into a
// PacketSink on term; the run stops at --simTime (44 s). Goodput as satpep's summary.json:
// bytes delivered in order to the sink × 8 / (completion − start), start = 0 (the SYN), and
// completion = the moment the sink has every byte the application wrote, or the end of the run
// when that never happens.
//
// Usage: bbr [--cc=Bbr|Cubic] [--per=0.001] [--run=1] [--appTime=42] [--simTime=44]
//            [--trace=FILE] (cwnd, pacing rate, RTT, ... every 100 ms as CSV)
// Prints one line of key=value pairs (see the printf at the end).

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>
#include <string>

using namespace ns3;

namespace
{
uint64_t g_written = 0;     // bytes the application handed to the socket
uint64_t g_rx = 0;          // bytes the sink received (in order)
bool g_appStopped = false;
double g_completion = -1;   // seconds, when the sink had all written bytes after the app stopped
uint64_t g_highEnd = 0;     // highest sequence end sent (relative to the first data segment)
uint32_t g_base = 0;
bool g_baseKnown = false;
uint64_t g_dataSegs = 0;
uint64_t g_retx = 0;
uint32_t g_rtos = 0;
uint32_t g_recoveries = 0;
uint64_t g_fwdDrops = 0;
uint64_t g_retDrops = 0;
uint64_t g_fwdQueueDrops = 0;
uint64_t g_retQueueDrops = 0;
uint32_t g_cwnd = 0;
uint32_t g_maxCwnd = 0;
uint32_t g_ssth = 0;
uint64_t g_pacing = 0;
uint32_t g_inflight = 0;
double g_rttMs = 0;
int g_state = 0;
FILE* g_trace = nullptr;

void
CheckComplete()
{
    if (g_appStopped && g_completion < 0 && g_rx >= g_written)
    {
        g_completion = Simulator::Now().GetSeconds();
    }
}

void
OnAppTx(Ptr<const Packet> p)
{
    g_written += p->GetSize();
}

void
OnSinkRx(Ptr<const Packet> p, const Address&)
{
    g_rx += p->GetSize();
    CheckComplete();
}

void
OnSocketTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    uint32_t len = p->GetSize();
    if (len == 0)
    {
        return;
    }
    // Offsets from the first data segment sent (never a retransmission); 32-bit wrap is not an
    // issue for the ~110 MB one run sends.
    if (!g_baseKnown)
    {
        g_base = h.GetSequenceNumber().GetValue();
        g_baseKnown = true;
    }
    uint64_t start = static_cast<uint32_t>(h.GetSequenceNumber().GetValue() - g_base);
    uint64_t end = start + len;
    ++g_dataSegs;
    if (end <= g_highEnd)
    {
        ++g_retx;
    }
    else
    {
        g_highEnd = end;
    }
}

void
StopApp()
{
    g_appStopped = true;
    CheckComplete();
}

void
Sample()
{
    std::fprintf(g_trace,
                 "%.1f,%llu,%u,%u,%llu,%u,%.3f,%d,%llu,%u,%u\n",
                 Simulator::Now().GetSeconds(),
                 (unsigned long long)g_rx,
                 g_cwnd,
                 g_ssth,
                 (unsigned long long)g_pacing,
                 g_inflight,
                 g_rttMs,
                 g_state,
                 (unsigned long long)g_retx,
                 g_rtos,
                 g_recoveries);
    Simulator::Schedule(MilliSeconds(100), &Sample);
}

void
Hook()
{
    const std::string s = "/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(s + "Tx", MakeCallback(&OnSocketTx));
    Config::ConnectWithoutContext(s + "CongestionWindow",
                                  MakeCallback(+[](uint32_t, uint32_t v) {
                                      g_cwnd = v;
                                      if (v > g_maxCwnd)
                                          g_maxCwnd = v;
                                  }));
    Config::ConnectWithoutContext(s + "SlowStartThreshold",
                                  MakeCallback(+[](uint32_t, uint32_t v) { g_ssth = v; }));
    Config::ConnectWithoutContext(s + "PacingRate", MakeCallback(+[](DataRate, DataRate v) {
                                      g_pacing = v.GetBitRate();
                                  }));
    Config::ConnectWithoutContext(s + "BytesInFlight",
                                  MakeCallback(+[](uint32_t, uint32_t v) { g_inflight = v; }));
    Config::ConnectWithoutContext(s + "RTT", MakeCallback(+[](Time, Time v) {
                                      g_rttMs = v.GetSeconds() * 1e3;
                                  }));
    Config::ConnectWithoutContext(
        s + "CongState",
        MakeCallback(+[](TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t v) {
            g_state = v;
            if (v == TcpSocketState::CA_LOSS)
                ++g_rtos;
            if (v == TcpSocketState::CA_RECOVERY)
                ++g_recoveries;
        }));
}

} // namespace

int
main(int argc, char* argv[])
{
    std::string cc = "Bbr";
    double per = 0.001;
    uint32_t run = 1;
    double appTime = 42.0;
    double simTime = 44.0;
    std::string trace;
    uint32_t delAck = 2;
    double delAckTimeout = 0.04;
    double minRto = 0.2;
    double clockGranularity = 0.2;
    bool paceIw = true;
    const uint32_t mss = 1448;
    const uint32_t buf = 64u << 20;

    CommandLine cmd;
    cmd.AddValue("cc", "Bbr | Cubic", cc);
    cmd.AddValue("per", "packet error rate on both directions", per);
    cmd.AddValue("run", "RngSeedManager run number", run);
    cmd.AddValue("appTime", "seconds the bulk application sends", appTime);
    cmd.AddValue("simTime", "simulated seconds", simTime);
    cmd.AddValue("trace", "CSV file for 100 ms samples (empty: none)", trace);
    cmd.AddValue("delAck", "TcpSocket::DelAckCount", delAck);
    cmd.AddValue("delAckTimeout", "TcpSocket::DelAckTimeout in seconds", delAckTimeout);
    cmd.AddValue("minRto", "TcpSocketBase::MinRto in seconds", minRto);
    cmd.AddValue("clockGranularity", "TcpSocketBase::ClockGranularity in seconds", clockGranularity);
    cmd.AddValue("paceIw", "TcpSocketState::PaceInitialWindow", paceIw);
    cmd.Parse(argc, argv);

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(run);

    TypeId ca = TcpBbr::GetTypeId();
    if (cc == "Cubic")
        ca = TcpCubic::GetTypeId();
    else if (cc != "Bbr")
    {
        std::fprintf(stderr, "unknown --cc %s\n", cc.c_str());
        return 2;
    }
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(ca));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(buf));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(buf));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAck));
    Config::SetDefault("ns3::TcpSocket::DelAckTimeout", TimeValue(Seconds(delAckTimeout)));
    Config::SetDefault("ns3::TcpSocket::ConnTimeout", TimeValue(Seconds(1)));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(minRto)));
    Config::SetDefault("ns3::TcpSocketBase::ClockGranularity",
                       TimeValue(Seconds(clockGranularity)));
    Config::SetDefault("ns3::TcpSocketState::EnablePacing", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketState::PaceInitialWindow", BooleanValue(paceIw));

    NodeContainer nodes;
    nodes.Create(2); // 0 = srv, 1 = term
    InternetStackHelper stack;
    stack.Install(nodes);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue("20Mbps"));
    p2p.SetChannelAttribute("Delay", StringValue("300ms"));
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1000p"));
    NetDeviceContainer devs = p2p.Install(nodes);
    // The return direction: term's device sends at 2 Mb/s.
    devs.Get(1)->SetAttribute("DataRate", StringValue("2Mbps"));

    if (per > 0)
    {
        for (uint32_t i = 0; i < 2; ++i)
        {
            Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
            em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
            em->SetRate(per);
            em->AssignStreams(10 + i);
            devs.Get(i)->SetAttribute("ReceiveErrorModel", PointerValue(em));
        }
    }
    // devs.Get(1) receives the forward (data) direction, devs.Get(0) the return (ACKs).
    devs.Get(1)->TraceConnectWithoutContext("PhyRxDrop",
                                            MakeCallback(+[](Ptr<const Packet>) { ++g_fwdDrops; }));
    devs.Get(0)->TraceConnectWithoutContext("PhyRxDrop",
                                            MakeCallback(+[](Ptr<const Packet>) { ++g_retDrops; }));

    // Drops of a full queue. The device's DropTailQueue never drops itself: the device stops its
    // transmit queue when no packet more fits (1000 queued), and with no queue disc installed the
    // traffic-control layer then drops the packet it was handed (TrafficControlLayer "TcDrop").
    // Both traces are counted.
    for (uint32_t i = 0; i < 2; ++i)
    {
        uint64_t* n = i == 0 ? &g_fwdQueueDrops : &g_retQueueDrops;
        Callback<void, Ptr<const Packet>> cb = MakeBoundCallback(
            +[](uint64_t* c, Ptr<const Packet>) { ++*c; }, n);
        DynamicCast<PointToPointNetDevice>(devs.Get(i))
            ->GetQueue()
            ->TraceConnectWithoutContext("Drop", cb);
        nodes.Get(i)->GetObject<TrafficControlLayer>()->TraceConnectWithoutContext("TcDrop", cb);
    }

    Ipv4AddressHelper addr;
    addr.SetBase("10.0.0.0", "255.255.255.0");
    Ipv4InterfaceContainer ifs = addr.Assign(devs);
    TrafficControlHelper tch;
    tch.Uninstall(devs);

    const uint16_t port = 5000;
    PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                InetSocketAddress(Ipv4Address::GetAny(), port));
    ApplicationContainer sa = sinkHelper.Install(nodes.Get(1));
    sa.Start(Seconds(0.0));
    Ptr<PacketSink> sink = DynamicCast<PacketSink>(sa.Get(0));
    sink->TraceConnectWithoutContext("Rx", MakeCallback(&OnSinkRx));

    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(1), port));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    src.SetAttribute("SendSize", UintegerValue(mss));
    ApplicationContainer app = src.Install(nodes.Get(0));
    app.Start(Seconds(0.0));
    app.Stop(Seconds(appTime));
    app.Get(0)->TraceConnectWithoutContext("Tx", MakeCallback(&OnAppTx));

    // The sender's socket exists once the application started (at 0 s); its first data segment
    // leaves one RTT later.
    Simulator::Schedule(MilliSeconds(1), &Hook);
    Simulator::Schedule(Seconds(appTime), &StopApp);
    if (!trace.empty())
    {
        g_trace = std::fopen(trace.c_str(), "w");
        if (!g_trace)
        {
            std::perror(trace.c_str());
            return 1;
        }
        std::fprintf(g_trace,
                     "t_s,rx_bytes,cwnd_bytes,ssthresh_bytes,pacing_bps,inflight_bytes,rtt_ms,"
                     "cong_state,retx,rtos,recoveries\n");
        Simulator::Schedule(MilliSeconds(100), &Sample);
    }
    Simulator::Stop(Seconds(simTime));
    Simulator::Run();

    double end = g_completion >= 0 ? g_completion : simTime;
    double gp = end > 0 ? g_rx * 8.0 / end : 0.0;
    std::printf("ns3 cc=%s per=%g run=%u goodput_bps=%.3f bytes_delivered=%llu written=%llu "
                "completion_s=%s data_segments=%llu retransmissions=%llu rtos=%u recoveries=%u "
                "fwd_error_drops=%llu ret_error_drops=%llu fwd_queue_drops=%llu ret_queue_drops=%llu "
                "max_cwnd_bytes=%u\n",
                cc.c_str(),
                per,
                run,
                gp,
                (unsigned long long)g_rx,
                (unsigned long long)g_written,
                g_completion >= 0 ? std::to_string(g_completion).c_str() : "none",
                (unsigned long long)g_dataSegs,
                (unsigned long long)g_retx,
                g_rtos,
                g_recoveries,
                (unsigned long long)g_fwdDrops,
                (unsigned long long)g_retDrops,
                (unsigned long long)g_fwdQueueDrops,
                (unsigned long long)g_retQueueDrops,
                g_maxCwnd);
    if (g_trace)
        std::fclose(g_trace);
    Simulator::Destroy();
    return 0;
}
