//! The people and devices of a scenario, and the addresses they come from.

use crate::rng::Rng;
use crate::scenario::Scenario;

/// What kind of visitor a person is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// One device on their own address.
    Single,
    /// Several devices behind their own address.
    MultiDevice,
    /// One device on an address shared with other people.
    Nat,
    /// One device on their own address, keeping and replaying tokens.
    Attacker,
}

/// One person.
#[derive(Debug, Clone, Copy)]
pub struct Person {
    /// Kind of visitor.
    pub kind: Kind,
    /// Arrival, seconds from the start.
    pub arrival: u64,
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
            population.people.push(Person { kind, arrival });
            let devices = if kind == Kind::MultiDevice {
                mix.devices.max(1)
            } else {
                1
            };
            for device in 0..devices {
                let delay = if device == 0 {
                    0
                } else {
                    rng.below(mix.device_spread + 1)
                };
                population.devices.push(Device {
                    person,
                    address,
                    arrival: arrival + delay,
                });
            }
        }
        population
    }

    fn new_address(&mut self) -> u32 {
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
}
