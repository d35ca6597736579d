//! quickforge's integration tests: one binary, so it links once.

mod api;
mod cli;
mod config;
mod dts;
mod faults;
mod gateway;
mod hostile;
mod http;
mod isolation;
mod limits;
mod load;
mod mcp;
mod soak;
mod support;
