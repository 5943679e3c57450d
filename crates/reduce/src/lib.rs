//! Reduction kernels: every predefined MPI operation on every element type
