//! quickforge's integration tests: one binary, so it links once.

mod api;
mod cli;
mod hostile;
mod isolation;
mod limits;
mod soak;
mod support;
