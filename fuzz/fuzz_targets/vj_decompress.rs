//! RFC 1144 decompressor on arbitrary frames, and compress → (lose) → decompress round trips of
//! header sequences driven by the input. The checks live in `satpep_proto::vj::fuzzing` so that
//! a stable test in satpep-proto runs them too.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_proto::vj::fuzzing::vj_decompress(data);
});
