//! Frame headers: decode, re-encode, field rules (gridmpi_wire::fuzzing).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| gridmpi_wire::fuzzing::header(data));
