//! PMI: the stream decoder, the line parsers, encode/decode round trips and
//! the server fed arbitrary bytes by its ranks (gridmpi_pmi::fuzzing).
#![no_main]
libfuzzer_sys::fuzz_target!(|data: &[u8]| gridmpi_pmi::fuzzing::pmi(data));
