//! The event loop: every device's every request goes through the room's own
//! `decide`, at a virtual clock; its refresh comes from the room's own
//! `refresh_after` and the estimate it shows from the room's own `estimate`.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use waiting_room::ceiling::ExactCounts;
use waiting_room::config::Settings;
use waiting_room::decision::{self, CookieAction, Decision, Session, Transition, Verdict};
use waiting_room::outlook;
use waiting_room::refresh::RefreshMode;

use crate::attacker::Jar;
use crate::closed_loop::ClosedLoop;
use crate::population::{Kind, Population, address_text};
use crate::progress::Progress;
use crate::record::Record;
use crate::scenario::Scenario;

/// Unix time of the run's second 0 (a whole minute, so slots line up with minutes).
pub const START: u64 = 1_700_000_040;
/// The signing key the room runs with.
const KID: &str = "key1";
const SECRET: &str = "simulated-signing-key-0123456789abcdef";

/// The room, as the edge holds it for one request: settings and keys.
pub struct Room {
    /// The settings every request reads.
    pub settings: Settings,
    keys: HashMap<String, String>,
    /// The POP's counts of new sessions, for `pop_new_sessions_per_minute`.
    pop: RefCell<ExactCounts>,
}

impl Room {
    /// The room of `scenario`, refreshing in `mode`.
    pub fn new(scenario: &Scenario, mode: RefreshMode) -> Room {
        Room {
            settings: scenario.room.settings(mode),
            keys: HashMap::from([(KID.to_string(), SECRET.to_string())]),
            pop: RefCell::default(),
        }
    }

    /// One decision, by the room's own code.
    pub fn decide(&self, now: u64, uid: &str, cookie: Option<&str>) -> Verdict {
        let verdict = {
            let pop = self.pop.borrow();
            let counts = &*pop as &dyn waiting_room::ceiling::PopCounts;
            decision::decide_in_pop(
                now,
                0,
                uid,
                cookie,
                &self.settings,
                &self.keys,
                Some(counts),
            )
        };
        if let Some(key) = &verdict.pop_count {
            self.pop.borrow_mut().count(now, key.clone());
        }
        verdict
    }
}

/// One device's cookie jar and progress.
#[derive(Debug, Default)]
struct DeviceState {
    cookie: Option<String>,
    /// Expiry of the wait token in the jar (0 when none).
    wait_exp: u64,
    admitted: bool,
    session_left: u32,
}

/// Runs `scenario` in `mode` over `population` and records what happened.
pub fn run(
    scenario: &Scenario,
    population: &Population,
    mode: RefreshMode,
    progress: &mut Progress,
) -> Record {
    let uids: Vec<String> = (0..population.addresses).map(address_text).collect();
    let mut sim = Simulation {
        scenario,
        population,
        room: Room::new(scenario, mode),
        uids: &uids,
        devices: population
            .devices
            .iter()
            .map(|_| DeviceState::default())
            .collect(),
        jars: HashMap::new(),
        record: Record::new(scenario, population),
        closed_loop: scenario.control.map(|spec| {
            ClosedLoop::new(spec, &scenario.room)
                .expect("the controller's options are checked with the scenario")
        }),
        next_second: 0,
    };
    let mut queue: BinaryHeap<Reverse<(u64, u32)>> = population
        .devices
        .iter()
        .enumerate()
        .map(|(index, device)| Reverse((device.arrival, index as u32)))
        .collect();
    let started = Instant::now();
    while let Some(Reverse((t, device))) = queue.pop() {
        if t >= scenario.duration {
            break;
        }
        sim.advance_to(t);
        if let Some(next) = sim.visit(device, t) {
            queue.push(Reverse((next, device)));
        }
        progress.tick(t, scenario.duration, sim.record.decisions);
    }
    sim.advance_to(scenario.duration.saturating_sub(1));
    sim.record.control = sim.closed_loop.take().map(ClosedLoop::finish);
    sim.record.wall_seconds = started.elapsed().as_secs_f64();
    sim.record
}

/// When `device` would have been admitted had it been its person's only device
/// (seconds from the start; `None`: not by `end`), in `room` at its static
/// percentage: the very requests the run made for it until another of its
/// person's devices got in, continued alone.
pub fn alone(room: &Room, population: &Population, device: usize, end: u64) -> Option<u64> {
    let seen = population.devices.get(device)?;
    let uid = address_text(seen.address);
    let mut cookie: Option<String> = None;
    let mut t = seen.arrival;
    while t < end {
        let now = START + t;
        let verdict = room.decide(now, &uid, cookie.as_deref());
        match &verdict.cookie {
            CookieAction::Keep => {}
            CookieAction::Set(value) => cookie = Some(value.clone()),
            CookieAction::Delete => cookie = None,
        }
        match verdict.decision {
            Decision::Allow => return Some(t),
            Decision::Anon | Decision::Wait | Decision::ReWait => {
                let exp = verdict.wait_exp?;
                t += outlook(now, exp, verdict.arr, &uid, &room.settings).refresh_after;
            }
            Decision::Deny => return None,
        }
    }
    None
}

/// A 64-bit key of an address's text, for counting tokens per address.
pub fn address_key(uid: &str) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    uid.hash(&mut hasher);
    hasher.finish()
}

struct Simulation<'a> {
    scenario: &'a Scenario,
    population: &'a Population,
    room: Room,
    uids: &'a [String],
    devices: Vec<DeviceState>,
    jars: HashMap<u32, Jar>,
    record: Record,
    /// The controller, when the scenario runs one.
    closed_loop: Option<ClosedLoop>,
    /// The first second not yet begun.
    next_second: u64,
}

impl Simulation<'_> {
    /// Begins every second up to `t`: the controller's inbox, ticks and writes,
    /// and the percentage in effect.
    fn advance_to(&mut self, t: u64) {
        while self.next_second <= t {
            let second = self.next_second;
            if let Some(closed_loop) = &mut self.closed_loop {
                closed_loop.second(second, &mut self.room.settings);
            }
            let p = self.room.settings.percentage_at(START + second);
            self.record.percentage_at(second, p);
            self.next_second += 1;
        }
    }

    /// One request from `device` at second `t`; when it comes back, if it does.
    fn visit(&mut self, device: u32, t: u64) -> Option<u64> {
        let index = device as usize;
        let seen = self.population.devices[index];
        let person = seen.person as usize;
        let kind = self.population.people[person].kind;
        if !self.devices[index].admitted && self.record.is_admitted(person) {
            return None; // the person got in on another device and closed this one
        }
        if !self.devices[index].admitted && self.population.people[person].gave_up_by(t) {
            return None; // the person gave up waiting
        }
        let now = START + t;
        let uids = self.uids;
        let uid = uids[seen.address as usize].as_str();
        let presented = self.devices[index].cookie.clone();
        let presented_exp = self.devices[index].wait_exp;
        let verdict = self.timed_decide(now, uid, presented.as_deref());
        // The device's other tabs send the same request with the same cookie.
        for _ in 1..seen.tabs {
            if self.timed_decide(now, uid, presented.as_deref()).decision == Decision::Allow {
                self.record.origin_request(t);
            }
        }
        let won = verdict.transition == Some(Transition::LotteryWon);
        if kind != Kind::Attacker
            && matches!(
                verdict.transition,
                Some(Transition::LotteryWon | Transition::LotteryLost)
            )
        {
            let p = self.room.settings.percentage_at(now).fraction();
            self.record.draw(seen.address, presented_exp, now, won, p);
        }
        self.apply_cookie(index, &verdict);

        match verdict.decision {
            Decision::Allow => {
                self.record.origin_request(t);
                if !self.devices[index].admitted {
                    self.devices[index].admitted = true;
                    self.devices[index].session_left = self.scenario.session.requests;
                    self.record.admit(person, t);
                    if kind == Kind::Attacker && won {
                        self.jars.entry(device).or_default().winner = presented;
                    }
                }
                if kind == Kind::Attacker {
                    self.replay_winner(device, uid, now, t);
                }
                let state = &mut self.devices[index];
                if state.session_left == 0 {
                    self.record.session_end(t);
                    return None;
                }
                state.session_left -= 1;
                Some(t + self.scenario.session.interval)
            }
            Decision::Anon | Decision::Wait | Decision::ReWait => {
                let exp = verdict.wait_exp?;
                let outlook = outlook(now, exp, verdict.arr, uid, &self.room.settings);
                self.record.first_page(person, t, outlook.estimate);
                if kind == Kind::Attacker && verdict.transition == Some(Transition::LotteryLost) {
                    self.reroll(device, uid, now, presented);
                }
                Some(t + seen.habit.next_after(outlook.refresh_after))
            }
            Decision::Deny => None,
        }
    }

    fn timed_decide(&mut self, now: u64, uid: &str, cookie: Option<&str>) -> Verdict {
        let started = Instant::now();
        let verdict = self.room.decide(now, uid, cookie);
        self.record.decide_nanos += started.elapsed().as_nanos();
        self.record.decisions += 1;
        if verdict.session == Some(Session::New)
            && let Some(exp) = verdict.exp
        {
            self.record
                .allow_token(address_key(uid), exp, now.saturating_sub(START));
        }
        if let Some(closed_loop) = &mut self.closed_loop {
            closed_loop.logged(now, uid, &verdict, &self.room.settings);
        }
        verdict
    }

    fn apply_cookie(&mut self, index: usize, verdict: &Verdict) {
        let state = &mut self.devices[index];
        match &verdict.cookie {
            CookieAction::Keep => {}
            CookieAction::Set(value) => {
                state.cookie = Some(value.clone());
                state.wait_exp = match verdict.decision {
                    Decision::Anon | Decision::ReWait => verdict.wait_exp.unwrap_or(0),
                    _ => 0,
                };
            }
            CookieAction::Delete => {
                state.cookie = None;
                state.wait_exp = 0;
            }
        }
    }

    /// An attacker that just lost presents every losing token it kept, and lends
    /// the one it just lost to an accomplice elsewhere.
    fn reroll(&mut self, device: u32, uid: &str, now: u64, lost: Option<String>) {
        let Some(lost) = lost else { return };
        let mut jar = self.jars.remove(&device).unwrap_or_default();
        jar.keep(lost.clone());
        for old in jar.losers() {
            let verdict = self.timed_decide(now, uid, Some(old));
            self.record
                .attack
                .reroll(verdict.decision == Decision::Allow);
        }
        let verdict = self.timed_decide(now, Jar::ACCOMPLICE, Some(&lost));
        self.record
            .attack
            .cross_address(verdict.decision == Decision::Allow);
        self.jars.insert(device, jar);
    }

    /// An admitted attacker presents its winning wait token again, from its own
    /// address and from an accomplice's.
    fn replay_winner(&mut self, device: u32, uid: &str, now: u64, t: u64) {
        let Some(winner) = self.jars.get(&device).and_then(|jar| jar.winner.clone()) else {
            return;
        };
        let verdict = self.timed_decide(now, uid, Some(&winner));
        let admitted = verdict.decision == Decision::Allow;
        self.record.attack.replay(admitted);
        if admitted {
            self.record.replay_admission(t);
        }
        let verdict = self.timed_decide(now, Jar::ACCOMPLICE, Some(&winner));
        self.record
            .attack
            .cross_address(verdict.decision == Decision::Allow);
    }
}
