//! The committed module, `static/toll-solver.wasm.b64`, is one that a page can
//! instantiate with no imports and that exports what `static/toll.script.html` calls.
//! Whether it is what the sources build now is `scripts/build-toll-solver.sh --check`'s
//! (building wasm here would be slow); what it computes is tested in a browser
//! (`tests/browser/waiting_room.rs`).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

const B64: &str = include_str!("../../static/toll-solver.wasm.b64");

/// The value types of the WebAssembly binary format.
const I32: u8 = 0x7f;
const F64: u8 = 0x7c;

#[test]
fn the_module_imports_nothing_and_exports_what_the_page_calls() {
    assert_eq!(B64.lines().count(), 1, "one line of base64");
    let wasm = STANDARD.decode(B64.trim_end()).expect("base64");
    let module = Module::parse(&wasm);
    assert!(module.imports == 0, "a page instantiates it with {{}}");
    let mut names: Vec<&str> = module.exports.iter().map(|e| e.name.as_str()).collect();
    names.sort_unstable();
    assert_eq!(names, ["memory", "prefix", "search"]);
    let export = |name: &str| module.exports.iter().find(|e| e.name == name).unwrap();
    assert_eq!(export("memory").kind, 2);
    // prefix() -> i32 (the address), search(start: f64, count: i32, bits: i32) -> f64.
    assert_eq!(module.signature(export("prefix")), (vec![], vec![I32]));
    assert_eq!(
        module.signature(export("search")),
        (vec![F64, I32, I32], vec![F64])
    );
    assert!(
        wasm.len() < 16 * 1024,
        "{} bytes inlined in every waiting page",
        wasm.len()
    );
}

#[test]
fn the_reader_sees_imports_and_exports() {
    // (module (import "env" "f" (func)) (func (export "g"))), as node builds it.
    let wasm = [
        0, 0x61, 0x73, 0x6d, 1, 0, 0, 0, // magic, version
        1, 4, 1, 0x60, 0, 0, // types: () -> ()
        2, 9, 1, 3, b'e', b'n', b'v', 1, b'f', 0, 0, // imports: env.f, a function
        3, 2, 1, 0, // functions: one, of type 0
        7, 5, 1, 1, b'g', 0, 1, // exports: g, function 1
        10, 4, 1, 2, 0, 0x0b, // code
    ];
    let module = Module::parse(&wasm);
    assert_eq!(module.imports, 1);
    assert_eq!(module.exports.len(), 1);
    assert_eq!(
        (module.exports[0].name.as_str(), module.exports[0].kind),
        ("g", 0)
    );
}

struct Export {
    name: String,
    kind: u8,
    index: u32,
}

/// What this test reads of a module: its function types, the type of each function
/// it defines, the number of its imports and its exports.
struct Module {
    types: Vec<(Vec<u8>, Vec<u8>)>,
    functions: Vec<u32>,
    imports: u32,
    exports: Vec<Export>,
}

impl Module {
    fn parse(wasm: &[u8]) -> Module {
        assert_eq!(&wasm[..8], b"\0asm\x01\0\0\0", "magic and version 1");
        let mut module = Module {
            types: Vec::new(),
            functions: Vec::new(),
            imports: 0,
            exports: Vec::new(),
        };
        let mut r = Reader { bytes: wasm, at: 8 };
        while r.at < wasm.len() {
            let id = r.byte();
            let size = r.u32() as usize;
            let end = r.at + size;
            match id {
                1 => {
                    for _ in 0..r.u32() {
                        assert_eq!(r.byte(), 0x60, "a function type");
                        let params = r.vec_of_bytes();
                        let results = r.vec_of_bytes();
                        module.types.push((params, results));
                    }
                }
                2 => module.imports = r.u32(),
                3 => module.functions = (0..r.u32()).map(|_| r.u32()).collect(),
                7 => {
                    for _ in 0..r.u32() {
                        let name = String::from_utf8(r.vec_of_bytes()).expect("a UTF-8 name");
                        let kind = r.byte();
                        let index = r.u32();
                        module.exports.push(Export { name, kind, index });
                    }
                }
                _ => {}
            }
            r.at = end;
        }
        module
    }

    fn signature(&self, export: &Export) -> (Vec<u8>, Vec<u8>) {
        assert_eq!(export.kind, 0, "{} is a function", export.name);
        assert_eq!(self.imports, 0, "defined functions are numbered from 0");
        let ty = self.functions[export.index as usize];
        self.types[ty as usize].clone()
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> u8 {
        self.at += 1;
        self.bytes[self.at - 1]
    }

    /// An unsigned LEB128 number.
    fn u32(&mut self) -> u32 {
        let mut value = 0u32;
        for shift in (0..35).step_by(7) {
            let b = self.byte();
            value |= u32::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return value;
            }
        }
        panic!("a LEB128 number longer than 5 bytes")
    }

    fn vec_of_bytes(&mut self) -> Vec<u8> {
        let n = self.u32() as usize;
        self.at += n;
        self.bytes[self.at - n..self.at].to_vec()
    }
}
