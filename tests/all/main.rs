//! quickforge's integration tests: one binary, so it links once.

mod api;
mod audit;
mod bypass_corpus;
mod cli;
mod config;
mod dts;
mod faults;
mod gateway;
mod groups;
mod hostile;
mod hostwork;
mod http;
mod isolation;
mod json;
mod limits;
mod load;
mod mcp;
mod metadata;
mod policy;
mod redaction;
mod soak;
mod state;
mod support;
mod validator;
mod verdicts;
