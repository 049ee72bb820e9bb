//! Bots with many addresses (residential proxies): each bot address is a
//! visitor of its own, with one device on an address nobody else uses, that
//! follows the page's `Refresh` and wants one place. They come in two kinds, by
//! what they do about the room's bot toll ([`crate::toll`]): a skipping bot
//! never pays it, a paying bot pays it as a browser's page does.

use std::str::FromStr;

use serde::Serialize;

use crate::population::{Device, Habit, Kind, Person, Population};
use crate::rng::Rng;
use crate::scenario::Arrivals;

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

    /// Adds the bots to `population`, after its people, each on a new address
    /// and arriving as `arrivals` says, drawn from a stream of their own (from
    /// `seed`): the people are those of the same scenario without bots.
    pub fn join(&self, population: &mut Population, arrivals: &Arrivals, seed: u64) {
        let mut rng = Rng::new(seed ^ 0xb075_0000_0000_0001);
        let kinds = std::iter::repeat_n(Bot::Skipping, self.skipping as usize)
            .chain(std::iter::repeat_n(Bot::Paying, self.paying as usize));
        for bot in kinds {
            let arrival = arrivals.draw(&mut rng);
            let person = population.people.len() as u32;
            population.people.push(Person {
                kind: Kind::Bot(bot),
                arrival,
                gives_up_after: None,
            });
            let address = population.new_address();
            population.devices.push(Device {
                person,
                address,
                arrival,
                tabs: 1,
                habit: Habit::Refresh,
            });
        }
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
    use crate::scenario::{Mix, Scenario};

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

    #[test]
    fn each_bot_comes_alone_on_an_address_of_its_own_after_the_people() {
        let people = Scenario {
            visitors: 500,
            mix: Mix::default(),
            ..Scenario::default()
        };
        let with_bots = Scenario {
            mix: Mix {
                bots: Bots {
                    skipping: 30,
                    paying: 20,
                },
                ..people.mix
            },
            ..people
        };
        let (p, b) = (Population::draw(&people), Population::draw(&with_bots));
        assert_eq!(b.people.len(), p.people.len() + 50);
        assert_eq!(b.devices.len(), p.devices.len() + 50);
        assert_eq!(b.addresses, p.addresses + 50);
        // The people are the same people, on the same addresses.
        assert!(
            p.people
                .iter()
                .zip(&b.people)
                .all(|(x, y)| x.arrival == y.arrival)
        );
        assert!(
            p.devices
                .iter()
                .zip(&b.devices)
                .all(|(x, y)| x.address == y.address)
        );
        let bots = &b.devices[p.devices.len()..];
        let kind = |d: &Device| b.people[d.person as usize].kind;
        assert_eq!(
            bots.iter()
                .filter(|d| kind(d) == Kind::Bot(Bot::Skipping))
                .count(),
            30
        );
        assert_eq!(
            bots.iter()
                .filter(|d| kind(d) == Kind::Bot(Bot::Paying))
                .count(),
            20
        );
        assert!(bots.iter().all(|d| d.address >= p.addresses && d.tabs == 1));
        assert!(bots.iter().all(|d| d.arrival < 3000));
    }
}
