//! Support code shared by the integration tests (`mod common;` in tests/*.rs).
// Each test binary compiles this module on its own and uses only part of it.
#![allow(dead_code)]

pub mod real_server;
