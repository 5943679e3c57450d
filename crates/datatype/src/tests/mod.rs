//! Tests that span modules: the naive reference and random types, MPICH
//! reference values, envelopes and contents, error handling, performance.

mod mpich;
mod random;
mod reference;
mod contents;
mod limits;

/// Datatypes are shared across threads (the engine and the progress loop).
#[test]
fn datatypes_are_send_and_sync() {
    fn check<T: Send + Sync>() {}
    check::<crate::Datatype>();
    check::<std::sync::Arc<crate::Datatype>>();
    check::<crate::TypeError>();
}
