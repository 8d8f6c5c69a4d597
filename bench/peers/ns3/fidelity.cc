// satpep peer baseline: ns-3 fidelity checks for simple analytic models.
// Mirrors bench/peers/ns2/fidelity.tcl (same topology and measurement window).
//
// Every scenario is one sender node s and one receiver node d joined by a
// point-to-point link; traffic control is removed so the device queue is a
// plain drop-tail FIFO (as in ns-2). One BulkSend -> PacketSink flow.
//
//   window: 10 Mb/s, 280 ms each way, lossless, RcvBufSize 65535 B with
//           window scaling off (advertised window 65535 B), MSS 1448.
//           Goodput over [10 s, end].
//   rate:   2 Mb/s, 50 ms each way, device queue 100 packets, MSS 1000,
//           timestamps off, 8 MiB buffers. Goodput over [20 s, end].
//   loss:   100 Mb/s, 50 ms each way, RateErrorModel (per packet, p = 0.01)
//           on d's receive side only (data direction; ACKs never lost),
//           MSS 1448, 8 MiB buffers. Goodput over [10 s, end].
//
// Options select the TCP modelling details that differ from ns-2 (defaults are
// ns-3's own defaults): --delAck (DelAckCount, 2), --sack (1), --ts (1),
// --trace=SECONDS prints cwnd, ssthresh and congestion state periodically,
// --minRto (1 s), --iw (InitialCwnd, 10), --recovery (prr|classic),
// --tcp (NewReno|Cubic|LinuxReno), --seed (RngRun), --simTime.
// The loss scenario always ACKs every segment unless --delAck is given.
//
// Usage: fidelity --scenario=window|rate|loss [options]

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <cstdio>

using namespace ns3;

static uint64_t g_rxAtMark = 0;
static uint32_t g_cwnd = 0;
static uint32_t g_ssth = 0;
static int g_state = 0;
static uint32_t g_rto = 0;

static void
Sample(Ptr<PacketSink> sink, double period)
{
    std::printf("trace t=%.1f rx=%llu cwnd=%u ssthresh=%u state=%d rtos=%u\n",
                Simulator::Now().GetSeconds(), (unsigned long long)sink->GetTotalRx(), g_cwnd,
                g_ssth, g_state, g_rto);
    Simulator::Schedule(Seconds(period), &Sample, sink, period);
}

static void
Hook()
{
    const std::string s = "/NodeList/0/$ns3::TcpL4Protocol/SocketList/0/";
    Config::ConnectWithoutContext(s + "CongestionWindow",
                                  MakeCallback(+[](uint32_t, uint32_t v) { g_cwnd = v; }));
    Config::ConnectWithoutContext(s + "SlowStartThreshold",
                                  MakeCallback(+[](uint32_t, uint32_t v) { g_ssth = v; }));
    Config::ConnectWithoutContext(
        s + "CongState",
        MakeCallback(+[](TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t v) {
            g_state = v;
            if (v == TcpSocketState::CA_LOSS)
                ++g_rto;
        }));
}

int
main(int argc, char* argv[])
{
    std::string scenario = "window";
    std::string tcp = "NewReno";
    std::string recovery = "prr";
    int delAck = -1;
    bool sack = true;
    bool ts = true;
    double minRto = 1.0;
    uint32_t iw = 10;
    uint32_t seed = 1;
    double simTime = -1;
    double trace = 0;
    CommandLine cmd;
    cmd.AddValue("scenario", "window | rate | loss", scenario);
    cmd.AddValue("tcp", "NewReno | Cubic | LinuxReno", tcp);
    cmd.AddValue("recovery", "prr | classic", recovery);
    cmd.AddValue("delAck", "TcpSocket::DelAckCount (-1 = scenario default)", delAck);
    cmd.AddValue("sack", "TcpSocketBase::Sack", sack);
    cmd.AddValue("ts", "TcpSocketBase::Timestamp (rate scenario forces off)", ts);
    cmd.AddValue("minRto", "TcpSocketBase::MinRto in seconds", minRto);
    cmd.AddValue("iw", "TcpSocket::InitialCwnd in segments", iw);
    cmd.AddValue("seed", "RngSeedManager run number", seed);
    cmd.AddValue("simTime", "simulated seconds (-1 = scenario default)", simTime);
    cmd.AddValue("trace", "if > 0, print cwnd/ssthresh/state every TRACE seconds (diagnosis)", trace);
    cmd.Parse(argc, argv);

    std::string rate;
    std::string delay;
    uint32_t mss;
    uint32_t qlim;
    double tMeas;
    double loss = 0.0;
    uint32_t rcvBuf = 8 << 20;
    bool wscale = true;
    if (scenario == "window")
    {
        rate = "10Mbps";
        delay = "280ms";
        mss = 1448;
        qlim = 1000;
        tMeas = 10.0;
        if (simTime < 0)
            simTime = 60.0;
        rcvBuf = 65535;
        wscale = false;
        if (delAck < 0)
            delAck = 2;
    }
    else if (scenario == "rate")
    {
        rate = "2Mbps";
        delay = "50ms";
        mss = 1000;
        qlim = 100;
        tMeas = 20.0;
        if (simTime < 0)
            simTime = 60.0;
        ts = false;
        if (delAck < 0)
            delAck = 2;
    }
    else if (scenario == "loss")
    {
        rate = "100Mbps";
        delay = "50ms";
        mss = 1448;
        qlim = 10000;
        tMeas = 10.0;
        if (simTime < 0)
            simTime = 1000.0;
        loss = 0.01;
        if (delAck < 0)
            delAck = 1;
    }
    else
    {
        std::fprintf(stderr, "unknown scenario %s\n", scenario.c_str());
        return 2;
    }

    RngSeedManager::SetSeed(1);
    RngSeedManager::SetRun(seed);

    TypeId ca = TcpNewReno::GetTypeId();
    if (tcp == "Cubic")
        ca = TcpCubic::GetTypeId();
    else if (tcp == "LinuxReno")
        ca = TcpLinuxReno::GetTypeId();
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(ca));
    if (recovery == "classic")
        Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                           TypeIdValue(TcpClassicRecovery::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(8 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcvBuf));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(iw));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAck));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(wscale));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(ts));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(Seconds(minRto)));

    NodeContainer nodes;
    nodes.Create(2);
    InternetStackHelper stack;
    stack.Install(nodes);

    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(rate));
    p2p.SetChannelAttribute("Delay", StringValue(delay));
    p2p.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize",
                 StringValue(std::to_string(qlim) + "p"));
    NetDeviceContainer devs = p2p.Install(nodes);

    if (loss > 0)
    {
        Ptr<RateErrorModel> em = CreateObject<RateErrorModel>();
        em->SetUnit(RateErrorModel::ERROR_UNIT_PACKET);
        em->SetRate(loss);
        em->AssignStreams(0);
        devs.Get(1)->SetAttribute("ReceiveErrorModel", PointerValue(em));
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

    BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(ifs.GetAddress(1), port));
    src.SetAttribute("MaxBytes", UintegerValue(0));
    src.SetAttribute("SendSize", UintegerValue(mss));
    ApplicationContainer ca2 = src.Install(nodes.Get(0));
    ca2.Start(Seconds(0.0));

    if (trace > 0)
    {
        Simulator::Schedule(Seconds(0.01), &Hook);
        Simulator::Schedule(Seconds(trace), &Sample, sink, trace);
    }
    Simulator::Schedule(Seconds(tMeas), [sink]() { g_rxAtMark = sink->GetTotalRx(); });
    Simulator::Stop(Seconds(simTime));
    Simulator::Run();
    uint64_t rx = sink->GetTotalRx() - g_rxAtMark;
    double gp = rx * 8.0 / (simTime - tMeas);
    std::printf("ns3 scenario=%s tcp=%s recovery=%s delAck=%d sack=%d ts=%d minRto=%g iw=%u "
                "seed=%u simtime=%g interval=[%g,%g] rx_bytes=%llu goodput_bps=%.1f\n",
                scenario.c_str(), tcp.c_str(), recovery.c_str(), delAck, sack, ts, minRto, iw,
                seed, simTime, tMeas, simTime, (unsigned long long)rx, gp);
    Simulator::Destroy();
    return 0;
}
