//! `demo-origin [ADDR]`: serves the demo origin (default 127.0.0.1:8080) until stopped.

fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:8080".to_string());
    match demo_origin::Origin::start(&addr) {
        Ok(origin) => {
            println!("demo origin listening on http://{}", origin.addr());
            loop {
                std::thread::park();
            }
        }
        Err(err) => {
            eprintln!("demo origin: cannot listen on {addr}: {err}");
            std::process::exit(1);
        }
    }
}
