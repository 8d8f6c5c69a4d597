//! Arbitrary text as a daemon configuration (`satpep gateway --config`, `--check`): it must
//! parse or give an error that names the file and, when it names a line, a line of the text;
//! never panic (issue 36: numbers near 2^32 and 2^64 once wrapped or panicked). Seeded with the
//! repository's daemon configurations (deploy/, bench/deploy/). Body:
//! `satpep_daemon::config::fuzzing::config_input` (its corpus also runs in the daemon's tests).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_daemon::config::fuzzing::config_input(data);
});
