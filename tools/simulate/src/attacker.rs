//! The replay attacker: keeps a copy of every token it is handed.

use serde::Serialize;

/// An attacker's kept tokens.
#[derive(Debug, Default)]
pub struct Jar {
    /// Losing wait tokens, newest last.
    losers: Vec<String>,
    /// The wait token that won its draw, once one has.
    pub winner: Option<String>,
}

impl Jar {
    /// The address an attacker's accomplice presents its tokens from.
    pub const ACCOMPLICE: &'static str = "198.51.100.7";
    /// Losing tokens kept (older ones are dropped).
    const KEPT: usize = 8;

    /// Keeps a losing token.
    pub fn keep(&mut self, token: String) {
        if self.losers.len() == Self::KEPT {
            self.losers.remove(0);
        }
        self.losers.push(token);
    }

    /// The losing tokens kept.
    pub fn losers(&self) -> impl Iterator<Item = &str> {
        self.losers.iter().map(String::as_str)
    }
}

/// What replaying achieved, over all attackers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct AttackTally {
    /// Losing wait tokens presented again, hoping for another draw.
    pub reroll_attempts: u64,
    /// Of those, admitted.
    pub reroll_successes: u64,
    /// Tokens presented from another address than the one they were issued to.
    pub cross_address_attempts: u64,
    /// Of those, admitted.
    pub cross_address_successes: u64,
    /// A winning wait token presented again from its own address, after admission.
    pub winner_replay_attempts: u64,
    /// Of those, admitted (a documented limitation shared with the VCL).
    pub winner_replay_successes: u64,
}

impl AttackTally {
    /// Counts one re-roll.
    pub fn reroll(&mut self, admitted: bool) {
        self.reroll_attempts += 1;
        self.reroll_successes += u64::from(admitted);
    }

    /// Counts one presentation from an accomplice's address.
    pub fn cross_address(&mut self, admitted: bool) {
        self.cross_address_attempts += 1;
        self.cross_address_successes += u64::from(admitted);
    }

    /// Counts one replay of a winning token.
    pub fn replay(&mut self, admitted: bool) {
        self.winner_replay_attempts += 1;
        self.winner_replay_successes += u64::from(admitted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jar_keeps_the_newest_losers() {
        let mut jar = Jar::default();
        for i in 0..10 {
            jar.keep(i.to_string());
        }
        let kept: Vec<&str> = jar.losers().collect();
        assert_eq!(kept, ["2", "3", "4", "5", "6", "7", "8", "9"]);
    }
}
