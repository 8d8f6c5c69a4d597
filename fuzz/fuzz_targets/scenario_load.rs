//! Arbitrary text into the scenario loader: it must return a scenario or a located error,
//! never panic or hang. Seeded with the repository's scenario files.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = satpep_scenario::load_str(text, "fuzz.toml", &[]);
    }
});
