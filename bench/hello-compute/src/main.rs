//! Hello, world on Fastly Compute: the size of a program that does nothing but
//! answer, built with the same release profile as the room (BENCHMARKS.md).

#[cfg(target_arch = "wasm32")]
#[fastly::main]
fn main(_req: fastly::Request) -> Result<fastly::Response, fastly::Error> {
    Ok(fastly::Response::from_body("Hello, world!\n"))
}

#[cfg(not(target_arch = "wasm32"))]
fn main() {
    eprintln!(
        "hello-compute runs inside Fastly Compute: \
         `cargo build --release --target wasm32-wasip1 -p hello-compute` in bench/"
    );
    std::process::exit(2);
}
