//! One request's view of the stores: the settings of the room it is in, and what
//! placing it there found (the room, its event, the service's room cookies, a
//! refusal, the keys that fell back or could not be read). The edge builds it
//! ([`RequestContext::for_request`]); the decision and the log read it.

use crate::settings::config::{Settings, holds_when_unreadable};
use crate::settings::room::{Room, RoomName};

/// The stored settings of a request's room, and the request's own findings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestContext {
    /// The settings of the room the request is in (outside every room: the bypass
    /// keys, every other key at its default).
    pub settings: Settings,
    /// The room.
    pub room: Room,
    /// The event in its pre-queue or running (`event=` in the log).
    pub event: Option<String>,
    /// The event whose ended page shows.
    pub event_ended: Option<String>,
    /// The service's named rooms (none without `rooms`): the origin never sees
    /// their cookies.
    pub named_rooms: Vec<RoomName>,
    /// Why the room refuses the request, if it does.
    pub refusal: Option<Refusal>,
    /// Keys whose stored value was present but unusable, so a default was used.
    pub fallbacks: Vec<&'static str>,
    /// Whether the store is in the earlier layout (settings as keys of their own, no
    /// `settings`): the room holds its old protected paths, and every line says
    /// `ALERT=old-layout` ([`crate::settings::layout::Members::OldLayout`]).
    pub old_layout: bool,
    /// The config-store keys whose lookup failed: each took its unreadable outcome
    /// ([`crate::settings::row::Unreadable`]), and the line says
    /// `ALERT=unreadable:<keys>`.
    pub unreadable: Vec<String>,
}

impl RequestContext {
    /// Whether these settings are all the room's page for `path` shows: a request
    /// in a room read them in full; outside every room (a bypass of the service
    /// room) the page shows the service's, which a full read gives.
    pub fn shows_all_settings(&self, path: &str) -> bool {
        self.room != Room::Service || self.settings.protects(path)
    }

    /// Whether a key the decision rests on could not be read
    /// ([`holds_when_unreadable`]): only a bypass, a pass or a live session goes on.
    pub fn holds(&self) -> bool {
        self.unreadable.iter().any(|key| holds_when_unreadable(key))
    }

    /// The context of settings read in the service room, with their fallbacks.
    pub fn of(read: (Settings, Vec<&'static str>)) -> RequestContext {
        let (settings, fallbacks) = read;
        RequestContext {
            settings,
            fallbacks,
            ..RequestContext::default()
        }
    }
}

impl From<Settings> for RequestContext {
    /// The context of settings with nothing else found (the tools' and the tests').
    fn from(settings: Settings) -> RequestContext {
        RequestContext::of((settings, Vec::new()))
    }
}

/// Why the room refuses a request without deciding on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its path reads into different rooms at different origins
    /// ([`crate::settings::path_readings`]): `400`.
    AmbiguousPath,
    /// A key the decision rests on could not be read, and nothing lets the request
    /// through without it (nor can anything when it is `rooms`: nothing can be
    /// placed), or a login's key could not be read: `503`, the room's "try again" page.
    Unreadable,
    /// The room is for signed-in visitors and the visitor is not: to `sign_in_url`,
    /// else `401`.
    LoginRequired,
    /// The room is for one audience (`who_may_wait`) and the visitor's login is not
    /// of it: `403`.
    NotInAudience,
}

impl Refusal {
    /// The status the room answers with.
    pub fn status(self) -> u16 {
        match self {
            Refusal::AmbiguousPath => 400,
            Refusal::Unreadable => 503,
            Refusal::LoginRequired => 401,
            Refusal::NotInAudience => 403,
        }
    }

    /// The log line's `reason`.
    pub fn word(self) -> &'static str {
        match self {
            Refusal::AmbiguousPath => "ambiguous-path",
            Refusal::Unreadable => "unreadable",
            Refusal::LoginRequired => "login-required",
            Refusal::NotInAudience => "not-in-audience",
        }
    }
}
