//! MPI datatypes (see basic.rs for the element types).
pub mod basic;
pub use basic::{BasicType, FloatFormat, TypeClass};
