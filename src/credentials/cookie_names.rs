//! The names of a room's cookies, in one place: the waiting-room token's, the
//! signed pass's and the bot toll's. The service room's are the bare names (its
//! token cookie is the VCL's, `waiting_room`); a named room's add `_<name>`
//! (`waiting_room_drops`, `waiting_pass_drops`, `waiting_toll_drops`).
//!
//! Every room cookie is taken out of the `Cookie` header the origin gets
//! ([`crate::credentials::cookie::without_room_cookie`]): the service room's by
//! these names, the named rooms' by [`of_named_rooms`].

use crate::settings::room::{Room, RoomName};

/// The service room's cookie of the waiting-room token (the VCL's).
pub const TOKEN: &str = "waiting_room";
/// The service room's pass cookie, and the query parameter of a pass link.
pub const PASS: &str = "waiting_pass";
/// The service room's toll cookie.
pub const TOLL: &str = "waiting_toll";

/// The name of the waiting-room token's cookie of `room`.
pub fn token(room: &Room) -> String {
    of(TOKEN, room)
}

/// The name of the pass cookie of `room`.
pub fn pass(room: &Room) -> String {
    of(PASS, room)
}

/// The name of the toll cookie of `room`.
pub fn toll(room: &Room) -> String {
    of(TOLL, room)
}

/// The cookie names of the named rooms: their own, their pass and toll cookies.
pub fn of_named_rooms(names: &[RoomName]) -> Vec<String> {
    names
        .iter()
        .flat_map(|name| {
            let room = Room::Named(name.clone());
            [token(&room), pass(&room), toll(&room)]
        })
        .collect()
}

/// `base` for the service room, `base_<name>` for a named room.
fn of(base: &str, room: &Room) -> String {
    match room.name() {
        None => base.to_string(),
        Some(name) => format!("{base}_{name}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::room::RoomName;

    #[test]
    fn each_room_has_its_token_pass_and_toll_cookies() {
        assert_eq!(token(&Room::Service), "waiting_room");
        assert_eq!(pass(&Room::Service), "waiting_pass");
        assert_eq!(toll(&Room::Service), "waiting_toll");
        let drops = Room::Named(RoomName::new("drops").unwrap());
        assert_eq!(token(&drops), "waiting_room_drops");
        assert_eq!(pass(&drops), "waiting_pass_drops");
        assert_eq!(toll(&drops), "waiting_toll_drops");
    }
}
