//! The `quickforge` binary; see [`quickforge::main`].

fn main() -> std::process::ExitCode {
    quickforge::main()
}
