//! The people and devices of a scenario, and the addresses they come from.

use crate::bots::{Bot, Bots};
use crate::rng::Rng;
use crate::scenario::{Arrivals, Scenario};

/// What kind of visitor a person is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One device on their own address.
    Single,
    /// Several devices behind their own address.
    MultiDevice,
    /// One device on an address shared with other people.
    Nat,
    /// Several devices, each on an address of its own (Wi-Fi, mobile data,
    /// office): one person the room, by address, takes for several.
    MultiAddress,
    /// One device on their own address, keeping and replaying tokens.
    Attacker,
    /// Not a person: a bot on an address of its own ([`crate::bots`]).
    Bot(Bot),
}

/// One person.
#[derive(Debug, Clone, Copy)]
pub struct Person {
    /// Kind of visitor.
    pub kind: Kind,
    /// Arrival, seconds from the start.
    pub arrival: u64,
    /// Seconds after arrival at which they give up if still waiting (`None`:
    /// they wait as long as it takes).
    pub gives_up_after: Option<u64>,
}

impl Person {
    /// Whether, not yet admitted, they have given up by second `t`.
    pub fn gave_up_by(&self, t: u64) -> bool {
        self.gives_up_after
            .is_some_and(|after| t >= self.arrival.saturating_add(after))
    }
}

/// How a device comes back to the waiting page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Habit {
    /// It follows the page's `Refresh`.
    Refresh,
    /// An app polling every this many seconds, whatever the page says.
    Poll(u64),
    /// Its person reloads early: at half the page's `Refresh`.
    Early,
}

impl Habit {
    /// Seconds until the device asks again, when the page says `refresh_after`.
    pub fn next_after(self, refresh_after: u64) -> u64 {
        match self {
            Habit::Refresh => refresh_after,
            Habit::Poll(every) => every.max(1),
            Habit::Early => (refresh_after / 2).max(1),
        }
    }
}

/// One device (one browser with its own cookie jar).
#[derive(Debug, Clone, Copy)]
pub struct Device {
    /// Index of its person.
    pub person: u32,
    /// Index of its address.
    pub address: u32,
    /// Its first request, seconds from the start.
    pub arrival: u64,
    /// Tabs open on the waiting page, sharing the device's cookie jar: each
    /// follows the page, so each request is sent this many times, with the
    /// same cookie, in the same second.
    pub tabs: u32,
    /// How it comes back while waiting.
    pub habit: Habit,
}

/// Everyone in a scenario.
#[derive(Debug, Clone, Default)]
pub struct Population {
    /// People, by index.
    pub people: Vec<Person>,
    /// Devices, by index.
    pub devices: Vec<Device>,
    /// Number of distinct addresses in use.
    pub addresses: u32,
}

impl Population {
    /// Draws the population of `scenario`.
    pub fn draw(scenario: &Scenario) -> Population {
        let mix = &scenario.mix;
        let mut rng = Rng::new(scenario.seed);
        // Habits come from a stream of their own, so that adding them left
        // who arrives when, on which address, unchanged.
        let mut habits = Rng::new(scenario.seed ^ 0x4ab1_7500_0000_0001);
        let mut population = Population::default();
        let mut nat_address = None;
        let mut nat_filled = 0;
        for index in 0..scenario.visitors {
            let person = index as u32;
            let arrival = scenario.arrivals.draw(&mut rng);
            let roll = rng.unit();
            let kind = if roll < mix.attacker_share {
                Kind::Attacker
            } else if roll < mix.attacker_share + mix.nat_share {
                Kind::Nat
            } else if roll < mix.attacker_share + mix.nat_share + mix.multi_device_share {
                Kind::MultiDevice
            } else if roll
                < mix.attacker_share
                    + mix.nat_share
                    + mix.multi_device_share
                    + mix.multi_address_share
            {
                Kind::MultiAddress
            } else {
                Kind::Single
            };
            let address = match kind {
                Kind::Nat => match nat_address {
                    Some(shared) if nat_filled < mix.nat_size => {
                        nat_filled += 1;
                        shared
                    }
                    _ => {
                        let shared = population.new_address();
                        nat_address = Some(shared);
                        nat_filled = 1;
                        shared
                    }
                },
                _ => population.new_address(),
            };
            let gives_up_after = habits
                .chance(mix.abandon_share)
                .then(|| 1 + habits.below(mix.patience.max(1)));
            population.people.push(Person {
                kind,
                arrival,
                gives_up_after,
            });
            let devices = match kind {
                Kind::MultiDevice => mix.devices.max(1),
                Kind::MultiAddress => mix.addresses_each.max(1),
                _ => 1,
            };
            for device in 0..devices {
                let delay = if device == 0 {
                    0
                } else {
                    rng.below(mix.device_spread + 1)
                };
                let tabs = if habits.chance(mix.tabs_share) {
                    mix.tabs.max(1)
                } else {
                    1
                };
                let roll = habits.unit();
                let habit = if roll < mix.poller_share {
                    let (least, most) = mix.poll_every;
                    Habit::Poll(least + habits.below(most.saturating_sub(least) + 1))
                } else if roll < mix.poller_share + mix.early_share {
                    Habit::Early
                } else {
                    Habit::Refresh
                };
                let address = if kind == Kind::MultiAddress && device > 0 {
                    population.new_address()
                } else {
                    address
                };
                population.devices.push(Device {
                    person,
                    address,
                    arrival: arrival + delay,
                    tabs,
                    habit,
                });
            }
        }
        population.join_bots(&mix.bots, &scenario.arrivals, scenario.seed);
        population
    }

    /// Adds `bots` to the population, after its people, each on a new address
    /// and arriving as `arrivals` says, drawn from a stream of their own (from
    /// `seed`): the people are those of the same scenario without bots.
    pub fn join_bots(&mut self, bots: &Bots, arrivals: &Arrivals, seed: u64) {
        let mut rng = Rng::new(seed ^ 0xb075_0000_0000_0001);
        let kinds = std::iter::repeat_n(Bot::Skipping, bots.skipping as usize)
            .chain(std::iter::repeat_n(Bot::Paying, bots.paying as usize));
        for bot in kinds {
            let arrival = arrivals.draw(&mut rng);
            let person = self.people.len() as u32;
            self.people.push(Person {
                kind: Kind::Bot(bot),
                arrival,
                gives_up_after: None,
            });
            let address = self.new_address();
            self.devices.push(Device {
                person,
                address,
                arrival,
                tabs: 1,
                habit: Habit::Refresh,
            });
        }
    }

    /// A new address, nobody's yet.
    pub(crate) fn new_address(&mut self) -> u32 {
        self.addresses += 1;
        self.addresses - 1
    }
}

/// The text of address `index`: IPv4, from 10.0.0.0 upwards (the `uid` the room sees).
pub fn address_text(index: u32) -> String {
    let [a, b, c, d] = (0x0a00_0000u32.wrapping_add(index)).to_be_bytes();
    format!("{a}.{b}.{c}.{d}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Mix;

    #[test]
    fn addresses_are_distinct_ipv4_texts() {
        assert_eq!(address_text(0), "10.0.0.0");
        assert_eq!(address_text(257), "10.0.1.1");
    }

    #[test]
    fn the_mix_decides_tabs_habits_and_who_gives_up() {
        let scenario = Scenario {
            visitors: 20_000,
            mix: Mix {
                tabs_share: 0.3,
                tabs: 3,
                poller_share: 0.1,
                poll_every: (3, 6),
                early_share: 0.2,
                abandon_share: 0.25,
                patience: 600,
                ..Mix::plain()
            },
            ..Scenario::default()
        };
        let p = Population::draw(&scenario);
        let share = |n: usize| n as f64 / p.devices.len() as f64;
        let tabs = p.devices.iter().filter(|d| d.tabs == 3).count();
        assert!((share(tabs) - 0.3).abs() < 0.02);
        assert!(p.devices.iter().all(|d| d.tabs == 1 || d.tabs == 3));
        let polls: Vec<u64> = p
            .devices
            .iter()
            .filter_map(|d| match d.habit {
                Habit::Poll(every) => Some(every),
                _ => None,
            })
            .collect();
        assert!((share(polls.len()) - 0.1).abs() < 0.02);
        assert!(polls.iter().all(|every| (3..=6).contains(every)));
        let early = p.devices.iter().filter(|d| d.habit == Habit::Early).count();
        assert!((share(early) - 0.2).abs() < 0.02);
        let quitters: Vec<u64> = p.people.iter().filter_map(|x| x.gives_up_after).collect();
        assert!((quitters.len() as f64 / 20_000.0 - 0.25).abs() < 0.02);
        assert!(quitters.iter().all(|after| (1..=600).contains(after)));
        // The habits come from their own stream: who arrives when, and where,
        // is the plain population's.
        let plain = Population::draw(&Scenario {
            mix: Mix::plain(),
            ..scenario
        });
        assert!(
            plain
                .people
                .iter()
                .zip(&p.people)
                .all(|(a, b)| a.arrival == b.arrival)
        );
    }

    #[test]
    fn habits_set_when_a_device_asks_again() {
        assert_eq!(Habit::Refresh.next_after(30), 30);
        assert_eq!(Habit::Poll(4).next_after(30), 4);
        assert_eq!(Habit::Early.next_after(30), 15);
        assert_eq!(Habit::Early.next_after(1), 1);
        let person = Person {
            kind: Kind::Single,
            arrival: 100,
            gives_up_after: Some(50),
        };
        assert!(!person.gave_up_by(149) && person.gave_up_by(150));
    }

    #[test]
    fn the_mix_decides_devices_and_shared_addresses() {
        let scenario = Scenario {
            visitors: 20_000,
            mix: Mix {
                multi_device_share: 0.2,
                devices: 3,
                nat_share: 0.1,
                nat_size: 10,
                ..Mix::default()
            },
            ..Scenario::default()
        };
        let p = Population::draw(&scenario);
        let count = |kind| p.people.iter().filter(|x| x.kind == kind).count() as f64;
        assert!((count(Kind::MultiDevice) / 20_000.0 - 0.2).abs() < 0.02);
        assert!((count(Kind::Nat) / 20_000.0 - 0.1).abs() < 0.02);
        let devices = 20_000.0 + 2.0 * count(Kind::MultiDevice);
        assert_eq!(p.devices.len() as f64, devices);
        // Ten people per shared address: a tenth as many NAT addresses as NAT people, give or take one.
        let nat_addresses = p.addresses as f64 - (20_000.0 - count(Kind::Nat));
        assert!((nat_addresses - count(Kind::Nat) / 10.0).abs() <= 1.0);
        // Devices of one person share its address and arrive within the spread.
        for pair in p.devices.windows(2) {
            if pair[0].person == pair[1].person {
                assert_eq!(pair[0].address, pair[1].address);
                assert!(pair[1].arrival - p.people[pair[0].person as usize].arrival <= 10);
            }
        }
    }

    #[test]
    fn a_person_on_several_addresses_has_a_device_on_each() {
        let scenario = Scenario {
            visitors: 5_000,
            mix: Mix {
                multi_address_share: 0.2,
                addresses_each: 3,
                nat_share: 0.1,
                ..Mix::plain()
            },
            ..Scenario::default()
        };
        let p = Population::draw(&scenario);
        let multi: Vec<usize> = (0..p.people.len())
            .filter(|&i| p.people[i].kind == Kind::MultiAddress)
            .collect();
        assert!((multi.len() as f64 / 5_000.0 - 0.2).abs() < 0.02);
        assert_eq!(p.devices.len(), 5_000 + 2 * multi.len());
        for &i in &multi {
            let devices: Vec<&Device> = p
                .devices
                .iter()
                .filter(|d| d.person as usize == i)
                .collect();
            assert_eq!(devices.len(), 3);
            let addresses: std::collections::HashSet<u32> =
                devices.iter().map(|d| d.address).collect();
            assert_eq!(addresses.len(), 3);
            // Nobody else on them; the devices join within the spread.
            assert!(
                p.devices
                    .iter()
                    .all(|d| d.person as usize == i || !addresses.contains(&d.address))
            );
            assert!(
                devices
                    .iter()
                    .all(|d| d.arrival - p.people[i].arrival <= 10)
            );
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
            ..people.clone()
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
