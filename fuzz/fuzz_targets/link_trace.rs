//! Trace files for time-varying links: arbitrary text through the Mahimahi and step parsers
//! (first byte picks which), and every trace that parses driving a link. The checks live in
//! `satpep_proto::link::schedule::fuzzing` so that stable tests in satpep-proto run them too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_proto::link::schedule::fuzzing::trace_input(data);
});
