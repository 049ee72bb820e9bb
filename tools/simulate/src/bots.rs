//! Bots with many addresses (residential proxies): each bot address is a
//! visitor of its own, with one device on an address nobody else uses, that
//! follows the page's `Refresh` and wants one place. They come in two kinds, by
//! what they do about the room's bot toll ([`crate::toll_payment`]): a skipping bot
//! never pays it, a paying bot pays it as a browser's page does.

use std::str::FromStr;

use serde::Serialize;

/// What a bot does about the bot toll.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Bot {
    /// Never pays: it presents no toll cookie.
    Skipping,
    /// Pays every toll it is shown, as a browser's page does.
    Paying,
}

/// The bots besides the people: how many addresses of each kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Bots {
    /// Addresses of skipping bots.
    pub skipping: u32,
    /// Addresses of paying bots.
    pub paying: u32,
}

impl Bots {
    /// Bot addresses of both kinds.
    pub fn addresses(&self) -> u64 {
        u64::from(self.skipping) + u64::from(self.paying)
    }
}

impl FromStr for Bots {
    type Err = String;

    /// `SKIPPING:PAYING`, addresses of each kind.
    fn from_str(spec: &str) -> Result<Bots, String> {
        let number = |part: &str| {
            part.trim()
                .replace('_', "")
                .parse::<u32>()
                .map_err(|_| format!("{part:?} is not a number of addresses"))
        };
        match spec.split(':').collect::<Vec<_>>()[..] {
            [skipping, paying] => Ok(Bots {
                skipping: number(skipping)?,
                paying: number(paying)?,
            }),
            _ => Err(format!("{spec:?}: expected SKIPPING:PAYING")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bots_parse_as_two_counts() {
        let bots: Bots = "1_000:250".parse().unwrap();
        assert_eq!(
            (bots.skipping, bots.paying, bots.addresses()),
            (1000, 250, 1250)
        );
        for bad in ["", "5", "1:2:3", "-1:2", "x:1", "1.5:2"] {
            assert!(bad.parse::<Bots>().is_err(), "{bad:?}");
        }
    }
}
