//! The ACK expander's input: arbitrary tunnel packets (2 bytes of payload length, then header
//! bytes), and valid compacted ACKs with one byte corrupted. The checks live in
//! `satpep_proto::ack::fuzzing` so that a stable test in satpep-proto runs them too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_proto::ack::fuzzing::expander_input(data);
});
