//! The `quickforge` binary; see [`quickforge::cli`].

fn main() -> std::process::ExitCode {
    quickforge::cli::main()
}
