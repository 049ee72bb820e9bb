//! `wrctl`: the manual is `docs/operate/wrctl.md` (its reference generated from
//! [`wrctl::cli`]), and `wrctl COMMAND --help`; how it runs: the library's
//! documentation (`tools/wrctl/src/lib.rs`). Each command is its `*_cmd.rs`.

use std::process::ExitCode;

use clap::Parser;
use wrctl::cli::{Cli, Command};

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Control(args) => wrctl::control_cmd::control(*args),
        Command::Keygen(args) => wrctl::keygen_cmd::keygen(args),
        Command::Token(command) => wrctl::token_cmd::run(command),
        Command::Login(command) => wrctl::login_cmd::run(command),
        Command::Rotate(args) => wrctl::rotate_cmd::rotate(args),
        Command::Revoke(args) => wrctl::revoke_cmd::revoke(args),
        Command::Pages(command) => wrctl::pages_cmd::pages(command),
        Command::Config(command) => wrctl::config_cmd::config(command),
        Command::Rooms(args) => wrctl::rooms_cmd::rooms(args),
        Command::Pass(command) => wrctl::pass_cmd::pass(command),
        Command::Report(args) => wrctl::report_cmd::report(&args),
    }
}
