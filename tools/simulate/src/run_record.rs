//! What a run records as it goes: per-second counts (admissions, draws), draws per
//! slot, each person's first estimate and admission, the attackers' tally, the cost.

use std::collections::HashSet;

use waiting_room::admission::estimate::Estimate;
use waiting_room::settings::percentage::Percentage;

use crate::attacker::AttackTally;
use crate::closed_loop::Trace;
use crate::population::Population;
use crate::scenario::Scenario;
use crate::toll_payment::TollTally;

/// "Not admitted" in [`RunRecord::admitted_ms`].
const NEVER: u64 = u64::MAX;

/// Drawn tokens remembered before old ones are forgotten.
const PRUNE_AT: usize = 1 << 20;

/// Draws and wins of one slot.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SlotDraws {
    /// Distinct tokens drawn.
    pub draws: u64,
    /// Of those, winners.
    pub wins: u64,
    /// Wins expected: the sum of the percentages in effect at the draws, as fractions.
    pub expected_wins: f64,
}

/// The raw record of one run.
#[derive(Debug, Clone)]
pub struct RunRecord {
    /// New sessions (first admissions, and replayed winners) per second.
    pub new_sessions: Vec<u64>,
    /// New sessions as the origin and the controller see them: distinct allow
    /// tokens (the address and the token's `exp`) handed out with
    /// `session=new`, per second. Tabs or devices admitted in the same second
    /// behind one address share a token and count once.
    pub new_tokens: Vec<u64>,
    /// Requests forwarded to the origin per second.
    pub origin_requests: Vec<u64>,
    /// Distinct wait tokens drawn per second (attackers' replays left out).
    pub draws: Vec<u64>,
    /// The percentage in effect at the edge each second, in millionths.
    pub percentage: Vec<u32>,
    /// What the controller did, when one ran.
    pub control: Option<Trace>,
    /// Change in sessions browsing (admitted, before their last request), per second.
    pub browsing_delta: Vec<i64>,
    /// Change in sessions holding a valid allow token, per second.
    pub holding_delta: Vec<i64>,
    /// Draws per slot, from the run's first slot.
    pub slots: Vec<SlotDraws>,
    /// Each person's admission, milliseconds from the start (`u64::MAX`: not admitted).
    admitted_ms: Vec<u64>,
    /// Each person's FIFO place: the `arr` of the first verdict that carried
    /// one (`u64::MAX`: none).
    place: Vec<u64>,
    /// Who gave up waiting.
    gave_up: Vec<bool>,
    /// Each person's first waiting page: when, and the estimate it showed.
    pub first_estimate: Vec<Option<(u64, Estimate)>>,
    /// The attackers' tally.
    pub attack: AttackTally,
    /// The bot toll paid, and draws held unpaid, by kind of visitor.
    pub toll: TollTally,
    /// Requests decided (a tab repeating its device's request counts, whether
    /// or not `decide` ran again for it).
    pub decisions: u64,
    /// Calls of `decide`.
    pub decide_calls: u64,
    /// Nanoseconds spent inside `decide`.
    pub decide_nanos: u128,
    /// Wall-clock seconds of the run.
    pub wall_seconds: f64,
    drawn: HashSet<(u64, u64)>,
    prune_at: usize,
    /// Allow tokens handed out, by address key and `exp`, while they live.
    tokens: HashSet<(u64, u64)>,
    tokens_prune_at: usize,
    first_slot: u64,
    wait_period: u64,
    allow_timeout: u64,
}

impl RunRecord {
    /// An empty record for `scenario`.
    pub fn new(scenario: &Scenario, population: &Population) -> RunRecord {
        let seconds = scenario.duration as usize;
        let d = scenario.room.settings().wait_period_duration.max(1);
        RunRecord {
            new_sessions: vec![0; seconds],
            new_tokens: vec![0; seconds],
            origin_requests: vec![0; seconds],
            draws: vec![0; seconds],
            percentage: vec![0; seconds],
            control: None,
            browsing_delta: vec![0; seconds + 1],
            holding_delta: vec![0; seconds + 1],
            slots: Vec::new(),
            admitted_ms: vec![NEVER; population.people.len()],
            place: vec![u64::MAX; population.people.len()],
            gave_up: vec![false; population.people.len()],
            first_estimate: vec![None; population.people.len()],
            attack: AttackTally::default(),
            toll: TollTally::default(),
            decisions: 0,
            decide_calls: 0,
            decide_nanos: 0,
            wall_seconds: 0.0,
            drawn: HashSet::new(),
            prune_at: PRUNE_AT,
            tokens: HashSet::new(),
            tokens_prune_at: PRUNE_AT,
            first_slot: crate::scenario::START / d,
            wait_period: d,
            allow_timeout: scenario.room.settings().allow_period_timeout,
        }
    }

    /// Whether `person` has been admitted.
    pub fn is_admitted(&self, person: usize) -> bool {
        self.admitted_at(person).is_some()
    }

    /// When `person` was admitted, seconds from the start.
    pub fn admitted_at(&self, person: usize) -> Option<u64> {
        self.admitted_ms(person).map(|ms| ms / 1000)
    }

    /// When `person` was admitted, milliseconds from the start.
    pub fn admitted_ms(&self, person: usize) -> Option<u64> {
        self.admitted_ms
            .get(person)
            .copied()
            .filter(|&ms| ms != NEVER)
    }

    /// `person`'s FIFO place (the `arr` of their first verdict that carried one).
    pub fn place(&self, person: usize) -> Option<u64> {
        self.place.get(person).copied().filter(|&p| p != u64::MAX)
    }

    /// `person` was given the place `arr`; only the first counts.
    pub fn placed(&mut self, person: usize, arr: u64) {
        if let Some(slot) = self.place.get_mut(person)
            && *slot == u64::MAX
        {
            *slot = arr;
        }
    }

    /// Whether `person` gave up waiting.
    pub fn gave_up(&self, person: usize) -> bool {
        self.gave_up.get(person).copied().unwrap_or(false)
    }

    /// `person` gave up waiting.
    pub fn give_up(&mut self, person: usize) {
        if let Some(slot) = self.gave_up.get_mut(person) {
            *slot = true;
        }
    }

    /// A draw of the wait token expiring at `exp` held by `uid` (a key of its
    /// text), at a percentage of `p` (a fraction); a token shared by several
    /// devices counts once.
    pub fn draw(&mut self, uid: u64, exp: u64, now: u64, won: bool, p: f64) {
        if !self.drawn.insert((uid, exp)) {
            return;
        }
        bump(
            &mut self.draws,
            now.saturating_sub(crate::scenario::START),
            1,
        );
        if self.drawn.len() > self.prune_at {
            // Every draw of a token comes within a slot of its expiry.
            let horizon = now.saturating_sub(2 * self.wait_period);
            self.drawn.retain(|&(_, e)| e >= horizon);
            self.prune_at = (2 * self.drawn.len()).max(PRUNE_AT);
        }
        let Some(slot) = (exp / self.wait_period).checked_sub(self.first_slot) else {
            return;
        };
        let slot = slot as usize;
        if self.slots.len() <= slot {
            self.slots.resize(slot + 1, SlotDraws::default());
        }
        self.slots[slot].draws += 1;
        self.slots[slot].wins += u64::from(won);
        self.slots[slot].expected_wins += p;
    }

    /// An allow token ending at `exp` handed out with `session=new` to `address`
    /// (a key of its text) at second `t`: a new session when no request got it before.
    pub fn allow_token(&mut self, address: u64, exp: u64, t: u64) {
        if !self.tokens.insert((address, exp)) {
            return;
        }
        bump(&mut self.new_tokens, t, 1);
        if self.tokens.len() > self.tokens_prune_at {
            // An ended token is never handed out again.
            let now = crate::scenario::START + t;
            self.tokens.retain(|&(_, e)| e >= now);
            self.tokens_prune_at = (2 * self.tokens.len()).max(PRUNE_AT);
        }
    }

    /// The percentage in effect at second `t`.
    pub fn percentage_at(&mut self, t: u64, p: Percentage) {
        if let Some(slot) = self.percentage.get_mut(t as usize) {
            *slot = p.micros();
        }
    }

    /// A request forwarded to the origin at second `t`.
    pub fn origin_request(&mut self, t: u64) {
        bump(&mut self.origin_requests, t, 1);
    }

    /// `person` admitted at millisecond `ms` from the start: a new session.
    pub fn admit(&mut self, person: usize, ms: u64) {
        if let Some(slot) = self.admitted_ms.get_mut(person)
            && *slot == NEVER
        {
            *slot = ms;
        }
        let t = ms / 1000;
        bump(&mut self.new_sessions, t, 1);
        bump_signed(&mut self.browsing_delta, t, 1);
        bump_signed(&mut self.holding_delta, t, 1);
    }

    /// A replayed winning token opened another session at second `t`.
    pub fn replay_admission(&mut self, t: u64) {
        bump(&mut self.new_sessions, t, 1);
    }

    /// A session's last request at second `t`.
    pub fn session_end(&mut self, t: u64) {
        bump_signed(&mut self.browsing_delta, t, -1);
        bump_signed(&mut self.holding_delta, t + self.allow_timeout, -1);
    }

    /// `person` saw a waiting page at second `t` showing `estimate`; only the first counts.
    pub fn first_page(&mut self, person: usize, t: u64, estimate: Option<Estimate>) {
        if let (Some(slot @ None), Some(estimate)) = (self.first_estimate.get_mut(person), estimate)
        {
            *slot = Some((t, estimate));
        }
    }
}

fn bump(series: &mut [u64], t: u64, by: u64) {
    if let Some(count) = series.get_mut(t as usize) {
        *count += by;
    }
}

fn bump_signed(series: &mut [i64], t: u64, by: i64) {
    if let Some(count) = series.get_mut(t as usize) {
        *count += by;
    }
}
