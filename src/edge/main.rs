//! The Fastly Compute entry point: reads the stores and the request, asks the core
//! for a plan, and carries it out. All decisions live in the library.

#[cfg(target_arch = "wasm32")]
mod edge;

#[cfg(target_arch = "wasm32")]
#[fastly::main]
fn main(req: fastly::Request) -> Result<fastly::Response, fastly::Error> {
    Ok(edge::handle(req))
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "edge-waiting-room runs inside Fastly Compute: build it with \
         `cargo build --release --target wasm32-wasip1` and serve it with Viceroy (see README.md)"
    );
    std::process::exit(2);
}
