//! quickforge's integration tests: one binary, so it links once.

mod api;
mod audit;
mod boundary;
mod bypass_corpus;
mod cli;
mod config;
mod config_props;
mod dts;
mod faults;
mod gateway;
mod hostile;
mod http;
mod isolation;
mod json;
mod limits;
mod load;
mod mcp;
mod policy;
mod soak;
mod support;
mod validator;
