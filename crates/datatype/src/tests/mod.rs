//! Tests that span modules: the naive reference and random types, MPICH
//! reference values, envelopes and contents, error handling, performance.

mod mpich;
mod random;
mod reference;
mod contents;
mod limits;
