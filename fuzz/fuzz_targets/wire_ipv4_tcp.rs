//! IPv4 + TCP header parsing, the in-place view and the emit round trip on arbitrary bytes.
//! Input: 2 bytes of payload length (big endian), then header bytes. The checks live in
//! `satpep_proto::wire::fuzzing` so that a stable test in satpep-proto runs them too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_proto::wire::fuzzing::ipv4_tcp(data);
});
