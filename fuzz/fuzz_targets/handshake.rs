//! The TCP handshake's connector and acceptor machines fed arbitrary bytes
//! (gridmpi_transport::tcp::handshake::fuzzing).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| gridmpi_transport::tcp::handshake::fuzzing::handshake(data));
