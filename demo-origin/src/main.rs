//! `demo-origin [--capacity N [--service-ms MS] [--queue N]] [ADDR]`: serves the demo
//! origin (default 127.0.0.1:8080) until stopped, unlimited or with a capacity.

use std::time::Duration;

use clap::Parser;
use demo_origin::{Capacity, Origin};

/// Serves the waiting room's demo origin until stopped.
///
/// With --capacity, it serves that many requests at once, each holding its place for
/// --service-ms before it is answered, the others waiting in a queue of at most
/// --queue (beyond it: 503 at once). `POST /__origin/capacity?n=N&service_ms=MS&queue=Q`
/// (or `n=unlimited`) from a loopback address changes it while it runs;
/// `GET /__origin/stats` tells what it did.
#[derive(Parser)]
#[command(version)]
struct Args {
    /// The address to listen on.
    #[arg(default_value = "127.0.0.1:8080")]
    addr: String,
    /// Requests served at once (default: unlimited, every request answered at once).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=demo_origin::MAX_PLACES as u64))]
    capacity: Option<u64>,
    /// How long each request holds its place before it is answered [default: 50].
    #[arg(long, value_name = "MS", requires = "capacity")]
    service_ms: Option<u64>,
    /// Requests waiting beyond which the origin answers 503 at once [default: 10 ×
    /// the capacity].
    #[arg(long, value_name = "N", requires = "capacity")]
    queue: Option<usize>,
}

impl Args {
    fn capacity(&self) -> Option<Capacity> {
        let capacity = Capacity::new(self.capacity? as usize);
        let capacity = match self.service_ms {
            Some(ms) => capacity.with_service(Duration::from_millis(ms)),
            None => capacity,
        };
        Some(match self.queue {
            Some(queue) => capacity.with_queue(queue),
            None => capacity,
        })
    }
}

fn main() {
    let args = Args::parse();
    let capacity = args.capacity();
    match Origin::start_with(&args.addr, capacity) {
        Ok(origin) => {
            match capacity {
                None => println!("demo origin listening on http://{}", origin.addr()),
                Some(c) => println!(
                    "demo origin listening on http://{}: {} requests at once, {} ms each, {} waiting at most",
                    origin.addr(),
                    c.places,
                    c.service.as_millis(),
                    c.queue
                ),
            }
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
