//! Activation chains (seed §2c): every node woken by another node's
//! message shares the correlation ID of the chain that woke it. A message to
//! a node already in its chain (a cycle), a chain longer than the limit,
//! or a node woken again within its cooldown is refused with the reason,
//! which goes back to the node that asked.

use std::collections::HashMap;

/// Why a message was refused; the text is what the asking agent reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("refused: the activation chain is already {depth} deep (remora.max_depth = {max}); finish with what you have or ask the human")]
    TooDeep { depth: usize, max: usize },
    #[error("refused: {target} is already in this activation chain ({}); messaging it would create a cycle", .chain.join(" → "))]
    Cycle { target: String, chain: Vec<String> },
    #[error("refused: {target} was activated {ago_ms} ms ago; it may be activated again after {cooldown_ms} ms (remora.cooldown_ms)")]
    Cooldown {
        target: String,
        ago_ms: i64,
        cooldown_ms: i64,
    },
    #[error("refused: no activation chain {0} (it ended or expired)")]
    NoChain(String),
}

/// One activation: the node and when it was woken (ms since the epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Activation {
    pub agent_id: String,
    pub depth: usize,
    pub at_ms: i64,
}

/// The chains in flight.
#[derive(Debug, Clone)]
pub struct Chains {
    max_depth: usize,
    cooldown_ms: i64,
    chains: HashMap<String, Vec<Activation>>,
    /// When each node was last woken by another node.
    last_woken: HashMap<String, i64>,
}

/// A chain unused for this long is forgotten (the seed: 60 s).
pub const CHAIN_TTL_MS: i64 = 60_000;

impl Chains {
    pub fn new(max_depth: usize, cooldown_ms: u64) -> Self {
        Self {
            max_depth: max_depth.max(1),
            cooldown_ms: i64::try_from(cooldown_ms).unwrap_or(i64::MAX),
            chains: HashMap::new(),
            last_woken: HashMap::new(),
        }
    }

    /// A new chain started by the human (a chat, a task): `agent` at depth 0.
    /// The human is never held back by a cooldown.
    pub fn start(&mut self, agent: &str, now_ms: i64) -> String {
        let correlation = format!("cr_{}", &super::ids::fresh()[super::ids::PREFIX.len()..]);
        self.chains.insert(
            correlation.clone(),
            vec![Activation {
                agent_id: agent.to_owned(),
                depth: 0,
                at_ms: now_ms,
            }],
        );
        correlation
    }

    /// Whether the chain `correlation` may wake `target`.
    pub fn check(&self, correlation: &str, target: &str, now_ms: i64) -> Result<(), Refusal> {
        let chain = self
            .chains
            .get(correlation)
            .ok_or_else(|| Refusal::NoChain(correlation.to_owned()))?;
        if chain.len() >= self.max_depth {
            return Err(Refusal::TooDeep {
                depth: chain.len(),
                max: self.max_depth,
            });
        }
        if chain.iter().any(|a| a.agent_id == target) {
            return Err(Refusal::Cycle {
                target: target.to_owned(),
                chain: chain.iter().map(|a| a.agent_id.clone()).collect(),
            });
        }
        if let Some(&last) = self.last_woken.get(target) {
            let ago = now_ms - last;
            if ago < self.cooldown_ms {
                return Err(Refusal::Cooldown {
                    target: target.to_owned(),
                    ago_ms: ago,
                    cooldown_ms: self.cooldown_ms,
                });
            }
        }
        Ok(())
    }

    /// Checks, then records `target` as woken by the chain; returns its depth.
    pub fn activate(
        &mut self,
        correlation: &str,
        target: &str,
        now_ms: i64,
    ) -> Result<usize, Refusal> {
        self.check(correlation, target, now_ms)?;
        let chain = self
            .chains
            .get_mut(correlation)
            .ok_or_else(|| Refusal::NoChain(correlation.to_owned()))?;
        let depth = chain.len();
        chain.push(Activation {
            agent_id: target.to_owned(),
            depth,
            at_ms: now_ms,
        });
        self.last_woken.insert(target.to_owned(), now_ms);
        Ok(depth)
    }

    pub fn chain(&self, correlation: &str) -> Option<&[Activation]> {
        self.chains.get(correlation).map(Vec::as_slice)
    }

    /// Forgets chains whose last activation is older than [`CHAIN_TTL_MS`]
    /// and cooldowns that ran out; returns the chains forgotten.
    pub fn expire(&mut self, now_ms: i64) -> Vec<String> {
        let gone: Vec<String> = self
            .chains
            .iter()
            .filter(|(_, c)| c.last().is_none_or(|a| now_ms - a.at_ms > CHAIN_TTL_MS))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            self.chains.remove(k);
        }
        let cooldown = self.cooldown_ms;
        self.last_woken.retain(|_, t| now_ms - *t < cooldown);
        gone
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_in_the_chain_is_a_cycle() {
        let mut c = Chains::new(5, 0);
        let corr = c.start("rm_aaaaaaaa", 0);
        assert_eq!(c.activate(&corr, "rm_bbbbbbbb", 1), Ok(1));
        assert_eq!(c.activate(&corr, "rm_cccccccc", 2), Ok(2));
        let err = c.activate(&corr, "rm_aaaaaaaa", 3).unwrap_err();
        assert!(matches!(err, Refusal::Cycle { .. }));
        assert!(
            err.to_string()
                .contains("rm_aaaaaaaa → rm_bbbbbbbb → rm_cccccccc"),
            "{err}"
        );
        // Another chain may wake the same node.
        let other = c.start("rm_dddddddd", 4);
        assert_eq!(c.activate(&other, "rm_aaaaaaaa", 5), Ok(1));
    }

    #[test]
    fn chains_stop_at_max_depth() {
        let mut c = Chains::new(3, 0);
        let corr = c.start("rm_00000000", 0);
        c.activate(&corr, "rm_00000001", 0).unwrap();
        c.activate(&corr, "rm_00000002", 0).unwrap();
        assert_eq!(
            c.activate(&corr, "rm_00000003", 0),
            Err(Refusal::TooDeep { depth: 3, max: 3 })
        );
        assert_eq!(
            c.chain(&corr).unwrap().len(),
            3,
            "a refusal records nothing"
        );
    }

    #[test]
    fn a_cooldown_stops_a_node_refiring_in_a_loop() {
        let mut c = Chains::new(5, 1000);
        let a = c.start("rm_aaaaaaaa", 0);
        c.activate(&a, "rm_bbbbbbbb", 100).unwrap();
        let b = c.start("rm_cccccccc", 200);
        assert!(matches!(
            c.activate(&b, "rm_bbbbbbbb", 500),
            Err(Refusal::Cooldown { ago_ms: 400, .. })
        ));
        assert_eq!(c.activate(&b, "rm_bbbbbbbb", 1100), Ok(1));
        // The human starting a chain is never held back.
        c.start("rm_bbbbbbbb", 1200);
    }

    #[test]
    fn idle_chains_expire() {
        let mut c = Chains::new(5, 10);
        let corr = c.start("rm_aaaaaaaa", 0);
        assert!(c.expire(CHAIN_TTL_MS).is_empty());
        assert_eq!(c.expire(CHAIN_TTL_MS + 1), vec![corr.clone()]);
        assert_eq!(
            c.check(&corr, "rm_bbbbbbbb", 0),
            Err(Refusal::NoChain(corr))
        );
    }
}
