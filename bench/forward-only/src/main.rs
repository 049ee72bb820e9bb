//! Forwards every request to backend `origin` unchanged and returns its response:
//! the least a Compute program in front of an origin can do, built with the room's
//! release profile. `bench/viceroy-cost` sets the room's allowed path against it
//! (docs/research/viceroy-cost.md).

#[cfg(target_arch = "wasm32")]
#[fastly::main]
fn main(req: fastly::Request) -> Result<fastly::Response, fastly::Error> {
    Ok(req.send("origin")?)
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "forward-only runs inside Fastly Compute: \
         `cargo build --release --target wasm32-wasip1 -p forward-only` in bench/"
    );
    std::process::exit(2);
}
