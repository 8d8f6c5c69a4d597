// satpep peer baseline: ns-3 speed benchmark (dumbbell of N bulk CUBIC flows).
//
// Same scenario as bench/peers/ns2/dumbbell.tcl:
//   s_i --1Gb/0ms-- r0 ==100Mb/250ms==> r1 --1Gb/0ms-- d_i     (i = 0..N-1)
//                     <==10Mb/250ms==
// Every device queue is a 1000-packet DropTailQueue and the traffic-control
// layer is removed (ns-3 would otherwise install FqCoDel on every device), so
// the bottleneck is a plain 1000-packet drop-tail FIFO as in ns-2.
// TCP: TcpCubic, SegmentSize 1448, SndBuf = RcvBuf = 8 MiB (window scaling on),
// timestamps and SACK on (ns-3 defaults), InitialCwnd 10, DelAckCount 1 so the
// receiver ACKs every segment like ns-2's TCPSink. Flow i starts at i*1 ms.
// No tracing, no pcap, no flow monitor.
//
// Usage: dumbbell --flows=N [--simTime=60] [--delAck=1]
// Prints delivered data packets (PacketSink bytes / 1448), executed events,
// and the wall time of Simulator::Run().

#include "ns3/applications-module.h"
#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cstdio>

using namespace ns3;

int
main(int argc, char* argv[])
{
    uint32_t flows = 1;
    double simTime = 60.0;
    uint32_t delAck = 1;
    const uint32_t mss = 1448;
    CommandLine cmd;
    cmd.AddValue("flows", "number of bulk flows", flows);
    cmd.AddValue("simTime", "simulated seconds", simTime);
    cmd.AddValue("delAck", "TcpSocket::DelAckCount (1 = ACK every segment)", delAck);
    cmd.Parse(argc, argv);

    auto t0 = std::chrono::steady_clock::now();

    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpCubic::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(mss));
    Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(8 << 20));
    Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(8 << 20));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(delAck));
    Config::SetDefault("ns3::TcpSocketBase::WindowScaling", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(true));
    Config::SetDefault("ns3::TcpSocketBase::Timestamp", BooleanValue(true));

    NodeContainer routers;
    routers.Create(2);
    NodeContainer senders;
    senders.Create(flows);
    NodeContainer receivers;
    receivers.Create(flows);

    InternetStackHelper stack;
    stack.Install(routers);
    stack.Install(senders);
    stack.Install(receivers);

    PointToPointHelper access;
    access.SetDeviceAttribute("DataRate", StringValue("1Gbps"));
    access.SetChannelAttribute("Delay", StringValue("0ms"));
    access.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1000p"));

    PointToPointHelper bottleneck;
    bottleneck.SetDeviceAttribute("DataRate", StringValue("100Mbps"));
    bottleneck.SetChannelAttribute("Delay", StringValue("250ms"));
    bottleneck.SetQueue("ns3::DropTailQueue<Packet>", "MaxSize", StringValue("1000p"));

    NetDeviceContainer core = bottleneck.Install(routers.Get(0), routers.Get(1));
    // Return path r1 -> r0 is 10 Mb/s (the channel delay is shared: 250 ms).
    core.Get(1)->SetAttribute("DataRate", StringValue("10Mbps"));

    Ipv4AddressHelper addr;
    TrafficControlHelper tch;
    addr.SetBase("10.0.0.0", "255.255.255.252");
    addr.Assign(core);
    tch.Uninstall(core);

    Ipv4InterfaceContainer rxIfs;
    for (uint32_t i = 0; i < flows; ++i)
    {
        NetDeviceContainer a = access.Install(senders.Get(i), routers.Get(0));
        NetDeviceContainer b = access.Install(routers.Get(1), receivers.Get(i));
        char base[32];
        std::snprintf(base, sizeof base, "10.1.%u.0", i);
        addr.SetBase(base, "255.255.255.0");
        addr.Assign(a);
        tch.Uninstall(a);
        std::snprintf(base, sizeof base, "10.2.%u.0", i);
        addr.SetBase(base, "255.255.255.0");
        Ipv4InterfaceContainer ri = addr.Assign(b);
        tch.Uninstall(b);
        rxIfs.Add(ri.Get(1));
    }
    Ipv4GlobalRoutingHelper::PopulateRoutingTables();

    const uint16_t port = 5000;
    std::vector<Ptr<PacketSink>> sinks;
    for (uint32_t i = 0; i < flows; ++i)
    {
        PacketSinkHelper sinkHelper("ns3::TcpSocketFactory",
                                    InetSocketAddress(Ipv4Address::GetAny(), port));
        ApplicationContainer s = sinkHelper.Install(receivers.Get(i));
        s.Start(Seconds(0.0));
        sinks.push_back(DynamicCast<PacketSink>(s.Get(0)));

        BulkSendHelper src("ns3::TcpSocketFactory", InetSocketAddress(rxIfs.GetAddress(i), port));
        src.SetAttribute("MaxBytes", UintegerValue(0));
        src.SetAttribute("SendSize", UintegerValue(mss));
        ApplicationContainer a = src.Install(senders.Get(i));
        a.Start(Seconds(0.001 * i));
    }

    Simulator::Stop(Seconds(simTime));
    auto t1 = std::chrono::steady_clock::now();
    Simulator::Run();
    auto t2 = std::chrono::steady_clock::now();

    uint64_t bytes = 0;
    for (auto& s : sinks)
    {
        bytes += s->GetTotalRx();
    }
    uint64_t delivered = bytes / mss;
    uint64_t events = Simulator::GetEventCount();
    double setup = std::chrono::duration<double>(t1 - t0).count();
    double run = std::chrono::duration<double>(t2 - t1).count();
    std::printf("ns3 flows=%u simtime=%g delivered_pkts=%llu sink_bytes=%llu events=%llu "
                "setup_s=%.3f run_s=%.3f us_per_pkt_run=%.3f events_per_s=%.0f goodput_mbps=%.3f\n",
                flows,
                simTime,
                (unsigned long long)delivered,
                (unsigned long long)bytes,
                (unsigned long long)events,
                setup,
                run,
                delivered ? run * 1e6 / delivered : 0.0,
                run > 0 ? events / run : 0.0,
                bytes * 8.0 / simTime / 1e6);
    Simulator::Destroy();
    return 0;
}
