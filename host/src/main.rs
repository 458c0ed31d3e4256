//! The `toolhost` command line. All logic lives in the library; this binary
//! parses flags, reads the environment, sets up logging and prints.

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main()
}
