//! Arbitrary bytes as the first bytes of an accelerated-PEP stream (what a gateway reads from
//! an authenticated terminal before it connects anywhere): a header parses or is refused;
//! what parses names connectable addresses and round-trips byte for byte. Body:
//! `satpep_proto::accel::header::fuzzing::header_input`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_proto::accel::header::fuzzing::header_input(data);
});
