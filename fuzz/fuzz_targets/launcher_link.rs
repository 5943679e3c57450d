//! Frames between gridmpirun and its proxies, both directions. gridmpirun
//! is a binary crate, so its link module (and the exit status type it
//! carries) are compiled in here from their files.
#![no_main]

#[allow(dead_code)]
#[path = "../../crates/launcher/src/sys.rs"]
mod sys;

#[allow(dead_code)]
#[path = "../../crates/launcher/src/link.rs"]
mod link;

libfuzzer_sys::fuzz_target!(|data: &[u8]| link::fuzzing::link(data));
