//! Arbitrary wire bytes as real packets (header and payload) into the split-TCP relay, the
//! spoofing gateway and Snoop. Input: records `[port, header_len, len_hi, len_lo, bytes…]`. The
//! checks live in `satpep_proto::pep::fuzzing` so that a stable test in satpep-proto runs them
//! too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_proto::pep::fuzzing::real_packets(data);
});
