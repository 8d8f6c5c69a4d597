//! Arbitrary packets, time and timers through one middlebox of every kind (and a chain);
//! body in `satpep_proto::fuzzing`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_proto::fuzzing::middleboxes(data);
});
