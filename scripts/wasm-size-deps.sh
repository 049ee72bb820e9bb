#!/usr/bin/env bash
# What each dependency costs in the room's wasm, in bytes (docs/wasm-size-deps.md).
#
# Usage: scripts/wasm-size-deps.sh [REV]     (REV defaults to HEAD)
#
# Measures the committed tree at REV, never the working tree: each tree below is
# a `git archive` copy under target/size-deps/trees, so the numbers are those of
# a commit. Two complementary methods, printed as Markdown:
#
# (a) Attribution. The room and tools/hello-compute are built with the release
#     profile (opt-level s, fat LTO, 1 CGU) but without stripping, and with
#     `--no-merge-data-segments` so that each constant keeps its own, named data
#     segment. `twiggy top` lists every function and data segment; each is
#     charged to a crate by its (demangled) name: the first crate its path names
#     other than std's own crates (so `drop_in_place<fastly::Request>` is
#     fastly's), std when it names no other crate, std for C symbols (wasi-libc,
#     the allocator). Anonymous constants (`.Lanon.<hash>.N`) are charged to the
#     crate whose rlib defines that hash. Crates are then grouped by the room's
#     direct dependency that pulls them in (`cargo tree`, wasm32-wasip1); a crate
#     reached from several is "shared". Custom sections and names, which the
#     release build strips, are left out. Limits: code that LTO inlined into a
#     caller is charged to the caller (rand_chacha's block function, hex, most of
#     hmac end up in waiting_room's functions), and a generic std function
#     instantiated for someone else's types stays std's.
#
# (b) Removal. The stripped release wasm of REV, and of copies of REV in which one
#     dependency is replaced or stubbed out (edits below), built the same way;
#     the difference is what the dependency costs, inlined code included:
#       hex          replaced by the hand-written encode/decode it stands for;
#       rand_chacha  stubbed: the draw uses the seed itself (an upper bound of
#                    the lottery's cost; not a candidate, see lottery.rs);
#       hmac + sha2  stubbed: no signature at all (what the tokens' HMAC costs);
#       f32 parsing  not a dependency: Accept-Language q-values compared as text
#                    instead of `parse::<f32>`, the one use of std's float parser;
#       BEFORE_REV   optional: the stripped size of another commit (set
#                    BEFORE_REV=<rev> to compare with an earlier cut).
#     A variant whose edit no longer applies (the dependency is gone) is skipped.
#
# Needs twiggy (`cargo install --locked twiggy`) and python3. Builds go to
# target/size-deps (the first run builds every dependency twice, a few minutes
# on 2 cores; then about a minute per tree).
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

rev=${1:-HEAD}
before_rev=${BEFORE_REV:-}
root=$PWD/target/size-deps
trees=$root/trees
mkdir -p "$trees"

command -v twiggy >/dev/null || {
  echo "twiggy is missing: cargo install --locked twiggy" >&2
  exit 1
}

# The release profile, spelled out so the numbers do not depend on Cargo.toml.
release=(
  CARGO_PROFILE_RELEASE_OPT_LEVEL=s
  CARGO_PROFILE_RELEASE_LTO=fat
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1
  CARGO_PROFILE_RELEASE_DEBUG=false
)

# tree NAME REV: a fresh copy of REV's files in $trees/NAME; prints its path.
tree() {
  local dir=$trees/$1
  rm -rf "$dir"
  mkdir -p "$dir"
  git archive "$2" | tar -x -m -C "$dir" # -m: fresh mtimes, so Cargo rebuilds
  echo "$dir"
}

# stripped DIR [PACKAGES...]: builds the stripped release wasm of the tree in DIR
# (all trees share one target directory) and copies it to $root/wasm/NAME.wasm.
# Offline, not locked: a variant that drops a dependency rewrites its Cargo.lock.
stripped() {
  local dir=$1
  shift
  local name
  name=$(basename "$dir")
  (cd "$dir" && env "${release[@]}" CARGO_PROFILE_RELEASE_STRIP=symbols \
    cargo build --quiet --offline --release --target wasm32-wasip1 \
    --target-dir "$root/stripped" "$@" --bins >&2)
  mkdir -p "$root/wasm"
  cp "$root/stripped/wasm32-wasip1/release/edge-waiting-room.wasm" "$root/wasm/$name.wasm"
  if [[ " $* " == *" hello-compute "* ]]; then
    cp "$root/stripped/wasm32-wasip1/release/hello-compute.wasm" "$root/wasm/$name-hello.wasm"
  fi
  stat -c %s "$root/wasm/$name.wasm"
}

# edit DIR FILE PERL: applies the perl substitution to DIR/FILE; fails if it
# changed nothing.
edit() {
  local file=$1/$2
  local old
  old=$(sha256sum "$file")
  perl -0pi -e "$3" "$file"
  [[ $(sha256sum "$file") != "$old" ]]
}

base=$(tree base "$rev")

# --- (a) attribution ---------------------------------------------------------
(cd "$base" && env "${release[@]}" CARGO_PROFILE_RELEASE_STRIP=none \
  CARGO_TARGET_WASM32_WASIP1_RUSTFLAGS="-C link-arg=--no-merge-data-segments" \
  cargo build --quiet --locked --release --target wasm32-wasip1 \
  --target-dir "$root/symbols" -p edge-waiting-room -p hello-compute --bins >&2)
sym=$root/symbols/wasm32-wasip1/release
twiggy top -n 1000000 -f csv "$sym/edge-waiting-room.wasm" >"$root/room.csv"
twiggy top -n 1000000 -f csv "$sym/hello-compute.wasm" >"$root/hello.csv"
(cd "$base" && cargo tree --locked --target wasm32-wasip1 -e normal -f '{lib}' \
  --prefix depth -p edge-waiting-room) >"$root/tree.txt"
# Which rlib (dependency or std) defines each anonymous-constant hash.
grep -ho 'Lanon\.[0-9a-f]*' "$root/room.csv" "$root/hello.csv" | sort -u | cut -d. -f2 >"$root/anon.txt"
sysroot_lib=$(rustc --print sysroot)/lib/rustlib/wasm32-wasip1/lib
: >"$root/anon-crates.txt"
while read -r hash; do
  rlib=$(grep -l "$hash" "$sym"/deps/*.rlib "$sysroot_lib"/*.rlib 2>/dev/null | head -n1 || true)
  [[ -n "$rlib" ]] && echo "$hash $rlib" >>"$root/anon-crates.txt"
done <"$root/anon.txt"

# --- (b) removal -------------------------------------------------------------
base_size=$(stripped "$base" -p edge-waiting-room -p hello-compute)
hello_size=$(stat -c %s "$root/wasm/base-hello.wasm")
rows=()

dir=$(tree no-hex "$rev")
if edit "$dir" src/token.rs 's/hex::encode\(sig\)/sig.iter().map(|b| format!("{b:02x}")).collect::<String>()/' &&
  edit "$dir" src/token.rs 's/hex::decode_to_slice\(hex_digits, &mut sig\)\.ok\(\)\?;/for (byte, pair) in sig.iter_mut().zip(hex_digits.as_bytes().chunks(2)) {\n        *byte = u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok()?;\n    }/' &&
  edit "$dir" Cargo.toml 's/\nhex = "[^"]*"//'; then
  size=$(stripped "$dir" -p edge-waiting-room)
  rows+=("| hex | replaced by a hand-written encode/decode | $size | $((base_size - size)) |")
fi

dir=$(tree stub-rand_chacha "$rev")
if edit "$dir" src/lottery.rs 's/ChaCha20Rng::seed_from_u64\(u64::from\(seed\)\)\.next_u32\(\)/seed/' &&
  edit "$dir" src/lottery.rs 's/use rand_chacha::[^\n]*\n//g' &&
  edit "$dir" Cargo.toml 's/\nrand_chacha = "[^"]*"//'; then
  size=$(stripped "$dir" -p edge-waiting-room)
  rows+=("| rand_chacha | stubbed (the draw uses the seed itself) | $size | $((base_size - size)) |")
fi

dir=$(tree stub-hmac-sha2 "$rev")
if edit "$dir" src/token.rs 's/let sig = mac\(key, &text\)\.finalize\(\)\.into_bytes\(\);/let sig = [key.bytes()[0]; 32];/' &&
  edit "$dir" src/token.rs 's/mac\(key, &self\.claims\.string_to_sign\(\)\)\s*\.verify_slice\(&self\.sig\)\s*\.is_ok\(\)/self.sig[0] == key.bytes()[0] \&\& !self.claims.string_to_sign().is_empty()/' &&
  edit "$dir" src/token.rs 's/\nfn mac\(.*?\n}\n//s; s/use hmac::[^\n]*\nuse sha2::[^\n]*\n//; s/type HmacSha256 = [^\n]*\n//' &&
  edit "$dir" Cargo.toml 's/\nhmac = "[^"]*"//; s/\nsha2 = "[^"]*"//'; then
  size=$(stripped "$dir" -p edge-waiting-room)
  rows+=("| hmac + sha2 | stubbed (no signature at all) | $size | $((base_size - size)) |")
fi

# Not a dependency: std's float parser, which the room reaches only through the
# q-values of Accept-Language (src/page.rs).
dir=$(tree stub-f32-parse "$rev")
if edit "$dir" src/page.rs 's/\.and_then\(\|q\| q\.trim\(\)\.parse::<f32>\(\)\.ok\(\)\)\s*\.is_some_and\(\|q\| q <= 0\.0\)/.is_some_and(|q| q.trim() == "0")/'; then
  size=$(stripped "$dir" -p edge-waiting-room)
  rows+=("| (std: float parsing) | Accept-Language q-values compared as text, not \`parse::<f32>\` | $size | $((base_size - size)) |")
fi

if [[ -n "$before_rev" ]]; then
  dir=$(tree before "$before_rev")
  size=$(stripped "$dir" -p edge-waiting-room)
  rows+=("| (commit $(git rev-parse --short "$before_rev")) | the tree before | $size | $((base_size - size)) |")
fi

# --- report ------------------------------------------------------------------
echo "## $(git rev-parse --short "$rev"): stripped release wasm"
echo
echo "room $base_size bytes, hello-compute $hello_size bytes, room − hello $((base_size - hello_size)) bytes."
echo
echo "### (b) Removal: stripped release wasm without the dependency"
echo
echo "| dependency | variant | room bytes | saved vs $(git rev-parse --short "$rev") |"
echo "|---|---|---:|---:|"
for row in "${rows[@]}"; do echo "$row"; done
echo
python3 - "$root" <<'PY'
import csv, re, sys
from collections import defaultdict

root = sys.argv[1]

# Crates that come with the toolchain: std's own dependencies are demangled with a
# [hash] (v0 mangling), so only these names are std's without one.
STD = {"core", "alloc", "std", "compiler_builtins", "panic_abort", "panic_unwind",
       "unwind", "rustc_demangle", "std_detect", "addr2line", "gimli", "object",
       "miniz_oxide", "adler2", "wasi"}
CRATE = re.compile(r"(?:^|[<\s&*(,\[;])(?:dyn |mut |const )?([A-Za-z_][A-Za-z0-9_]*)(\[[0-9a-f]+\])?::")

# cargo tree: edges between crates (by lib name), the room's direct dependencies.
edges, direct, stack = defaultdict(set), [], []
for line in open(f"{root}/tree.txt"):
    m = re.match(r"(\d+)(\S+)", line.strip())
    if not m:
        continue
    depth, name = int(m.group(1)), m.group(2)
    del stack[depth:]
    if stack:
        edges[stack[-1]].add(name)
    if depth == 1:
        direct.append(name)
    stack.append(name)
room = "waiting_room"
owners = defaultdict(set)
for d in direct:
    seen, todo = set(), [d]
    while todo:
        c = todo.pop()
        if c not in seen:
            seen.add(c)
            todo.extend(edges[c])
    for c in seen:
        owners[c].add(d)

anon = {}
for line in open(f"{root}/anon-crates.txt"):
    h, rlib = line.split()
    name = re.sub(r"^lib|-[0-9a-f]+\.rlib$", "", rlib.rsplit("/", 1)[-1])
    anon[h] = name + ("[std]" if "/rustlib/" in rlib else "")

def mangled_crate(sym):
    m = re.match(r"_ZN(\d+)", sym)
    if m:
        n = int(m.group(1))
        return sym[3 + len(m.group(1)):3 + len(m.group(1)) + n]
    if sym.startswith("_R"):
        m = re.search(r"C(?:s[0-9A-Za-z]*_)?(\d+)", sym)
        if m:
            start = m.end()
            name = sym[start:start + int(m.group(1))]
            return name + "[std]"
    return None

LEGACY = [("$LT$", "<"), ("$GT$", ">"), ("$RF$", "&"), ("$BP$", "*"), ("$C$", ","),
          ("$u20$", " "), ("$u7b$", "{"), ("$u7d$", "}"), ("$u27$", "'"), ("..", "::")]

def crate_of(item):
    """The crate an item is charged to, or None for what the release strips."""
    if "$LT$" in item or "$u20$" in item:  # a legacy name twiggy left mangled
        item = item.lstrip("_")
        for k, v in LEGACY:
            item = item.replace(k, v)
    if item.startswith("custom section") or item.endswith("subsection"):
        return None
    m = re.match(r'data segment "\.(?:rodata|data|bss|tdata)\.?(.*)"$', item)
    if m:
        sym = m.group(1)
        a = re.match(r"\.Lanon\.([0-9a-f]+)\.", sym)
        if a:
            return anon.get(a.group(1), "?anonymous: in no rlib (probably the bin crate's own)")
        sym = re.sub(r"^\.Lswitch\.table\.", "", sym)
        c = mangled_crate(sym)
        return c if c else "libc[C]"
    if item.startswith("import "):
        return "fastly_sys" if "fastly" in item else "wasi[import]"
    if re.match(r"(export|type\[|table\[|elem\[|global\[|memory\[|start|code section|data\[)", item):
        return "(wasm structure)"
    found = CRATE.findall(item)
    if not found:
        return "libc[C]"
    for name, h in found:
        if not h and name not in STD and name not in ("impl", "for", "as", "dyn"):
            return name
    return found[0][0] + "[std]"

def group_of(crate):
    if crate is None or crate == "(wasm structure)" or crate.startswith("?"):
        return crate
    base = re.sub(r"\[.*\]$", "", crate)
    if "[" in crate or base in STD:
        return "std"
    if base in ("waiting_room", "edge_waiting_room", "hello_compute"):
        return "the room's own code"
    o = owners.get(base)
    if not o:
        return f"? {base}"
    return sorted(o)[0] if len(o) == 1 else "shared: " + " + ".join(sorted(o))

def load(path):
    crates, groups, std_paths = defaultdict(int), defaultdict(int), defaultdict(int)
    for row in csv.DictReader(open(path)):
        item, size = row["Name"], int(row["ShallowSize"])
        if item.startswith("Σ") or item.startswith("..."):
            continue
        c = crate_of(item)
        if c is None:
            continue
        crates[c] += size
        groups[group_of(c)] += size
        if group_of(c) == "std" and item.startswith("data segment"):
            std_paths["constants of " + re.sub(r"\[.*\]$", "", c)] += size
        elif group_of(c) == "std":
            m = re.match(r"<?([a-z_]+)(?:\[[0-9a-f]+\])?::([a-z_0-9]+)(?:::([a-z_0-9]+))?", item)
            key = "::".join(p for p in m.groups() if p) if m else ("C: " + item.split()[0] if "::" not in item else "generic impls")
            if key.startswith(("core::num", "core::fmt", "alloc::fmt", "core::unicode")):
                key = "::".join(key.split("::")[:3])
            else:
                key = "::".join(key.split("::")[:2])
            std_paths[key] += size
    return crates, groups, std_paths

rc, rg, rs = load(f"{root}/room.csv")
hc, hg, hs = load(f"{root}/hello.csv")
rt, ht = sum(rg.values()), sum(hg.values())
diff = rt - ht

print("### (a) Attribution, grouped by the room's direct dependency")
print()
print(f"Unstripped build, custom sections left out: room {rt} bytes, hello {ht} bytes.")
print()
print("| group | room bytes | hello bytes | room − hello | share of room − hello |")
print("|---|---:|---:|---:|---:|")
for g in sorted(set(rg) | set(hg), key=lambda g: -(rg.get(g, 0) - hg.get(g, 0))):
    d = rg.get(g, 0) - hg.get(g, 0)
    print(f"| {g} | {rg.get(g, 0)} | {hg.get(g, 0)} | {d} | {100 * d / diff:.1f} % |")
print(f"| total | {rt} | {ht} | {diff} | 100 % |")
print()
print("### (a) Attribution by crate (room, 200 bytes or more)")
print()
print("| crate | group | room bytes | hello bytes | room − hello |")
print("|---|---|---:|---:|---:|")
for c in sorted(rc, key=lambda c: -rc[c]):
    if rc[c] >= 200:
        print(f"| {c} | {group_of(c)} | {rc[c]} | {hc.get(c, 0)} | {rc[c] - hc.get(c, 0)} |")
print()
print("### (a) std in the room, by module (500 bytes or more)")
print()
print("| module | room bytes | hello bytes |")
print("|---|---:|---:|")
for k in sorted(rs, key=lambda k: -rs[k]):
    if rs[k] >= 500:
        print(f"| {k} | {rs[k]} | {hs.get(k, 0)} |")
PY
