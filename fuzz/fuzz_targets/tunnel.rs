//! The IP-in-IP tunnel endpoint's decapsulation: arbitrary packets (2 bytes of payload length,
//! then header bytes), and valid tunnel packets from `remote`, a listed peer or a stranger with
//! one byte corrupted. The checks live in `satpep_proto::tunnel::fuzzing` so that a stable
//! property test in satpep-proto runs them too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_proto::tunnel::fuzzing::decapsulate_input(data);
});
