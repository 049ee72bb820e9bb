//! Who the room takes each device for, as the room's `identity` setting says:
//! its address (`address`, the default), or with `login` the person whose login
//! it presents. Every person of a simulation presents one (a bot too: an account
//! of its own); it is not verified here, but taken as the edge takes a verified
//! one: the room's own [`person_uid`] of the person under `login_hash_key`, of
//! `login_issuer`, and of the device's address when `login_binds_address` is set.
//! A service that sets no hash key or issuer gets the simulator's own.

use waiting_room::credentials::login::person_uid;
use waiting_room::settings::config::Settings;
use waiting_room::settings::identity::{HashKey, Identity};

use crate::population::{Population, address_text};

/// The hash key of a simulated service whose `login_hash_key` is not set.
pub const HASH_KEY: HashKey = HashKey([0x5a; 32]);

/// The issuer of a simulated service whose `login_issuer` is not set.
pub const ISSUER: &str = "https://id.example.com/";

/// The uid of each device of a crowd, as the room sees it.
#[derive(Debug, Clone)]
pub struct Uids {
    /// The distinct uids.
    texts: Vec<String>,
    /// Each device's index into `texts`.
    of_device: Vec<u32>,
}

impl Uids {
    /// The uids of `population`'s devices in a room with `settings`; its
    /// addresses and people come after those of `before`, the crowd of another
    /// room of the service run at once, when there is one.
    pub fn new(settings: &Settings, population: &Population, before: Option<&Population>) -> Uids {
        let first_address = before.map_or(0, |p| p.addresses);
        let first_person = before.map_or(0, |p| p.people.len());
        let address = |index: u32| address_text(first_address + index);
        if settings.identity == Identity::Address {
            return Uids {
                texts: (0..population.addresses).map(address).collect(),
                of_device: population.devices.iter().map(|d| d.address).collect(),
            };
        }
        let key = settings.login_hash_key.as_ref().unwrap_or(&HASH_KEY);
        let issuer = settings.login_issuer.as_deref().unwrap_or(ISSUER);
        let person = |index: u32, at: Option<&str>| {
            let sub = format!("person-{}", first_person + index as usize);
            person_uid(key, issuer, &sub, at)
        };
        if settings.login_binds_address {
            // A person's place on each of their addresses: a uid per device.
            return Uids {
                texts: population
                    .devices
                    .iter()
                    .map(|d| person(d.person, Some(&address(d.address))))
                    .collect(),
                of_device: (0..population.devices.len() as u32).collect(),
            };
        }
        Uids {
            texts: (0..population.people.len() as u32)
                .map(|p| person(p, None))
                .collect(),
            of_device: population.devices.iter().map(|d| d.person).collect(),
        }
    }

    /// The uid of device `device`.
    pub fn of(&self, device: usize) -> &str {
        &self.texts[self.of_device[device] as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Mix, Room, Scenario};
    use std::collections::HashSet;
    use waiting_room::settings::config::{IDENTITY, LOGIN_BINDS_ADDRESS};

    fn crowd() -> Scenario {
        Scenario {
            visitors: 400,
            mix: Mix {
                nat_share: 0.3,
                nat_size: 20,
                multi_address_share: 0.3,
                ..Mix::plain()
            },
            ..Scenario::default()
        }
    }

    /// The distinct uids of each person's devices, and of everyone.
    fn uids_of(room: Room) -> (Vec<HashSet<String>>, HashSet<String>) {
        let population = Population::draw(&crowd());
        let uids = Uids::new(room.settings(), &population, None);
        let mut each = vec![HashSet::new(); population.people.len()];
        for (i, d) in population.devices.iter().enumerate() {
            each[d.person as usize].insert(uids.of(i).to_string());
        }
        let all = each.iter().flatten().cloned().collect();
        (each, all)
    }

    #[test]
    fn by_address_a_device_is_its_address() {
        let population = Population::draw(&crowd());
        let uids = Uids::new(Room::default().settings(), &population, None);
        for (i, d) in population.devices.iter().enumerate() {
            assert_eq!(uids.of(i), address_text(d.address));
        }
        let (each, all) = uids_of(Room::default());
        assert!(each.iter().any(|u| u.len() == 3));
        assert_eq!(all.len() as u32, population.addresses);
    }

    #[test]
    fn by_login_a_device_is_its_person_on_any_address() {
        let (each, all) = uids_of(Room::default().with(IDENTITY, "login"));
        assert!(each.iter().all(|u| u.len() == 1));
        assert_eq!(all.len(), each.len());
        // The room's own hash of the person, under the simulator's key.
        let first = each[0].iter().next().unwrap();
        assert_eq!(*first, person_uid(&HASH_KEY, ISSUER, "person-0", None));
        // Bound to the address: a uid per person and address.
        let room = Room::default()
            .with(IDENTITY, "login")
            .with(LOGIN_BINDS_ADDRESS, true);
        let (bound, _) = uids_of(room);
        assert!(bound.iter().any(|u| u.len() == 3));
        assert!(bound.iter().all(|u| u.is_disjoint(&each[0])));
    }

    #[test]
    fn a_second_crowd_is_other_people_on_other_addresses() {
        let population = Population::draw(&crowd());
        for room in [Room::default(), Room::default().with(IDENTITY, "login")] {
            let first = Uids::new(room.settings(), &population, None);
            let second = Uids::new(room.settings(), &population, Some(&population));
            let a: HashSet<&str> = (0..population.devices.len()).map(|i| first.of(i)).collect();
            assert!((0..population.devices.len()).all(|i| !a.contains(second.of(i))));
        }
    }
}
