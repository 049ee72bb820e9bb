//! The FIFO rule, for a room with `queueing_method = fifo`: it holds each
//! waiting device's place (`arr`) until its hold ends or it is admitted, the
//! share of passed places that show up, and the cutoff written and in effect; it
//! reads the room's log records (places, admissions, the `cutoff=` in effect);
//! each tick it writes the `fifo_cutoff` that passes as many places as bring
//! the target's new sessions for the tick, and `fifo_rate`, the cutoff's speed.
//! The derivation, the words and what was tried:
//! `docs/research/controller-rules.md`, the FIFO rule.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;

use super::frame::{Frame, Policy};
use super::schedule::Timing;
use super::tokens::Tokens;
use crate::options::{
    BadOptions, DEFAULT_EXPECTED_PROPAGATION, DEFAULT_LOG_SILENCE, HEARTBEAT_KEY, WINDOW,
};
use crate::record::Record;
use crate::snapshot::FifoStatus;
use crate::store_write::StoreWrite;
use waiting_room::admission::decision::{Decision, Session, Transition};
use waiting_room::settings::config::{FifoRate, Heartbeat, QueueingMethod, Settings};
use waiting_room::settings::percentage::Percentage;

/// Config-store key the rule writes the cutoff to.
pub const CUTOFF_KEY: &str = waiting_room::settings::config::FIFO_CUTOFF;
/// Config-store key the rule writes the cutoff's speed to.
pub const RATE_KEY: &str = waiting_room::settings::config::FIFO_RATE;
/// Lowest show-up share assumed: at most ten places are passed per admission wanted.
pub const MIN_SHOW_UP: f64 = 0.1;
/// Seconds of clock `fifo_rate` is measured over.
pub const RATE_WINDOW: u64 = 60;
/// Seconds of log time the show-up share is measured over.
pub const SHOW_UP_WINDOW: u64 = 600;
/// Shows assumed before any is seen (the share starts at 1 and moves as outcomes come).
const SHOW_UP_PRIOR: f64 = 5.0;

/// What the operator asks of the FIFO rule.
#[derive(Debug, Clone, PartialEq)]
pub struct FifoOptions {
    /// New sessions a minute to hold.
    pub target_per_minute: f64,
    /// At most this many live sessions (addresses with a live allow token).
    pub max_active: Option<u64>,
    /// Seconds between two ticks (one write at most each).
    pub tick: u64,
    /// Seconds after which the heartbeat is written even if nothing changed.
    pub heartbeat_every: u64,
    /// The room's `wait_period_duration`, seconds.
    pub wait_period: u64,
    /// The room's `fifo_hold`, seconds.
    pub fifo_hold: u64,
    /// Most places (and most live sessions) tracked.
    pub capacity: usize,
    /// Seconds without a single log record after which nothing is written,
    /// heartbeat included (see [`crate::options::Options::log_silence`]). `None`: never.
    pub log_silence: Option<u64>,
    /// Seconds from a write to the edge using it, taken until measured. `None`: none.
    pub expected_propagation: Option<u64>,
}

impl Default for FifoOptions {
    fn default() -> FifoOptions {
        FifoOptions {
            target_per_minute: 60.0,
            max_active: None,
            tick: 10,
            heartbeat_every: 30,
            wait_period: waiting_room::settings::config::Settings::default().wait_period_duration,
            fifo_hold: waiting_room::settings::config::Settings::default().fifo_hold,
            capacity: 10_000_000,
            log_silence: Some(DEFAULT_LOG_SILENCE),
            expected_propagation: Some(DEFAULT_EXPECTED_PROPAGATION),
        }
    }
}

impl FifoOptions {
    /// Checks the options make sense together.
    pub fn check(&self) -> Result<(), BadOptions> {
        let bad = |why: &str| Err(BadOptions(why.to_string()));
        if !(self.target_per_minute.is_finite() && self.target_per_minute > 0.0) {
            return bad("the target must be a positive number of new sessions a minute");
        }
        if self.tick == 0 || self.heartbeat_every == 0 {
            return bad("the tick and the heartbeat interval must be at least 1 s");
        }
        if self.log_silence == Some(0) {
            return bad("the log silence must be at least 1 s");
        }
        if !(1..=waiting_room::settings::config::MAX_DURATION).contains(&self.wait_period) {
            return bad("the wait period must be 1 s to a year");
        }
        if !(1..=waiting_room::settings::config::MAX_DURATION).contains(&self.fifo_hold) {
            return bad("the FIFO hold must be 1 s to a year");
        }
        Ok(())
    }

    /// How often a waiting visitor's page comes back: `min(d, fifo_hold / 3)`.
    pub fn poll_period(&self) -> u64 {
        waiting_room::admission::refresh::fifo_period(self.wait_period, self.fifo_hold)
    }

    /// Seconds without a line after which a place's holder counts as gone
    /// (stale): one and a half polling periods, and two seconds of slack.
    pub fn stale_after(&self) -> u64 {
        self.poll_period() + self.poll_period() / 2 + 2
    }

    /// Seconds after the cutoff in effect passes a place by which its holder,
    /// if still there, has been admitted: a polling period and a tick.
    fn show_up_deadline(&self) -> u64 {
        self.poll_period() + self.tick + 1
    }

    fn timing(&self) -> Timing {
        Timing {
            tick: self.tick,
            heartbeat_every: self.heartbeat_every,
            log_silence: self.log_silence,
            expected_propagation: self.expected_propagation,
        }
    }
}

/// One write to the config store: the heartbeat, and the cutoff and its speed
/// when they changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CutoffWrite {
    /// The new `fifo_cutoff` (Unix ms), when it changed.
    pub fifo_cutoff: Option<u64>,
    /// The new `fifo_rate`, when it changed.
    pub fifo_rate: Option<FifoRate>,
    /// `controller_heartbeat`: Unix seconds of this write.
    pub heartbeat: u64,
}

impl StoreWrite for CutoffWrite {
    fn items(&self) -> Vec<(&'static str, String)> {
        let mut items = Vec::with_capacity(3);
        if let Some(cutoff) = self.fifo_cutoff {
            items.push((CUTOFF_KEY, cutoff.to_string()));
        }
        if let Some(rate) = self.fifo_rate {
            items.push((RATE_KEY, rate.to_string()));
        }
        items.push((HEARTBEAT_KEY, self.heartbeat.to_string()));
        items
    }

    fn heartbeat(&self) -> u64 {
        self.heartbeat
    }

    fn moved(&self) -> Option<u64> {
        self.fifo_cutoff
    }

    fn land(&self, settings: &mut Settings) {
        if let Some(cutoff) = self.fifo_cutoff {
            settings.fifo_cutoff = Some(cutoff);
        }
        if let Some(rate) = self.fifo_rate {
            settings.fifo_rate = Some(rate);
        }
        settings.controller_heartbeat = Heartbeat::At(self.heartbeat);
    }
}

/// A held place (one device's: its `arr` is the key), as its newest line shows it.
#[derive(Debug, Clone, Copy)]
struct Place {
    exp: u64,
    /// Log time of the line it was last updated from.
    seen: u64,
    /// The cutoff in effect has passed it (its holder is watched for), and
    /// whether its holder had stopped polling then.
    passed: Option<Kind>,
    /// When someone behind its address was let in, if after its last line
    /// (its device has not been back since).
    session_began: Option<u64>,
}

/// Whether a place's holder is still polling, as its last line tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Seen within the last [`FifoOptions::stale_after`] seconds of log.
    Live = 0,
    /// Not seen since: probably gone, perhaps only late.
    Stale = 1,
}

/// The FIFO rule: the frame, deciding `fifo_cutoff` and `fifo_rate`.
pub type FifoController = Frame<FifoPolicy>;

/// What the FIFO rule keeps of its own (the frame keeps the rest).
#[derive(Debug, Clone, Default)]
pub struct FifoPolicy {
    /// The places held, by address and `arr`.
    places: HashMap<Arc<str>, BTreeMap<u64, Place>>,
    /// The places by `arr` (the line: one entry a place).
    line: BTreeSet<(u64, Arc<str>)>,
    /// The places by the end of their hold.
    ends: BTreeSet<(u64, Arc<str>, u64)>,
    /// Places passed by the cutoff in effect: when their holder is due by.
    due: VecDeque<(u64, Arc<str>, u64)>,
    /// Places not tracked for want of capacity.
    overflow: u64,
    /// The empty uid (the least key of a given `arr`).
    empty: Arc<str>,
    /// The highest cutoff the lines showed in effect.
    effective: Option<u64>,
    /// The highest cutoff in effect each second, as the lines show it.
    cutoffs: BTreeMap<u64, u64>,
    written_rate: Option<FifoRate>,
    wanted_rate: Option<FifoRate>,
    /// Places of allowance carried over (a fraction, or the overshoot of ties).
    carry: f64,
    /// The carry the last decision leaves, taken when its write is confirmed.
    planned_carry: Option<f64>,
    /// The cutoffs decided, by clock time (for the rate).
    history: VecDeque<(u64, u64)>,
    /// Shows and no-shows of passed places, live and stale, by the second
    /// they were settled: `[kind][0]` shows, `[kind][1]` no-shows.
    outcomes: BTreeMap<u64, [[u64; 2]; 2]>,
    /// Decided lines that were not written in FIFO mode (no `cutoff=`).
    not_fifo_lines: u64,
}

impl Policy for FifoPolicy {
    type Options = FifoOptions;
    type Value = u64;
    type Write = CutoffWrite;
    const QUEUEING: QueueingMethod = QueueingMethod::Fifo;

    fn start(options: &FifoOptions) -> Result<(Self, Timing, Tokens), BadOptions> {
        options.check()?;
        let tokens = Tokens::new(options.capacity, 0, 0);
        Ok((FifoPolicy::default(), options.timing(), tokens))
    }

    fn target(options: &mut FifoOptions) -> &mut f64 {
        &mut options.target_per_minute
    }

    /// The places held.
    fn waiting(c: &FifoController) -> (u64, u64) {
        (c.policy.line.len() as u64, c.policy.overflow)
    }

    fn observe(c: &mut FifoController, record: &Record, _: u64) {
        if record.decision.is_some() && !record.fifo {
            c.policy.not_fifo_lines += 1;
        }
        if let Some(cutoff) = record.cutoff {
            c.see_cutoff(record.t, cutoff);
        }
        let uid = record.uid.as_str();
        match record.decision {
            Some(Decision::Anon | Decision::Wait | Decision::ReWait) => {
                match (record.arr, record.exp) {
                    (Some(arr), Some(exp)) => c.hold(uid, arr, exp, record.t),
                    _ => c.leave_address(uid),
                }
            }
            // A live session's request (another device or person behind the
            // address is in) leaves the address's places as they are.
            Some(Decision::Allow) if record.session != Some(Session::New) => {}
            Some(Decision::Allow) => {
                let admitted = record.transition == Some(Transition::CutoffReached);
                c.admit(uid, record.arr, record.t, admitted);
            }
            Some(Decision::Deny) => c.leave_address(uid),
            None => {}
        }
    }

    /// Ends places whose hold ended, and settles passed places whose holder did
    /// not come back in time (no-shows).
    fn close_second(c: &mut FifoController, newest: u64, _: u64) {
        while let Some((exp, _, _)) = c.policy.ends.first()
            && *exp < newest
        {
            let Some((exp, uid, arr)) = c.policy.ends.pop_first() else {
                break;
            };
            if c.place(&uid, arr).is_some_and(|p| p.exp == exp) {
                c.leave(&uid, arr, None);
            }
        }
        while c
            .policy
            .due
            .front()
            .is_some_and(|(deadline, _, _)| *deadline < newest)
        {
            let Some((_, uid, arr)) = c.policy.due.pop_front() else {
                break;
            };
            if let Some(kind) = c.place(&uid, arr).and_then(|p| p.passed) {
                c.leave(&uid, arr, None);
                c.policy.outcomes.entry(newest).or_default()[kind as usize][1] += 1;
            }
        }
        let keep_from = newest.saturating_sub(SHOW_UP_WINDOW);
        c.policy.outcomes = c.policy.outcomes.split_off(&keep_from);
        c.policy.cutoffs = c.policy.cutoffs.split_off(&newest.saturating_sub(WINDOW));
    }

    fn decide(c: &mut FifoController, now: u64) {
        let (cutoff, carry) = c.cutoff(now);
        c.policy.planned_carry = carry;
        if let Some(cutoff) = cutoff {
            c.wanted = Some(cutoff);
            c.policy.wanted_rate = Some(c.speed(now, cutoff));
        }
    }

    /// None when nothing changed and the heartbeat is not yet due.
    fn write(c: &FifoController, now: u64) -> Option<CutoffWrite> {
        let cutoff = c.schedule.changed(c.wanted);
        let rate = c
            .policy
            .wanted_rate
            .filter(|&r| Some(r) != c.policy.written_rate);
        let heartbeat_due = c.schedule.heartbeat_due(now);
        (cutoff.is_some() || rate.is_some() || heartbeat_due).then_some(CutoffWrite {
            fifo_cutoff: cutoff,
            fifo_rate: rate,
            heartbeat: now,
        })
    }

    fn heartbeat_alone(now: u64) -> CutoffWrite {
        CutoffWrite {
            fifo_cutoff: None,
            fifo_rate: None,
            heartbeat: now,
        }
    }

    fn written(c: &mut FifoController, write: &CutoffWrite, now: u64) {
        c.schedule.succeeded(write.fifo_cutoff, now);
        if let Some(rate) = write.fifo_rate {
            c.policy.written_rate = Some(rate);
        }
        if let Some(carry) = c.policy.planned_carry.take() {
            c.policy.carry = carry;
        }
    }

    /// The cutoff does not run on meanwhile: each tick moves from the cutoff
    /// last written.
    fn failed(c: &mut FifoController) {
        c.policy.planned_carry = None;
    }

    /// Only percentages are shown in the [`crate::snapshot::Snapshot`]: none here.
    fn shown(_: u64) -> Option<Percentage> {
        None
    }

    fn describe(c: &FifoController, write: &CutoffWrite) -> String {
        // No series: only the cutoffs and the show-up share are shown.
        let status = c.status(0);
        let cutoff = match write.fifo_cutoff {
            Some(cutoff) => format!("fifo_cutoff={cutoff}"),
            None => format!(
                "fifo_cutoff unchanged ({})",
                status
                    .cutoff
                    .map_or("none".into(), |cutoff| cutoff.to_string())
            ),
        };
        let rate = write
            .fifo_rate
            .map_or(String::new(), |r| format!(" fifo_rate={r}"));
        format!(
            "{cutoff}{rate} (in effect {}, show-up {:.2})",
            status
                .cutoff_in_effect
                .map_or("none".into(), |cutoff| cutoff.to_string()),
            status.show_up
        )
    }

    fn fifo_status(c: &FifoController, seconds: u64) -> Option<FifoStatus> {
        Some(c.status(seconds))
    }
}

impl FifoController {
    /// A line showed `cutoff` in effect at log time `t`: it measures the
    /// propagation delay, and the places it passes are watched for their holders.
    fn see_cutoff(&mut self, t: u64, cutoff: u64) {
        let slot = self.policy.cutoffs.entry(t).or_insert(cutoff);
        *slot = (*slot).max(cutoff);
        // A cutoff in effect shows every write of it or of an earlier one.
        self.schedule
            .measure_propagation(t, |written| written <= cutoff);
        if self.policy.effective.is_some_and(|e| cutoff <= e) {
            return;
        }
        let from = self.policy.effective.map_or(0, |e| e.saturating_add(1));
        self.policy.effective = Some(cutoff);
        let deadline = t.saturating_add(self.options.show_up_deadline());
        let passed: Vec<(u64, Arc<str>)> = self
            .policy
            .line
            .range((from, Arc::clone(&self.policy.empty))..)
            .take_while(|(arr, _)| *arr <= cutoff)
            .cloned()
            .collect();
        let stale_after = self.options.stale_after();
        for (arr, uid) in passed {
            if !self.comes_in(&uid, arr, t, t) {
                continue;
            }
            if let Some(place) = self.place_mut(&uid, arr)
                && place.passed.is_none()
            {
                place.passed = Some(kind(place.seen, t, stale_after));
                self.policy.due.push_back((deadline, uid, arr));
            }
        }
    }

    /// `uid` holds the place `arr` until `exp`, as a line at log time `t` says.
    fn hold(&mut self, uid: &str, arr: u64, exp: u64, t: u64) {
        let deadline = t.saturating_add(self.options.show_up_deadline());
        // Passed by the cutoff in effect, and watched unless someone behind
        // the address is in (this line shows the device back since).
        let watched =
            self.policy.effective.is_some_and(|e| arr <= e) && !self.behind_session(uid, t);
        let key = self
            .policy
            .places
            .get_key_value(uid)
            .map_or_else(|| Arc::from(uid), |(k, _)| Arc::clone(k));
        if let Some(old) = self.place(uid, arr).copied() {
            if t < old.seen {
                return; // an older line than the one the place was taken from
            }
            let exp = exp.max(old.exp);
            let mut passed = old.passed;
            if watched && passed.is_none() {
                passed = Some(Kind::Live);
                self.policy.due.push_back((deadline, Arc::clone(&key), arr));
            }
            if old.exp != exp {
                self.policy.ends.remove(&(old.exp, Arc::clone(&key), arr));
                self.policy.ends.insert((exp, key, arr));
            }
            if let Some(place) = self.place_mut(uid, arr) {
                *place = Place {
                    exp,
                    seen: t,
                    passed,
                    session_began: None,
                };
            }
            return;
        }
        if self.policy.line.len() >= self.options.capacity {
            self.policy.overflow += 1;
            return;
        }
        self.policy.line.insert((arr, Arc::clone(&key)));
        self.policy.ends.insert((exp, Arc::clone(&key), arr));
        if watched {
            self.policy.due.push_back((deadline, Arc::clone(&key), arr));
        }
        self.policy.places.entry(key).or_default().insert(
            arr,
            Place {
                exp,
                seen: t,
                passed: watched.then_some(Kind::Live),
                session_began: None,
            },
        );
    }

    /// `uid`'s place `arr`, if held.
    fn place(&self, uid: &str, arr: u64) -> Option<&Place> {
        self.policy.places.get(uid)?.get(&arr)
    }

    fn place_mut(&mut self, uid: &str, arr: u64) -> Option<&mut Place> {
        self.policy.places.get_mut(uid)?.get_mut(&arr)
    }

    /// `uid` no longer holds the place `arr`; `admitted_at`: it was admitted
    /// by the cutoff at that log time (a show, when its place was watched).
    /// Whether it held it.
    fn leave(&mut self, uid: &str, arr: u64, admitted_at: Option<u64>) -> bool {
        let Some((key, places)) = self.policy.places.get_key_value(uid) else {
            return false;
        };
        let key = Arc::clone(key);
        let Some(place) = places.get(&arr).copied() else {
            return false;
        };
        if let Some(places) = self.policy.places.get_mut(uid) {
            places.remove(&arr);
            if places.is_empty() {
                self.policy.places.remove(uid);
            }
        }
        self.policy.line.remove(&(arr, Arc::clone(&key)));
        self.policy.ends.remove(&(place.exp, key, arr));
        if let Some(t) = admitted_at
            && let Some(kind) = place.passed
        {
            self.policy.outcomes.entry(t).or_default()[kind as usize][0] += 1;
        }
        true
    }

    /// `uid` holds no place (denied, or its lines carry none).
    fn leave_address(&mut self, uid: &str) {
        let arrs: Vec<u64> = self
            .policy
            .places
            .get(uid)
            .map_or_else(Vec::new, |places| places.keys().copied().collect());
        for arr in arrs {
            self.leave(uid, arr, None);
        }
    }

    /// A new session behind `uid` at log time `t`, for the place `arr` (its
    /// earliest when the line carries none), let in by the cutoff or not.
    /// The address's other places are marked: their devices have not been
    /// back since, and each is let in with a session of its own if the
    /// cutoff passes it before it is.
    fn admit(&mut self, uid: &str, arr: Option<u64>, t: u64, by_cutoff: bool) {
        let earliest = || self.policy.places.get(uid)?.keys().next().copied();
        let Some(arr) = arr.or_else(earliest) else {
            return;
        };
        // A repeat of one admission (another tab) finds the place gone.
        if !self.leave(uid, arr, by_cutoff.then_some(t)) {
            return;
        }
        if let Some(places) = self.policy.places.get_mut(uid) {
            for place in places.values_mut() {
                place.session_began = Some(t);
            }
        }
    }

    /// The cutoff from which this tick moves: the higher of the one last written
    /// and the highest the lines show in effect.
    fn base(&self) -> Option<u64> {
        self.schedule.written().max(self.policy.effective)
    }

    /// The share of passed places whose holder came back and was admitted, for
    /// places whose holder was still polling when passed, and for the others.
    pub fn show_up(&self) -> [f64; 2] {
        [Kind::Live, Kind::Stale].map(|kind| {
            let (shows, no_shows) = self.policy.outcomes.values().fold((0, 0), |(s, n), o| {
                (s + o[kind as usize][0], n + o[kind as usize][1])
            });
            let share =
                (shows as f64 + SHOW_UP_PRIOR) / ((shows + no_shows) as f64 + SHOW_UP_PRIOR);
            share.clamp(MIN_SHOW_UP, 1.0)
        })
    }

    /// New sessions (allow tokens, counted per token) per show the rule
    /// expected, over [`SHOW_UP_WINDOW`]: the sessions the log showed, set
    /// against the passed places settled in that time, each weighed at its
    /// kind's show-up share, with a prior of `SHOW_UP_PRIOR` (five) expected shows
    /// that each made one session. Above 1 when several people or devices
    /// behind one address each get an allow token when its place is passed;
    /// below 1 when passed places bring fewer admissions than their shares
    /// say (a stale place is weighed at least [`MIN_SHOW_UP`], and most of a
    /// crowd that gave up brings none). The feedback on what the cutoff
    /// admitted: places are passed at the target's pace of sessions, so a
    /// lasting gap between the sessions and the shows expected is removed
    /// within the window.
    pub fn sessions_per_expected_show(&self, newest: u64) -> f64 {
        // Sessions from when this rule first saw a place it passed settle.
        let Some(&first) = self.policy.outcomes.keys().next() else {
            return 1.0;
        };
        let shares = self.show_up();
        let expected: f64 = self
            .policy
            .outcomes
            .values()
            .flat_map(|o| [Kind::Live, Kind::Stale].map(|k| (o[k as usize], shares[k as usize])))
            .map(|([shows, no_shows], share)| (shows + no_shows) as f64 * share)
            .sum();
        let from = (newest + 1).saturating_sub(SHOW_UP_WINDOW).max(first);
        let sessions = self.intake.series().sum(from, newest + 1, |s| s.admissions);
        ((sessions as f64 + SHOW_UP_PRIOR) / (expected + SHOW_UP_PRIOR)).clamp(0.5, 8.0)
    }

    /// Admissions a place is expected to bring (the show-up share of its kind),
    /// counted `sample` times when it arrived before `start_ms` (see [`Self::coverage`]).
    fn worth(&self, uid: &str, arr: u64, at: &Worth) -> f64 {
        if !self.comes_in(uid, arr, at.lands, at.newest) {
            return 0.0;
        }
        let kind = self
            .place(uid, arr)
            .map_or(Kind::Live, |p| kind(p.seen, at.newest, at.stale_after));
        let sample = if arr < at.start_ms { at.sample } else { 1.0 };
        at.shares[kind as usize] * sample
    }

    /// Whether `uid`'s address holds a live allow token at log time `t`:
    /// someone behind it is in.
    fn behind_session(&self, uid: &str, t: u64) -> bool {
        self.tokens.active.until(uid).is_some_and(|end| end >= t)
    }

    /// Whether the place `arr` of `uid`, passed by a cutoff in effect from
    /// `lands`, is expected to bring its device in (the log reaching
    /// `newest`). A later place of an address is its person's other device
    /// (or another person behind it): once someone behind the address is
    /// in, its device leaves at its next waiting page. So it comes in only
    /// if its first request after that admission comes once the cutoff
    /// passing it is in effect. The admission is the session's start, or,
    /// while the address's earliest place is passed but not yet in, that
    /// place's first request after its own passing lands.
    fn comes_in(&self, uid: &str, arr: u64, lands: u64, newest: u64) -> bool {
        let Some(place) = self.place(uid, arr) else {
            return true;
        };
        let poll = self.options.poll_period();
        let admitted = if self.behind_session(uid, newest) {
            match place.session_began {
                Some(began) => began,
                None => return false, // back since, shown a waiting page
            }
        } else {
            let lead = self
                .policy
                .places
                .get(uid)
                .and_then(|p| p.first_key_value());
            let Some((&lead_arr, lead)) = lead else {
                return true;
            };
            if lead_arr >= arr || self.base().is_none_or(|base| lead_arr > base) {
                return true; // the earliest, or passed together with it
            }
            next_request(lead.seen, poll, self.landing(lead_arr, lands))
        };
        next_request(place.seen, poll, admitted) >= lands
    }

    /// When the cutoff passing `arr` (already written) is in effect: at once
    /// if it is, else the first decision passing it and the propagation
    /// delay; `lands` for one not found.
    fn landing(&self, arr: u64, lands: u64) -> u64 {
        if self.policy.effective.is_some_and(|e| arr <= e) {
            return 0;
        }
        self.policy
            .history
            .iter()
            .find(|(_, cutoff)| arr <= *cutoff)
            .map_or(lands, |(t, _)| {
                t.saturating_add(self.schedule.propagation_delay())
            })
    }

    /// What [`Self::worth`] weighs places with at the newest second of log.
    fn worth_now(&self, newest: u64, now: u64) -> Worth {
        Worth {
            newest,
            lands: now.saturating_add(self.schedule.propagation_delay()),
            stale_after: self.options.stale_after(),
            shares: self.show_up(),
            start_ms: self
                .intake
                .first_record()
                .unwrap_or(newest)
                .saturating_mul(1000),
            sample: 1.0 / self.coverage(newest),
        }
    }

    /// Admissions expected of the places held in `arr` range `from..=to`.
    fn expected(&self, from: u64, to: u64, at: &Worth) -> f64 {
        if from > to {
            return 0.0;
        }
        self.policy
            .line
            .range((from, Arc::clone(&self.policy.empty))..)
            .take_while(|(arr, _)| *arr <= to)
            .map(|(arr, uid)| self.worth(uid, *arr, at))
            .sum()
    }

    /// The share of the crowd that was already waiting when the first record came
    /// that the controller has seen poll since (1 after a whole polling period).
    fn coverage(&self, newest: u64) -> f64 {
        let first = self.intake.first_record().unwrap_or(newest);
        let seen = newest.saturating_sub(first) + 1;
        (seen as f64 / self.options.poll_period() as f64).min(1.0)
    }

    /// Admissions allowed in one tick: the target's, capped under `max_active`
    /// by the free places (less the places passed and expected to show).
    fn allowance(&self, base: Option<u64>, at: &Worth) -> f64 {
        let mut allowed = self.options.target_per_minute * self.options.tick as f64 / 60.0;
        if let Some(max_active) = self.options.max_active {
            let passed = base.map_or(0.0, |b| self.expected(0, b, at));
            let free = max_active as f64 - self.tokens.active.len() as f64 - passed;
            allowed = allowed.min(free.max(0.0));
        }
        allowed
    }

    /// Held places at or before `cutoff`.
    fn places_up_to(&self, cutoff: u64) -> u64 {
        self.policy
            .line
            .range(..(cutoff.saturating_add(1), Arc::clone(&self.policy.empty)))
            .count() as u64
    }

    /// The cutoff this tick wants, and the carry it leaves (`None`: keep the
    /// carry as it is); `None` before any record, or when there is neither a
    /// cutoff nor a place to pass.
    fn cutoff(&self, now: u64) -> (Option<u64>, Option<f64>) {
        let base = self.base();
        let Some(newest) = self.intake.newest() else {
            return (base, None);
        };
        let at = self.worth_now(newest, now);
        let per_tick = self.options.target_per_minute * self.options.tick as f64 / 60.0;
        let need =
            self.allowance(base, &at) / self.sessions_per_expected_show(newest) + self.policy.carry;
        if need <= 0.0 {
            return (base, Some(need.max(-per_tick)));
        }
        // Writes not yet in effect: hold rather than pile them up.
        if let Some(base) = base {
            let unconfirmed = self.expected(self.policy.effective.map_or(0, |e| e + 1), base, &at);
            let lag = now.saturating_sub(newest);
            let delay = self.schedule.propagation_delay() + lag + 2 * self.options.tick;
            let per_second = per_tick / self.options.tick as f64;
            if unconfirmed > per_second * delay as f64 + per_tick {
                return (Some(base), None);
            }
        }
        // Never a place later than the log's clock, nor more places than ten a
        // wanted admission.
        let bound = newest.saturating_mul(1000).saturating_add(999);
        let most = (per_tick / MIN_SHOW_UP).ceil() as usize;
        let from = base.map_or(0, |b| b.saturating_add(1));
        let (mut expected, mut places, mut last) = (0.0, 0, None);
        for (arr, uid) in self
            .policy
            .line
            .range((from, Arc::clone(&self.policy.empty))..)
        {
            // Places sharing a millisecond pass together: a tie is counted whole.
            let more = last != Some(*arr);
            if *arr > bound || (more && (expected >= need || places >= most)) {
                break;
            }
            // A place worth nothing (a device that will not come in) is passed freely.
            let worth = self.worth(uid, *arr, &at);
            expected += worth;
            if worth > 0.0 {
                places += 1;
            }
            last = Some(*arr);
        }
        // A line that ran out leaves no credit: a later crowd gets the target, not more.
        let carry = if expected >= need {
            need - expected
        } else {
            0.0
        };
        (base.max(last), Some(carry.max(-per_tick)))
    }

    /// The cutoff's speed at clock time `now`, deciding `cutoff`: arrival
    /// milliseconds per second over the last [`RATE_WINDOW`] seconds.
    fn speed(&mut self, now: u64, cutoff: u64) -> FifoRate {
        if self.policy.history.is_empty() {
            // The first decision: from the first place (or the cutoff in effect) a tick ago.
            let from = self.base().unwrap_or_else(|| {
                self.policy
                    .line
                    .first()
                    .map_or(cutoff, |(arr, _)| arr.saturating_sub(1).min(cutoff))
            });
            self.policy
                .history
                .push_back((now.saturating_sub(self.options.tick), from.min(cutoff)));
        }
        while self.policy.history.len() > 1
            && self.policy.history[1].0.saturating_add(RATE_WINDOW) <= now
        {
            self.policy.history.pop_front();
        }
        let (then, from) = self.policy.history[0];
        if self.policy.history.back().is_none_or(|&(t, _)| t < now) {
            self.policy.history.push_back((now, cutoff));
        }
        let seconds = now.saturating_sub(then).max(1);
        let thousandths = (cutoff.saturating_sub(from) as f64 * 1000.0 / seconds as f64).round();
        FifoRate::from_thousandths(thousandths as u64)
    }

    /// What the FIFO rule alone shows, with the cutoff in effect for each of the
    /// last `seconds` seconds of log (`None` where no line said).
    pub fn status(&self, seconds: u64) -> FifoStatus {
        let newest = self.intake.newest();
        let cutoffs = newest.map_or_else(Vec::new, |n| {
            let from = n.saturating_sub(seconds.saturating_sub(1));
            (from..=n)
                .filter(|&t| self.intake.series().get(t).is_some())
                .map(|t| self.policy.cutoffs.get(&t).copied())
                .collect()
        });
        let held = self.policy.line.len() as u64;
        let ahead = self
            .policy
            .effective
            .map_or(held, |e| held - self.places_up_to(e));
        FifoStatus {
            cutoff: self.schedule.written(),
            wanted_cutoff: self.wanted,
            cutoff_in_effect: self.policy.effective,
            rate: self.policy.written_rate,
            wanted_rate: self.policy.wanted_rate,
            show_up: self.show_up()[0],
            show_up_stale: self.show_up()[1],
            propagation: self.schedule.propagation(),
            ahead,
            not_fifo_lines: self.policy.not_fifo_lines,
            cutoffs,
        }
    }
}

/// What a place's worth is judged by at one moment.
struct Worth {
    newest: u64,
    /// When a cutoff written now is expected to be in effect (clock time).
    lands: u64,
    stale_after: u64,
    shares: [f64; 2],
    start_ms: u64,
    sample: f64,
}

/// The first request at or after `t` of a page last loaded at `seen` and
/// coming back every `poll` seconds (the next one, at the earliest).
fn next_request(seen: u64, poll: u64, t: u64) -> u64 {
    let periods = t.saturating_sub(seen).div_ceil(poll.max(1)).max(1);
    seen.saturating_add(periods.saturating_mul(poll))
}

/// Whether a place last seen at `seen` is live at log time `t`.
fn kind(seen: u64, t: u64, stale_after: u64) -> Kind {
    if seen.saturating_add(stale_after) < t {
        Kind::Stale
    } else {
        Kind::Live
    }
}

#[cfg(test)]
mod tests;
