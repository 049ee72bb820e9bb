//! `demo-origin [ADDR]`: serves the demo origin (default 127.0.0.1:8080) until stopped.

use clap::Parser;

/// Serves the waiting room's demo origin until stopped.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// The address to listen on.
    #[arg(default_value = "127.0.0.1:8080")]
    addr: String,
}

fn main() {
    let args = Args::parse();
    match demo_origin::Origin::start(&args.addr) {
        Ok(origin) => {
            println!("demo origin listening on http://{}", origin.addr());
            // The server runs on its own thread; this one only keeps the process up.
            loop {
                std::thread::park();
            }
        }
        Err(err) => {
            eprintln!("demo origin: {err}");
            std::process::exit(1);
        }
    }
}
