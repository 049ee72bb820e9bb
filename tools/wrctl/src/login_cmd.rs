//! The command line of `wrctl login keys` and `wrctl login mint` (identity from the
//! site's login, `identity = login`); what they do: [`crate::login_keys`] and
//! [`crate::login_mint`].

use std::process::ExitCode;

use clap::Subcommand;

/// `wrctl login …`.
#[derive(Debug, Subcommand)]
pub enum LoginCommand {
    /// Make an identity provider's JWKS into login_keys, and write it when it changed.
    #[command(
        long_about = "Read an identity provider's JWKS (--jwks: an https:// URL, fetched with a \
10 s timeout and at most 262,144 bytes, no plain http:// but to a loopback address; or a \
file), judge each key with the room's own reader, and print on stdout the login_keys value: \
every usable key stripped to what verifying needs (kty, kid, alg, n and e, or crv, x and y), \
the first of each kid. The room verifies RS256 (RSA, 2048 to 4096 bits), ES256 (EC on P-256) \
and HS256 (oct, its secret in the Secret Store waitingroom_login under its kid); stderr names \
each key kept, and each key refused with why (an RSA key under 2048 bits, a kty such as OKP, \
a curve such as P-384, an alg that is not its key's, an oct key holding its secret, a second \
key of one kid). Nothing from a key but its public parts is ever printed.\n\n\
With --config-file or --fastly-config-store (the options of `wrctl config set`), the \
login_keys member of the settings item is written there, only when the keys differ from \
those the room reads there now (in any order): otherwise stderr says unchanged and nothing \
is written. Through the Fastly API: one GET of the items, and one upsert when changed. The \
write is refused when no key is usable, or when the settings item would pass a config-store \
value's 8,000 characters.\n\n\
Exit status: 0 when printed (and written or unchanged), 1 when the JWKS cannot be read, holds \
no usable key, or the write is refused or fails, 2 on bad usage.",
        after_long_help = "Example:
  wrctl login keys --jwks https://id.example.com/.well-known/jwks.json
  FASTLY_API_TOKEN=... wrctl login keys --jwks https://id.example.com/.well-known/jwks.json \\
    --fastly-config-store STORE_ID
  wrctl login keys --jwks provider-jwks.json --config-file local/config.json"
    )]
    Keys(crate::login_keys::KeysArgs),
    /// Mint login tokens as the site's sign-in would, for tests and load tests.
    #[command(
        long_about = "Mint login tokens (JWTs) as the site's sign-in would issue them, for tests \
and load tests of a room whose identity is login: signed RS256 or ES256 with --key (a PKCS #8 \
PEM private key, RSA or P-256, as `openssl genpkey` writes), or HS256 with the secret taken \
from the environment variable WRCTL_LOGIN_SECRET (never a flag), under --kid. Each token \
carries iss (--iss), aud (--aud), sub, iat (now), exp (now + --ttl) and each --claim; one \
token a line on stdout: one for --sub, or --count of them for --subs-prefix P, whose \
subjects are P0 to P{N-1}.\n\n\
--print-jwk prints instead the key's public JWK, for the service's login_keys (an HS256 key's \
JWK names only its kid: the secret goes to the Secret Store waitingroom_login under it). A key \
the room would refuse (an RSA key under 2048 bits) is refused for --print-jwk, and minted \
with only a warning (for tests of refused tokens).\n\n\
Exit status: 0 when minted, 1 when the key cannot be read or the room refuses its JWK for \
--print-jwk, 2 on bad usage.",
        after_long_help = "Example:
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out login-es.pem
  wrctl login mint --key login-es.pem --kid site-es --print-jwk
  wrctl login mint --key login-es.pem --kid site-es --iss https://id.example.com/ \\
    --aud waiting-room --subs-prefix load- --count 1000 --ttl 900 --claim tier=presale > tokens.txt
  export WRCTL_LOGIN_SECRET=...   # never on the command line
  wrctl login mint --kid site-hs --iss https://id.example.com/ --aud waiting-room --sub alice"
    )]
    Mint(crate::login_mint::MintArgs),
}

/// Runs `wrctl login …`.
pub fn run(command: LoginCommand) -> ExitCode {
    match command {
        LoginCommand::Keys(args) => crate::login_keys::run(args),
        LoginCommand::Mint(args) => crate::login_mint::run(args),
    }
}
