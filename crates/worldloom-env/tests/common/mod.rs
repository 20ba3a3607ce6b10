//! Support shared by the env crate's tests.

pub mod openenv;
