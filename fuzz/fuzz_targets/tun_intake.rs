//! Arbitrary bytes as read from the emulator's TUN devices (with and without a
//! `virtio_net_hdr`) into the packet path, which then drains; body in
//! `satpep_emu::fuzzing`. No system call is made.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    satpep_emu::fuzzing::tun_intake(data);
});
