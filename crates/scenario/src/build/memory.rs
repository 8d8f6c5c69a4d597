//! What building a scenario will cost in memory, estimated from the `count`s as written before
//! any copy is made, and refused above a budget (issue 36: 696 bytes of `count` tables, every
//! element count within [`MAX_ELEMENTS`](super::MAX_ELEMENTS), grew past 8 GB and aborted
//! after 112 s).
//!
//! The cost of an element is measured, not derived from `size_of`: bytes held once the scenario
//! is loaded (its specs, names, routes and the resolved table for `run.json`) and the simulation
//! built (link models, queues, hosts), counted by dhat in `crates/sim/tests/scale_memory.rs`
//! (`the_per_element_costs_the_estimate_uses_are_measured`) and rounded up. What the run then
//! adds (data in flight, buffers) depends on the traffic and is not estimated; nor are
//! `[[route]]` (at most 100 000), `[[dama]]` (at most 1024) and the core's route table (at most
//! 128 MiB, [`MAX_CORE`](crate::MAX_CORE)).

use toml::Value;

use super::{human_bytes, join, key, too_many, Builder, Result};
use crate::keys::{join_index, Seg};

/// Bytes a node takes once loaded and built (measured: 1 364 for a host).
pub const NODE_BYTES: u64 = 1_400;
/// Bytes a link takes once loaded and built (measured: 2 935).
pub const LINK_BYTES: u64 = 3_000;
/// Bytes a flow takes once loaded and built, before it sends (measured: 6 511 for a bulk flow).
pub const FLOW_BYTES: u64 = 6_600;

/// The estimated set-up memory accepted by default: 4 GiB. Fixed, like every other limit, so
/// that a scenario accepted on one machine is accepted on all; the largest shipped scenario
/// (`scenarios/scale/dumbbell_100k.toml`: 2.1 GB estimated, 2.2 GB peak RSS for its whole
/// 60 s run) fits with room, and the element limits together (8.4 GB) do not.
pub const MAX_SETUP_BYTES: u64 = 4 << 30;

/// The environment variable that replaces [`MAX_SETUP_BYTES`] (a size: `16GB`, `8GiB`).
pub const MEMORY_ENV: &str = "SATPEP_MAX_MEMORY";

/// The arrays of tables whose elements the estimate counts, with the bytes of one.
const COSTS: [(&str, u64, &str); 3] = [
    ("node", NODE_BYTES, "nodes"),
    ("link", LINK_BYTES, "links"),
    ("flow", FLOW_BYTES, "flows"),
];

impl Builder<'_, '_> {
    /// Refuse a scenario whose estimated set-up memory exceeds the budget, at the `count` of
    /// the table that costs most (or at the array, when no table has a `count`). Arrays that
    /// are malformed or beyond their element limit are left to the checks that name them.
    pub(super) fn check_memory(&self) -> Result<()> {
        let mut total: u64 = 0;
        let mut parts = Vec::new();
        // (bytes, path to blame, copies, bytes of one copy)
        let mut worst: Option<(u64, Vec<Seg>, u64, u64)> = None;
        for (k, each, plural) in COSTS {
            let Ok(tables) = self.array_of_tables(k) else {
                return Ok(());
            };
            let mut n: u64 = 0;
            for (i, t) in tables.iter().enumerate() {
                let (copies, path) = match t.get("count").map(Value::as_integer) {
                    Some(Some(c)) if c >= 0 => (c as u64, join(&join_index(&key(k), i), "count")),
                    Some(_) => return Ok(()),
                    None => (1, key(k)),
                };
                n = n.saturating_add(copies);
                let bytes = copies.saturating_mul(each);
                if worst.as_ref().is_none_or(|w| bytes > w.0) {
                    worst = Some((bytes, path, copies, each));
                }
            }
            if too_many(k, usize::try_from(n).unwrap_or(usize::MAX)).is_some() {
                return Ok(());
            }
            total = total.saturating_add(n.saturating_mul(each));
            parts.push(format!("{n} {plural} × {}", human_bytes(each.into())));
        }
        let limit = self.memory_limit()?;
        let Some((bytes, path, copies, each)) = worst.filter(|_| total > limit) else {
            return Ok(());
        };
        let rest = total - bytes;
        let fit = limit.saturating_sub(rest) / each;
        let advice = if !matches!(path.last(), Some(Seg::Key(c)) if c == "count") {
            format!("these take {}", human_bytes(bytes.into()))
        } else if fit == 0 {
            format!(
                "this table's {copies} copies take {}, and the rest alone {}",
                human_bytes(bytes.into()),
                human_bytes(rest.into())
            )
        } else {
            format!(
                "this table's {copies} copies take {}; about {fit} fit",
                human_bytes(bytes.into())
            )
        };
        Err(self.err(
            &path,
            format!(
                "building this scenario would take about {} of memory ({}, measured per \
                 element); at most {} are accepted: {advice}. On a machine with the memory, \
                 set {MEMORY_ENV} (e.g. {MEMORY_ENV}=16GB) to accept more (docs/scenario.md, \
                 \"Limits\")",
                human_bytes(total.into()),
                parts.join(", "),
                human_bytes(limit.into()),
            ),
        ))
    }

    /// [`MEMORY_ENV`] when set, else [`MAX_SETUP_BYTES`].
    fn memory_limit(&self) -> Result<u64> {
        let Some(v) = std::env::var_os(MEMORY_ENV) else {
            return Ok(MAX_SETUP_BYTES);
        };
        let v = v.to_string_lossy();
        satpep_proto::units::parse_bytes(v.trim())
            .map(|b| b.0)
            .map_err(|e| self.err(&[], format!("{MEMORY_ENV}=`{v}` in the environment: {e}")))
    }
}
