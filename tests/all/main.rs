//! quickforge's integration tests: one binary, so it links once.

mod api;
mod cli;
mod isolation;
mod limits;
mod soak;
mod support;
