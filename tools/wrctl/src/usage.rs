//! The one way a command says its command line cannot be used.

use clap::error::ErrorKind;

/// Exits with a usage error (status 2) that names what is wrong, as clap words
/// its own (`error: ...`, then where to find help).
pub fn usage_error(message: &str) -> ! {
    clap::Error::raw(ErrorKind::ValueValidation, message)
        .format(&mut clap::Command::new("wrctl"))
        .exit()
}

/// Says `message` on stderr and gives exit status `code`.
pub fn fail(code: u8, message: impl std::fmt::Display) -> std::process::ExitCode {
    eprintln!("wrctl: {message}");
    std::process::ExitCode::from(code)
}
