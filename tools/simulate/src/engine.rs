//! The one event loop, for both queueing methods: every device's every request
//! goes through the room's own `decide`, at a virtual clock kept to the
//! millisecond; its refresh comes from the room's own `refresh_after` and the
//! estimate it shows from the room's own `estimate`. The crowd (people, devices,
//! tabs, apps, reloaders, abandonment, replayers), their cookie jars, the
//! scheduling of requests and the log feed to the controller are here once; what
//! differs by queueing method is a [`Method`]: the room's settings, when each
//! device first asks, the controller's rule in the loop ([`closed_loop`]) and
//! what a person's devices do once the person is in.
//!
//! Two rooms of one service run at once with [`run_rooms`]: each its own crowd,
//! settings and controller, one clock, and one log stream that both controllers
//! read, each counting its own room's lines.
//!
//! [`closed_loop`]: crate::closed_loop

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::time::Instant;

use control::frame::{Frame, Policy};
use control::percentage_rule::PercentagePolicy;
use waiting_room::admission::ceiling::{DocumentedCounts, ExactCounts, PopCounts};
use waiting_room::admission::decision::{
    self, CookieAction, Decision, Session, TollDue, Transition, Verdict,
};
use waiting_room::credentials::keys::RoomKeys;
use waiting_room::outlook;
use waiting_room::settings::config::Settings;
use waiting_room::settings::context::RequestContext;
use waiting_room::settings::refresh_mode::RefreshMode;
use waiting_room::settings::room::RoomName;

use crate::attacker::Jar;
use crate::closed_loop::{self, ClosedLoop, Line};
use crate::identity::Uids;
use crate::origin_model::Origin;
use crate::population::{Kind, Population};
use crate::progress::Progress;
use crate::run_record::RunRecord;
use crate::scenario::{PopCountsModel, START, Scenario};
use crate::toll_payment;

/// The signing key the room runs with.
const KID: &str = "key1";
const SECRET: &str = "simulated-signing-key-0123456789abcdef";

/// The room, as the edge holds it for one request: settings and keys.
pub struct Room {
    /// The settings every request reads, in the room they are of.
    pub context: RequestContext,
    keys: HashMap<String, String>,
    /// The POP's counts of new sessions, for `pop_new_sessions_per_minute`.
    pop: RefCell<Pop>,
}

/// The POP's counts, as the scenario models them.
#[derive(Debug)]
enum Pop {
    Exact(ExactCounts),
    Edge(DocumentedCounts),
}

impl Pop {
    /// The counts `model` describes; the edge's nodes are drawn with a stream of `seed`.
    fn new(model: PopCountsModel, seed: u64) -> Pop {
        match model {
            PopCountsModel::Exact => Pop::Exact(ExactCounts::default()),
            // A stream of its own: the crowd's draws stay what they were.
            PopCountsModel::Edge { nodes } => {
                Pop::Edge(DocumentedCounts::new(nodes, seed ^ 0x706f_705f_6e6f_6465))
            }
        }
    }

    fn counts(&self) -> &dyn PopCounts {
        match self {
            Pop::Exact(counts) => counts,
            Pop::Edge(counts) => counts,
        }
    }

    fn count(&mut self, now: u64, key: String) {
        match self {
            Pop::Exact(counts) => counts.count(now, key),
            Pop::Edge(counts) => counts.count(now, key),
        }
    }
}

impl Room {
    /// The room of `scenario`, refreshing in `mode` (random mode), with the POP's
    /// counts it models.
    pub fn new(scenario: &Scenario, mode: RefreshMode) -> Room {
        Room {
            pop: RefCell::new(Pop::new(scenario.room.pop_counts, scenario.seed)),
            ..Room::with_settings(scenario.room.refreshing(mode))
        }
    }

    /// The room with `settings`, and exact counts.
    pub fn with_settings(settings: Settings) -> Room {
        Room {
            context: settings.into(),
            keys: HashMap::from([(KID.to_string(), SECRET.to_string())]),
            pop: RefCell::new(Pop::Exact(ExactCounts::default())),
        }
    }

    /// One decision at Unix second `now`, by the room's own code, for a request
    /// without a toll cookie.
    pub fn decide(&self, now: u64, uid: &str, cookie: Option<&str>) -> Verdict {
        self.decide_at(now, 0, uid, cookie, None)
    }

    /// One decision at Unix second `now` and `millis` past it (FIFO places are
    /// kept to the millisecond), by the room's own code, with the POP's counts
    /// (they hold lottery wins; FIFO mode reads none) and the request's toll
    /// cookie `toll_nonce` ([`crate::toll_payment`]).
    pub fn decide_at(
        &self,
        now: u64,
        millis: u16,
        uid: &str,
        cookie: Option<&str>,
        toll_nonce: Option<&str>,
    ) -> Verdict {
        let verdict = {
            let pop = self.pop.borrow();
            let counts = pop.counts();
            // A named room signs with its own derived key, as `plan()` has it.
            let keys = RoomKeys::new(&self.keys, self.context.room.name());
            let request = decision::Request {
                now,
                millis,
                uid,
                cookie,
            };
            let context = decision::Context {
                pop: Some(counts),
                toll_nonce,
                ..decision::Context::new(&self.context.settings)
            };
            decision::decide(&request, &context, &keys)
        };
        if let Some(key) = &verdict.pop_count {
            self.pop.borrow_mut().count(now, key.clone());
        }
        verdict
    }
}

/// What a person's devices do once the person is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnceIn {
    /// A device not yet in is closed before its next request; a device in keeps
    /// following the page it is shown (random mode's crowd).
    CloseOthers,
    /// Every device sends its next request, and is closed when that shows a
    /// waiting page (FIFO mode's crowd).
    LeaveAtWaitingPage,
}

/// What the loop runs differently by queueing method.
pub struct Method<P: Policy> {
    /// The room, with the method's settings.
    pub room: Room,
    /// Each device's first request, milliseconds from the start.
    pub first_request: Vec<u64>,
    /// The controller's rule in the loop, when one runs.
    pub closed_loop: Option<ClosedLoop<P>>,
    /// What a person's devices do once the person is in.
    pub once_in: OnceIn,
}

impl Method<PercentagePolicy> {
    /// Random mode (the lottery), refreshing in `mode`: every device first asks
    /// at the whole second it arrives; with a target, the percentage controller
    /// moves `allow_percentage`.
    pub fn random(scenario: &Scenario, population: &Population, mode: RefreshMode) -> Self {
        Method {
            room: Room::new(scenario, mode),
            first_request: population
                .devices
                .iter()
                .map(|d| d.arrival * 1000)
                .collect(),
            closed_loop: scenario.control.map(|spec| {
                let controller = scenario
                    .controller()
                    .expect("a scenario with a closed loop has a controller")
                    .expect("the controller's options are checked with the scenario");
                let origin = scenario.origin.map(|origin| {
                    let bound = spec
                        .origin
                        .map_or(f64::INFINITY, |r| r.healthy.p95_ms as f64);
                    Origin::new(origin, scenario.session_seconds(), bound, scenario.seed)
                });
                ClosedLoop::new(spec, controller).with_origin(origin)
            }),
            once_in: OnceIn::CloseOthers,
        }
    }
}

impl<P: Policy> Method<P> {
    /// The method in the named room `name` of the service: its lines say
    /// `room=NAME`, its tokens are signed with the room's own key, and its
    /// controller counts only its room's lines.
    pub fn in_room(mut self, name: RoomName) -> Self {
        self.closed_loop = self.closed_loop.map(|c| c.in_room(Some(&name)));
        self.room.context.room = waiting_room::settings::room::Room::Named(name);
        self
    }
}

/// One room of a service in [`run_rooms`]: its crowd and its method.
pub struct Lane<'a, P: Policy> {
    /// What the room's crowd does, and how long the room runs.
    pub scenario: &'a Scenario,
    /// The room's crowd.
    pub population: &'a Population,
    /// The room's settings, keys and controller.
    pub method: Method<P>,
}

/// One device's cookie jar and progress.
#[derive(Debug, Default)]
struct DeviceState {
    cookie: Option<String>,
    /// The toll cookie: the nonce its page last paid with.
    toll_cookie: Option<String>,
    /// The toll the last page showed, not paid yet.
    toll_due: Option<TollDue>,
    /// Expiry of the wait token in the jar (0 when none).
    wait_exp: u64,
    admitted: bool,
    session_left: u32,
}

/// Runs `scenario` in random mode, refreshing in `mode`, over `population` and
/// records what happened.
pub fn run(
    scenario: &Scenario,
    population: &Population,
    mode: RefreshMode,
    progress: &mut Progress,
) -> RunRecord {
    let method = Method::random(scenario, population, mode);
    run_method(scenario, population, method, progress).0
}

/// What a room's run came to: what happened, and its controller's rule as it
/// ended, when one ran.
pub type Ran<P> = (RunRecord, Option<Frame<P>>);

/// Runs `scenario` with `method` over `population`: what happened, and the
/// controller's rule as it ended, when one ran.
pub fn run_method<P: Policy>(
    scenario: &Scenario,
    population: &Population,
    method: Method<P>,
    progress: &mut Progress,
) -> Ran<P> {
    let uids = Uids::new(&method.room.context.settings, population, None);
    let logging = method.closed_loop.is_some();
    let mut queue = first_requests(&method, 0);
    let mut sim = Simulation::new(scenario, population, method, &uids, logging);
    let end = scenario.duration.saturating_mul(1000);
    let started = Instant::now();
    while let Some(Reverse((ms, _, device))) = queue.pop() {
        if ms >= end {
            break;
        }
        sim.advance_to(ms / 1000);
        if let Some(next) = sim.visit(device, ms) {
            queue.push(Reverse((next, 0, device)));
        }
        for (now, line) in sim.outbox.drain(..) {
            if let Some(closed_loop) = &mut sim.closed_loop {
                closed_loop.read(now, line);
            }
        }
        progress.tick(ms / 1000, scenario.duration, sim.record.decisions);
    }
    sim.advance_to(scenario.duration.saturating_sub(1));
    sim.finish(started)
}

/// Runs two rooms of one service at once (the service room and a named room,
/// or two named rooms: see [`Method::in_room`]), each with its own crowd,
/// settings and controller (either rule each, a [`Frame`] of its [`Policy`]), on one clock: every request's
/// line goes into the one log stream in the order written, and the stream is
/// fed whole to both controllers, each counting only its own room's lines.
/// Each room runs for its own scenario's duration; the second crowd's
/// addresses and people follow the first's. What happened in each room, and each
/// controller's rule as it ended.
pub fn run_rooms<A: Policy, B: Policy>(
    first: Lane<'_, A>,
    second: Lane<'_, B>,
    progress: &mut Progress,
) -> (Ran<A>, Ran<B>) {
    assert_ne!(
        first.method.room.context.room, second.method.room.context.room,
        "two rooms of one service have two names"
    );
    let first_uids = Uids::new(&first.method.room.context.settings, first.population, None);
    let second_uids = Uids::new(
        &second.method.room.context.settings,
        second.population,
        Some(first.population),
    );
    // A room without a controller still writes its lines: the other reads them.
    let logging = first.method.closed_loop.is_some() || second.method.closed_loop.is_some();
    let mut queue = first_requests(&first.method, 0);
    queue.extend(first_requests(&second.method, 1));
    let mut a = Simulation::new(
        first.scenario,
        first.population,
        first.method,
        &first_uids,
        logging,
    );
    let mut b = Simulation::new(
        second.scenario,
        second.population,
        second.method,
        &second_uids,
        logging,
    );
    let ends = [a.scenario.duration, b.scenario.duration].map(|d| d.saturating_mul(1000));
    let duration = a.scenario.duration.max(b.scenario.duration);
    let started = Instant::now();
    while let Some(Reverse((ms, room, device))) = queue.pop() {
        if ms >= ends[usize::from(room)] {
            continue;
        }
        // Both rooms' seconds begin together: both controllers tick on one clock.
        a.advance_to((ms / 1000).min(a.scenario.duration.saturating_sub(1)));
        b.advance_to((ms / 1000).min(b.scenario.duration.saturating_sub(1)));
        let next = if room == 0 {
            a.visit(device, ms)
        } else {
            b.visit(device, ms)
        };
        if let Some(next) = next {
            queue.push(Reverse((next, room, device)));
        }
        let outbox = if room == 0 {
            std::mem::take(&mut a.outbox)
        } else {
            std::mem::take(&mut b.outbox)
        };
        for (now, line) in outbox {
            if let Some(closed_loop) = &mut a.closed_loop {
                closed_loop.read(now, line.clone());
            }
            if let Some(closed_loop) = &mut b.closed_loop {
                closed_loop.read(now, line);
            }
        }
        let decisions = a.record.decisions + b.record.decisions;
        progress.tick(ms / 1000, duration, decisions);
    }
    a.advance_to(a.scenario.duration.saturating_sub(1));
    b.advance_to(b.scenario.duration.saturating_sub(1));
    (a.finish(started), b.finish(started))
}

/// Each device's first request in `method`, as events of room `room`.
fn first_requests<P: Policy>(method: &Method<P>, room: u8) -> BinaryHeap<Reverse<(u64, u8, u32)>> {
    method
        .first_request
        .iter()
        .enumerate()
        .map(|(index, &ms)| Reverse((ms, room, index as u32)))
        .collect()
}

/// When `device` would have been admitted had it been its person's only device
/// (seconds from the start; `None`: not by `end`), in `room` at its static
/// percentage: the very requests the run made for it until another of its
/// person's devices got in, continued alone (`uids`: the run's).
pub fn alone(
    room: &Room,
    population: &Population,
    uids: &Uids,
    device: usize,
    end: u64,
) -> Option<u64> {
    let seen = population.devices.get(device)?;
    let uid = uids.of(device);
    let mut cookie: Option<String> = None;
    // A person's page pays every toll it is shown before the next request.
    let mut toll_cookie: Option<String> = None;
    let mut t = seen.arrival;
    while t < end {
        let now = START + t;
        let verdict = room.decide_at(now, 0, uid, cookie.as_deref(), toll_cookie.as_deref());
        if let Some(due) = &verdict.toll {
            toll_cookie = Some(toll_payment::solve(due).0.to_string());
        }
        match &verdict.cookie {
            CookieAction::Keep => {}
            CookieAction::Set(value) => cookie = Some(value.clone()),
            CookieAction::Delete => cookie = None,
        }
        match verdict.decision {
            Decision::Allow => return Some(t),
            Decision::Anon | Decision::Wait | Decision::ReWait => {
                let exp = verdict.wait_exp?;
                t += outlook(now, exp, verdict.arr, uid, &room.context.settings).refresh_after;
            }
            Decision::Deny => return None,
        }
    }
    None
}

/// A 64-bit key of a uid's text (an address's, or a person's), for counting
/// tokens per uid.
pub fn address_key(uid: &str) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut hasher = DefaultHasher::new();
    uid.hash(&mut hasher);
    hasher.finish()
}

struct Simulation<'a, P: Policy> {
    scenario: &'a Scenario,
    population: &'a Population,
    room: Room,
    uids: &'a Uids,
    devices: Vec<DeviceState>,
    jars: HashMap<u32, Jar>,
    record: RunRecord,
    /// The controller, when the scenario runs one.
    closed_loop: Option<ClosedLoop<P>>,
    once_in: OnceIn,
    /// The first second not yet begun.
    next_second: u64,
    /// Whether requests write log lines (a controller reads the stream).
    logging: bool,
    /// Lines written since the stream last took them, with their Unix second.
    outbox: Vec<(u64, Line)>,
    /// Nanoseconds spent writing and parsing log lines.
    log_nanos: u128,
}

impl<'a, P: Policy> Simulation<'a, P> {
    fn new(
        scenario: &'a Scenario,
        population: &'a Population,
        method: Method<P>,
        uids: &'a Uids,
        logging: bool,
    ) -> Self {
        Simulation {
            scenario,
            population,
            room: method.room,
            uids,
            devices: population
                .devices
                .iter()
                .map(|_| DeviceState::default())
                .collect(),
            jars: HashMap::new(),
            record: RunRecord::new(scenario, population),
            closed_loop: method.closed_loop,
            once_in: method.once_in,
            next_second: 0,
            logging,
            outbox: Vec::new(),
            log_nanos: 0,
        }
    }

    /// What happened, and the controller's rule as it ended, when one ran.
    fn finish(mut self, started: Instant) -> (RunRecord, Option<Frame<P>>) {
        if let Some(closed_loop) = &mut self.closed_loop {
            closed_loop.add_log_nanos(self.log_nanos);
        }
        let (trace, rule) = self.closed_loop.take().map(ClosedLoop::finish).unzip();
        self.record.control = trace;
        self.record.wall_seconds = started.elapsed().as_secs_f64();
        (self.record, rule)
    }

    /// Begins every second up to `t`: the controller's inbox, ticks and writes,
    /// and the percentage in effect.
    fn advance_to(&mut self, t: u64) {
        while self.next_second <= t {
            let second = self.next_second;
            if let Some(closed_loop) = &mut self.closed_loop {
                closed_loop.second(second, &mut self.room.context.settings);
            }
            let p = self.room.context.settings.percentage_at(START + second);
            self.record.percentage_at(second, p);
            self.next_second += 1;
        }
    }

    /// One request from `device` at millisecond `ms` from the start; when it
    /// comes back, if it does.
    fn visit(&mut self, device: u32, ms: u64) -> Option<u64> {
        let index = device as usize;
        let seen = self.population.devices[index];
        let person = seen.person as usize;
        let kind = self.population.people[person].kind;
        let t = ms / 1000;
        let person_in = self.record.is_admitted(person);
        if !self.devices[index].admitted && person_in && self.once_in == OnceIn::CloseOthers {
            return None; // the person got in on another device and closed this one
        }
        if !person_in && self.population.people[person].gave_up_by(t) {
            self.record.give_up(person);
            return None; // the person gave up waiting
        }
        let now = START + t;
        let uids = self.uids;
        let uid = uids.of(index);
        let presented = self.devices[index].cookie.clone();
        let presented_exp = self.devices[index].wait_exp;
        let toll_cookie = self.pay_toll(index, kind);
        let toll_cookie = toll_cookie.as_deref();
        let verdict = self.timed_decide(ms, uid, presented.as_deref(), toll_cookie);
        if verdict.transition == Some(Transition::TollUnpaid) {
            self.record.toll.held(kind);
        }
        // The device's other tabs send the same request with the same cookie. The
        // room keeps nothing between requests but the POP's counts: while the
        // last verdict counted nothing there, a tab gets that very verdict again.
        if seen.tabs > 1 {
            let mut last = verdict.clone();
            for _ in 1..seen.tabs {
                if last.pop_count.is_some() {
                    last = self.timed_decide(ms, uid, presented.as_deref(), toll_cookie);
                } else {
                    self.answered(ms, uid, &last);
                }
                if last.decision == Decision::Allow {
                    self.record.origin_request(t);
                }
            }
        }
        let won = verdict.transition == Some(Transition::LotteryWon);
        if kind != Kind::Attacker
            && matches!(
                verdict.transition,
                Some(Transition::LotteryWon | Transition::LotteryLost)
            )
        {
            let p = self.room.context.settings.percentage_at(now).fraction();
            self.record
                .draw(address_key(uid), presented_exp, now, won, p);
        }
        self.apply_cookie(index, &verdict);
        if let Some(arr) = verdict.arr {
            self.record.placed(person, arr);
        }

        match verdict.decision {
            Decision::Allow => {
                self.record.origin_request(t);
                if !self.devices[index].admitted {
                    self.devices[index].admitted = true;
                    self.devices[index].session_left = self.scenario.session.requests;
                    if !person_in {
                        self.record.admit(person, ms);
                    }
                    if kind == Kind::Attacker && won {
                        self.jars.entry(device).or_default().winner = presented;
                    }
                }
                if kind == Kind::Attacker {
                    self.replay_winner(device, uid, ms, toll_cookie);
                }
                let state = &mut self.devices[index];
                if state.session_left == 0 {
                    self.record.session_end(t);
                    return None;
                }
                state.session_left -= 1;
                let left = state.session_left;
                Some(ms + self.think_time(device, left))
            }
            Decision::Anon | Decision::Wait | Decision::ReWait => {
                if person_in && self.once_in == OnceIn::LeaveAtWaitingPage {
                    return None;
                }
                let exp = verdict.wait_exp?;
                let outlook = outlook(now, exp, verdict.arr, uid, &self.room.context.settings);
                self.record.first_page(person, t, outlook.estimate);
                if kind == Kind::Attacker && verdict.transition == Some(Transition::LotteryLost) {
                    self.reroll(device, uid, ms, presented, toll_cookie);
                }
                Some(ms + seen.habit.next_after(outlook.refresh_after) * 1000)
            }
            Decision::Deny => None,
        }
    }

    /// Milliseconds until an admitted device's next request (`left`: requests
    /// left after it). The session's interval exactly; with an origin behind the
    /// room, the interval ±50 %, as people read pages for different times: an
    /// origin would otherwise see every session admitted in one second come back
    /// in one second, each interval, for the session's whole length.
    fn think_time(&self, device: u32, left: u32) -> u64 {
        let interval = self.scenario.session.interval * 1000;
        if self.scenario.origin.is_none() {
            return interval;
        }
        let spread =
            address_key(&format!("{}:{device}:{left}", self.scenario.seed)) % (interval + 1);
        interval / 2 + spread
    }

    /// The toll cookie device `index` (a visitor of `kind`) sends: it pays the
    /// toll its last page showed first, if it pays ([`toll_payment::pays`]).
    fn pay_toll(&mut self, index: usize, kind: Kind) -> Option<String> {
        let state = &mut self.devices[index];
        if let Some(due) = state.toll_due.take()
            && toll_payment::pays(kind)
        {
            let (nonce, hashes) = toll_payment::solve(&due);
            self.record.toll.paid(kind, hashes);
            state.toll_cookie = Some(nonce.to_string());
        }
        state.toll_cookie.clone()
    }

    /// One decision at millisecond `ms` from the start, with the toll cookie
    /// `toll_cookie`, timed, counted and logged.
    fn timed_decide(
        &mut self,
        ms: u64,
        uid: &str,
        cookie: Option<&str>,
        toll_cookie: Option<&str>,
    ) -> Verdict {
        let now = START + ms / 1000;
        let started = Instant::now();
        let verdict = self
            .room
            .decide_at(now, (ms % 1000) as u16, uid, cookie, toll_cookie);
        self.record.decide_nanos += started.elapsed().as_nanos();
        self.record.decide_calls += 1;
        self.answered(ms, uid, &verdict);
        verdict
    }

    /// The request from `uid` at millisecond `ms` from the start got `verdict`:
    /// counted, its allow token noted, its line logged.
    fn answered(&mut self, ms: u64, uid: &str, verdict: &Verdict) {
        self.record.decisions += 1;
        if verdict.session == Some(Session::New)
            && let Some(exp) = verdict.exp
        {
            self.record.allow_token(address_key(uid), exp, ms / 1000);
        }
        if self.logging {
            let started = Instant::now();
            let now = START + ms / 1000;
            let line = closed_loop::line(now, uid, verdict, &self.room.context);
            self.outbox.push((now, line));
            self.log_nanos += started.elapsed().as_nanos();
        }
    }

    fn apply_cookie(&mut self, index: usize, verdict: &Verdict) {
        let state = &mut self.devices[index];
        state.toll_due = verdict.toll;
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
    /// the one it just lost to an accomplice elsewhere (with its toll cookie).
    fn reroll(
        &mut self,
        device: u32,
        uid: &str,
        ms: u64,
        lost: Option<String>,
        toll_cookie: Option<&str>,
    ) {
        let Some(lost) = lost else { return };
        let mut jar = self.jars.remove(&device).unwrap_or_default();
        jar.keep(lost.clone());
        for old in jar.losers() {
            let verdict = self.timed_decide(ms, uid, Some(old), toll_cookie);
            self.record
                .attack
                .reroll(verdict.decision == Decision::Allow);
        }
        let verdict = self.timed_decide(ms, Jar::ACCOMPLICE, Some(&lost), toll_cookie);
        self.record
            .attack
            .cross_address(verdict.decision == Decision::Allow);
        self.jars.insert(device, jar);
    }

    /// An admitted attacker presents its winning wait token again, from its own
    /// address and from an accomplice's (with its toll cookie).
    fn replay_winner(&mut self, device: u32, uid: &str, ms: u64, toll_cookie: Option<&str>) {
        let Some(winner) = self.jars.get(&device).and_then(|jar| jar.winner.clone()) else {
            return;
        };
        let verdict = self.timed_decide(ms, uid, Some(&winner), toll_cookie);
        let admitted = verdict.decision == Decision::Allow;
        self.record.attack.replay(admitted);
        if admitted {
            self.record.replay_admission(ms / 1000);
        }
        let verdict = self.timed_decide(ms, Jar::ACCOMPLICE, Some(&winner), toll_cookie);
        self.record
            .attack
            .cross_address(verdict.decision == Decision::Allow);
    }
}
