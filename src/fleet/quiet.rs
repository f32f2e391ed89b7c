//! The quiet renewal: how a node whose share has not moved renews with
//! plain Redis commands instead of the script.
//!
//! The script (`renew.lua`) costs Redis tens of microseconds a call; at
//! one call per node per refresh, ten thousand nodes would keep a Redis
//! core busy for a third of every second. Most renewals change nothing:
//! the node wants what it reported, and its grant is its share. Such a
//! renewal only has to keep the node's lease and learn that nothing moved,
//! which one pipeline of plain commands does (see [`pipeline`]):
//!
//! - `PEXPIRE` of the node's lease key, `lease:<node>\0<token>`, which the
//!   script sets to the lease it records; Redis extends it on its own
//!   clock, and answers 0 if the lease is gone (run out, forgotten, or
//!   another process's token now holds the name). `PEXPIRETIME` then gives
//!   the new end on the server's clock, the expiry the node sends back to
//!   the script next time, as it does a script's answer;
//! - `SET alive … XX`, which renews the mark the script reads to tell a
//!   gap of calls (a ledger restored from a snapshot older than that mark
//!   has lost it, and learns) without creating it: only the script does,
//!   once it has looked;
//! - the budget's figures (`HMGET meta …`) and the node's record
//!   (`HGET nodes <node>`), which [`decide`] compares with what the node
//!   last heard from the script;
//! - now and then (every [`hint_every`] quiet renewals) `ZADD expiry XX GT`
//!   with the lease end the node last knew, so that `expiry` (a lower bound
//!   of the lease ends, which the script purges from) keeps a live node
//!   out of the script's sight.
//!
//! Whatever [`decide`] finds amiss sends the node to the script at once.
//! A record unlike the one the script last wrote, a lease key gone, or the
//! server's clock that moved unlike the node's, is *trouble*: the node
//! calls the script with what it knew before the quiet renewal, so the
//! script sees the writes lost and learns, exactly as it would have had
//! the node called it directly. Anything else (a learning lease, a new
//! epoch, a level that moved the node's share, the turns' rotation, a want
//! that moved, leases due to be purged, a water level to find again, the
//! keys' time to live) is a plain renewal by script.
//!
//! This file uses only `std` and `redis`, so `examples/fleet_scale.rs`
//! includes it to renew as a node does.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::time::Duration;

/// The quiet renewal's fields of `meta`, in the order [`decide`] reads
/// them.
const FIELDS: [&str; 11] = [
    "epoch",
    "learn_until",
    "water",
    "capacity",
    "wanting",
    "kept",
    "version",
    "due",
    "nodes",
    "refresh",
    "granted",
];

/// The keys a quiet renewal touches, under the budget's hash tag.
#[derive(Debug, Clone)]
pub(crate) struct QuietKeys {
    meta: String,
    nodes: String,
    expiry: String,
    lease: String,
    alive: String,
}

impl QuietKeys {
    /// The keys of node `node` (of token `token`) in the budget whose keys
    /// start with `tag` (`{sidejob:fleet:<budget>}`).
    pub(crate) fn new(tag: &str, node: &str, token: &str) -> QuietKeys {
        QuietKeys {
            meta: format!("{tag}:meta"),
            nodes: format!("{tag}:nodes"),
            expiry: format!("{tag}:expiry"),
            lease: format!("{tag}:lease:{node}\0{token}"),
            alive: format!("{tag}:alive"),
        }
    }
}

/// How long the mark `alive` outlives the last call (ms): as `renew.lua`'s
/// `alive_ttl`.
pub(crate) fn alive_ttl(lease_ms: u64, refresh_ms: u64) -> u64 {
    (3 * refresh_ms)
        .min(lease_ms.saturating_sub(refresh_ms))
        .max(2 * refresh_ms)
        .max(1)
}

/// Every how many quiet renewals a node raises its place in `expiry`: often
/// enough that the place stays ahead of the server's clock while the node
/// renews (the place is a lease end it knew one renewal before).
pub(crate) fn hint_every(lease_ms: u64, refresh_ms: u64) -> u64 {
    (lease_ms / refresh_ms.max(1) / 2).max(1)
}

/// The quiet renewal of node `node` with its lease of `lease_ms`;
/// `hint`: the lease end to raise its place in `expiry` to, if any.
pub(crate) fn pipeline(
    keys: &QuietKeys,
    node: &str,
    (lease_ms, refresh_ms): (u64, u64),
    hint: Option<i64>,
) -> redis::Pipeline {
    // A plain pipeline, not a transaction: each read stands alone (a
    // script between them changes only what the next renewal reads), and
    // the commands are the script's own, so the nodes' ACL needs no more.
    let mut pipe = redis::pipe();
    pipe.cmd("PEXPIRE")
        .arg(&keys.lease)
        .arg(lease_ms)
        .cmd("PEXPIRETIME")
        .arg(&keys.lease)
        .cmd("SET")
        .arg(&keys.alive)
        .arg(1)
        .arg("PX")
        .arg(alive_ttl(lease_ms, refresh_ms))
        .arg("XX")
        .cmd("HMGET")
        .arg(&keys.meta)
        .arg(&FIELDS[..])
        .cmd("HGET")
        .arg(&keys.nodes)
        .arg(node);
    if let Some(end) = hint {
        pipe.cmd("ZADD")
            .arg(&keys.expiry)
            .arg("XX")
            .arg("GT")
            .arg(end)
            .arg(node)
            .ignore();
    }
    pipe
}

/// The reply of [`pipeline`], as redis-rs reads it.
pub(crate) type QuietReply = (
    i64,
    i64,
    Option<String>,
    Vec<Option<String>>,
    Option<String>,
);

/// What the node heard from its last script call that a quiet renewal
/// checks against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Heard {
    /// The record the script wrote: `want grant expiry token epoch`.
    pub(crate) record: String,
    /// The want it reported.
    pub(crate) want: u64,
    /// The grant, the target and the share it answered.
    pub(crate) grant: u64,
    pub(crate) target: u64,
    pub(crate) share: u64,
    /// The ledger's epoch of the grant.
    pub(crate) epoch: u64,
    /// The turn of the capped nodes' extra slots it was answered in: the
    /// server's time over the lease.
    pub(crate) turn: i64,
    /// The budget's capacity.
    pub(crate) capacity: u64,
}

impl Heard {
    /// What a script answer (`ok`) with `record` tells, for a call that
    /// reported `want`, with its lease ending at `expiry` (ms, server).
    pub(crate) fn new(
        record: String,
        want: u64,
        (grant, target, share): (u64, u64, u64),
        (expiry, lease_ms): (i64, u64),
        capacity: u64,
    ) -> Option<Heard> {
        let epoch = record.rsplit(' ').next()?.parse().ok()?;
        let lease = i64::try_from(lease_ms).ok()?.max(1);
        Some(Heard {
            record,
            want,
            grant,
            target,
            share,
            epoch,
            turn: expiry.saturating_sub(lease).div_euclid(lease),
            capacity,
        })
    }
}

/// The water level as the script last found it: `L` (−1: every want fits),
/// and below it the count and sum of the wants, the version of the wants
/// it was found at, and when (ms, server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Water {
    pub(crate) version: u64,
    pub(crate) level: i64,
    below: u64,
    sum: u64,
    found: i64,
}

impl Water {
    pub(crate) fn parse(text: &str) -> Option<Water> {
        let mut parts = text.split(' ');
        let water = Water {
            version: parts.next()?.parse().ok()?,
            level: parts.next()?.parse().ok()?,
            below: parts.next()?.parse().ok()?,
            sum: parts.next()?.parse().ok()?,
            found: parts.next()?.parse().ok()?,
        };
        parts.next().is_none().then_some(water)
    }

    /// Whether a want moving from `from` to `to` moves the node's share
    /// at this level: not while it stays above the level's reach.
    pub(crate) fn moves(water: Option<Water>, from: u64, to: u64) -> bool {
        match water {
            Some(water) if water.level >= 0 => {
                let reach = water.level.unsigned_abs() + 1;
                from.min(reach) != to.min(reach)
            }
            _ => from != to,
        }
    }

    /// The want a node reports, now wanting `want`, having last reported
    /// `reported`: `want`, but while the level last read caps no want
    /// (every want fits the budget) a want that fell is not reported: no
    /// node waits for the slots it would free, so the node keeps them in
    /// the ledger and renews quietly (its own capacity follows its want).
    /// A node's demand is its peak over half a refresh, which moves at
    /// nearly every renewal under real traffic; reported, each move would
    /// cost Redis a script call. Once a want
    /// rises past what the budget holds, the level caps some, the node
    /// reads it at its next quiet renewal, and from then on reports its
    /// want as it is (the slots it frees go to the capped).
    pub(crate) fn reported(water: Option<Water>, reported: u64, want: u64) -> u64 {
        match water {
            Some(water) if water.level < 0 && want < reported => reported,
            _ => want,
        }
    }
}

/// What a quiet renewal found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Nothing moved: the lease runs to `expiry` (ms, server), the grant
    /// stands; the budget has `nodes` nodes.
    Renewed {
        expiry: i64,
        nodes: u64,
        water: Water,
    },
    /// Something moved that the script must see: the node renews by script
    /// now, after applying this renewal (its lease ends at `expiry`; the
    /// water level, if it could be read, is `water`).
    Script {
        expiry: i64,
        why: &'static str,
        water: Option<Water>,
    },
    /// The ledger is not what the node last heard (writes lost, the lease
    /// gone, the server's clock stepped): the node renews by script now
    /// with what it knew before, so the script sees it.
    Trouble { why: &'static str },
}

/// What a quiet renewal's reply tells a node that heard `heard`, whose
/// last known lease end was `seen` (ms, server) from a call sent `since`
/// before this one; `token` and the lease and refresh (ms) are the node's.
pub(crate) fn decide(
    reply: &QuietReply,
    heard: &Heard,
    (seen, since): (i64, Duration),
    token: &str,
    (lease_ms, refresh_ms): (u64, u64),
) -> Verdict {
    let (renewed, expiry, alive, fields, record) = reply;
    let lease = i64::try_from(lease_ms).unwrap_or(i64::MAX);
    let refresh = i64::try_from(refresh_ms).unwrap_or(i64::MAX);
    if *renewed != 1 || *expiry <= 0 {
        return Verdict::Trouble {
            why: "the lease is gone",
        };
    }
    if record.as_deref() != Some(heard.record.as_str()) {
        return Verdict::Trouble {
            why: "the record is not the one last written",
        };
    }
    // The server's clock moved as the node's did since the last call, within
    // the script's own tolerance (`renew.lua`: the record's check).
    let tolerance = refresh.max(500).max(lease / 10);
    // (Saturating: every figure read from Redis may be anything.)
    let server = expiry.saturating_sub(seen);
    let node = i64::try_from(since.as_millis()).unwrap_or(i64::MAX);
    if server.saturating_sub(node).unsigned_abs() > tolerance.unsigned_abs() {
        return Verdict::Trouble {
            why: "the server's clock stepped",
        };
    }
    let field = |i: usize| fields.get(i).and_then(Option::as_deref);
    let water = field(2).and_then(Water::parse);
    let script = |why| Verdict::Script {
        expiry: *expiry,
        why,
        water,
    };
    if alive.is_none() {
        return script("no call for a while");
    }
    let number = |i: usize| field(i).and_then(|text| text.parse::<i64>().ok());
    let now = expiry.saturating_sub(lease);
    let (Some(epoch), Some(learn_until), Some(capacity), Some(wanting), Some(kept)) =
        (number(0), number(1), number(3), number(4), number(5))
    else {
        return script("the budget's figures are unreadable");
    };
    let (Some(version), Some(nodes), Some(budget_refresh)) = (number(6), number(8), number(9))
    else {
        return script("the budget's figures are unreadable");
    };
    if epoch != i64::try_from(heard.epoch).unwrap_or(-1) {
        return script("a new epoch");
    }
    if learn_until > now {
        return script("learning");
    }
    if budget_refresh != refresh {
        return script("another refresh");
    }
    if capacity != i64::try_from(heard.capacity).unwrap_or(-1) {
        return script("another capacity");
    }
    if now.saturating_sub(kept) >= lease / 2 || now < kept {
        return script("the keys' time to live");
    }
    // A grant above the target (slots the node still holds, to give back
    // as they come back), or a target below the share with room left by
    // the others to grow into: the script. A target below the share and
    // no room yet: the node waits, quietly, for the others to give back.
    let room = match number(10) {
        Some(granted) => capacity > granted,
        None => true,
    };
    if heard.grant != heard.target || (heard.target != heard.share && room) {
        return script("the grant is not the share");
    }
    let Some(water) = water else {
        return script("no water level");
    };
    // Leases due to purge, or a water level to find again: a few nodes
    // each refresh call the script for it (about sixteen, chosen by a hash
    // of their token and the refresh), not every node at once.
    let chosen = || {
        let mut hasher = DefaultHasher::new();
        (token, now.div_euclid(refresh.max(1))).hash(&mut hasher);
        let nodes = u64::try_from(nodes).unwrap_or(0);
        hasher.finish().is_multiple_of((nodes / 16).max(1))
    };
    let due = number(7).unwrap_or(0);
    if now >= due && chosen() {
        return script("leases due");
    }
    if water.version != u64::try_from(version).unwrap_or(u64::MAX)
        && (now.saturating_sub(water.found) >= refresh / 2 || now < water.found)
        && chosen()
    {
        return script("the water level moved");
    }
    // The node's share at this level: its want if the level reaches it,
    // otherwise the level, or one more in its turn while the equal shares
    // leave extra slots.
    let wanting = u64::try_from(wanting).unwrap_or(0);
    let capacity = u64::try_from(capacity).unwrap_or(0);
    if water.level < 0 || heard.want <= water.level.unsigned_abs() {
        if heard.share != heard.want {
            return script("the level moved");
        }
    } else {
        let level = water.level.unsigned_abs();
        let capped = wanting.saturating_sub(water.below);
        let extra = capacity
            .saturating_sub(water.sum)
            .saturating_sub(level.saturating_mul(capped));
        let turn = now.div_euclid(lease.max(1));
        if heard.share != level && !(heard.share == level + 1 && extra > 0) {
            return script("the level moved");
        }
        if extra > 0 && turn != heard.turn {
            return script("the turns moved on");
        }
    }
    Verdict::Renewed {
        expiry: *expiry,
        nodes: u64::try_from(nodes).unwrap_or(0),
        water,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{decide, Heard, QuietReply, Verdict, Water};

    const LEASE: u64 = 10_000;
    const REFRESH: u64 = 1_000;
    /// The server's time of the last script call, and of this renewal.
    const THEN: i64 = 1_000_000;
    const NOW: i64 = THEN + 1_000;

    /// A node that heard, at `THEN`, grant 4 of want 4 in epoch 7.
    fn heard() -> Heard {
        Heard::new(
            format!("4 4 {} tok 7", THEN + 10_000),
            4,
            (4, 4, 4),
            (THEN + 10_000, LEASE),
            64,
        )
        .expect("a record")
    }

    /// The reply of a quiet renewal at `NOW` that finds the ledger as the
    /// node left it, water level `level`, `granted` of 64.
    fn reply(level: i64, granted: u64) -> QuietReply {
        let fields = [
            "7".to_owned(),                         // epoch
            "0".to_owned(),                         // learn_until
            format!("3 {level} 2 6 {}", NOW - 100), // water
            "64".to_owned(),                        // capacity
            "5".to_owned(),                         // wanting
            (NOW - 1_000).to_string(),              // kept
            "3".to_owned(),                         // version
            (NOW + 5_000).to_string(),              // due
            "5".to_owned(),                         // nodes
            REFRESH.to_string(),                    // refresh
            granted.to_string(),                    // granted
        ];
        (
            1,
            NOW + 10_000,
            Some("OK".to_owned()),
            fields.into_iter().map(Some).collect(),
            Some(heard().record),
        )
    }

    fn verdict(reply: &QuietReply, heard: &Heard) -> Verdict {
        let since = Duration::from_millis(1_000);
        decide(
            reply,
            heard,
            (THEN + 10_000, since),
            "tok",
            (LEASE, REFRESH),
        )
    }

    #[test]
    fn a_ledger_as_the_node_left_it_renews_quietly() {
        assert!(matches!(
            verdict(&reply(-1, 20), &heard()),
            Verdict::Renewed {
                expiry,
                nodes: 5,
                ..
            } if expiry == NOW + 10_000
        ));
    }

    #[test]
    fn writes_lost_a_lease_gone_or_a_clock_stepped_are_trouble() {
        let mut other = reply(-1, 20);
        other.4 = Some(format!("4 5 {} tok 7", THEN + 10_000));
        assert!(matches!(verdict(&other, &heard()), Verdict::Trouble { .. }));
        let mut gone = reply(-1, 20);
        gone.4 = None;
        assert!(matches!(verdict(&gone, &heard()), Verdict::Trouble { .. }));
        let mut lapsed = reply(-1, 20);
        lapsed.0 = 0;
        assert!(matches!(
            verdict(&lapsed, &heard()),
            Verdict::Trouble { .. }
        ));
        let mut stepped = reply(-1, 20);
        stepped.1 += 5_000;
        assert!(matches!(
            verdict(&stepped, &heard()),
            Verdict::Trouble { .. }
        ));
    }

    #[test]
    fn what_moved_the_share_or_the_ledger_sends_the_node_to_the_script() {
        let script = |reply: &QuietReply, heard: &Heard| matches!(verdict(reply, heard), Verdict::Script { expiry, .. } if expiry == NOW + 10_000);
        let with = |field: usize, value: &str| {
            let mut changed = reply(-1, 20);
            changed.3[field] = Some(value.to_owned());
            changed
        };
        let mut idle = reply(-1, 20);
        idle.2 = None;
        assert!(script(&idle, &heard()), "no call for a while");
        assert!(script(&with(0, "8"), &heard()), "a new epoch");
        assert!(
            script(&with(1, &(NOW + 1).to_string()), &heard()),
            "learning"
        );
        assert!(script(&with(3, "65"), &heard()), "a resize");
        assert!(
            script(&with(5, &(NOW - 5_000).to_string()), &heard()),
            "keys' ttl"
        );
        assert!(
            script(&with(7, &NOW.to_string()), &heard()),
            "leases due (5 nodes: all chosen)"
        );
        assert!(script(&with(0, "x"), &heard()), "unreadable");
        // The level fell below the want, past a turn's extra slot: the
        // share moves.
        assert!(script(&reply(2, 20), &heard()), "the level moved");
        // Capped at 4 (level 3, one extra slot: 64 − 6 − 3·3 > 0) is fine in
        // its turn, and not once the turn moved on.
        let capped = Heard::new(
            format!("9 4 {} tok 7", THEN + 10_000),
            9,
            (4, 4, 4),
            (THEN + 10_000, LEASE),
            64,
        )
        .expect("a record");
        let mut in_turn = reply(3, 20);
        in_turn.4 = Some(capped.record.clone());
        assert!(matches!(
            verdict(&in_turn, &capped),
            Verdict::Renewed { .. }
        ));
        let mut next_turn = in_turn.clone();
        next_turn.1 += i64::try_from(LEASE).unwrap();
        let since = Duration::from_millis(1_000 + LEASE);
        assert!(matches!(
            decide(
                &next_turn,
                &capped,
                (THEN + 10_000, since),
                "tok",
                (LEASE, REFRESH)
            ),
            Verdict::Script { .. }
        ));
        // Waiting for room: quiet while there is none, the script once there is.
        let waiting = Heard::new(
            format!("6 4 {} tok 7", THEN + 10_000),
            6,
            (4, 4, 6),
            (THEN + 10_000, LEASE),
            64,
        )
        .expect("a record");
        let mut full = reply(-1, 64);
        full.4 = Some(waiting.record.clone());
        assert!(matches!(verdict(&full, &waiting), Verdict::Renewed { .. }));
        let mut room = reply(-1, 63);
        room.4 = Some(waiting.record.clone());
        assert!(script(&room, &waiting));
    }

    /// Figures read from Redis may be anything (written by hand, bad data):
    /// none makes the decision overflow; each sends the node to the script.
    #[test]
    fn figures_at_their_extremes_send_the_node_to_the_script_without_a_panic() {
        for extreme in [i64::MIN, i64::MAX] {
            for field in [1, 5, 7] {
                let mut odd = reply(-1, 20);
                odd.3[field] = Some(extreme.to_string());
                let _ = verdict(&odd, &heard());
            }
            let mut odd = reply(-1, 20);
            odd.3[2] = Some(format!("3 -1 2 6 {extreme}"));
            let _ = verdict(&odd, &heard());
            let mut kept = reply(-1, 20);
            kept.3[5] = Some(extreme.to_string());
            assert!(matches!(verdict(&kept, &heard()), Verdict::Script { .. }));
            let mut far = reply(-1, 20);
            far.1 = extreme;
            let _ = decide(
                &far,
                &heard(),
                (extreme, Duration::MAX),
                "tok",
                (LEASE, REFRESH),
            );
        }
    }

    #[test]
    fn a_want_that_fell_is_kept_only_while_no_want_is_capped() {
        let uncapped = Water::parse("1 -1 0 0 0");
        let capped = Water::parse("1 5 0 0 0");
        assert_eq!(Water::reported(uncapped, 9, 4), 9, "no node waits for it");
        assert_eq!(Water::reported(uncapped, 9, 12), 12, "a rise is reported");
        assert_eq!(Water::reported(uncapped, 9, 9), 9);
        assert_eq!(Water::reported(capped, 9, 4), 4, "the capped wait for it");
        assert_eq!(Water::reported(None, 9, 4), 4, "no level known");
        // Kept, it moves nothing: the renewal stays quiet.
        let kept = Water::reported(uncapped, 9, 4);
        assert!(!Water::moves(uncapped, 9, kept));
    }

    #[test]
    fn a_want_moves_the_share_only_within_the_levels_reach() {
        let water = Water::parse("1 5 0 0 0");
        assert!(water.is_some());
        assert!(!Water::moves(water, 9, 12), "capped either way");
        assert!(!Water::moves(water, 6, 9), "6 is at the level's reach");
        assert!(Water::moves(water, 9, 5));
        assert!(Water::moves(water, 2, 3));
        assert!(Water::moves(None, 9, 12), "no level known");
        assert!(Water::moves(Water::parse("1 -1 0 0 0"), 9, 12), "no level");
        assert!(Water::parse("1 5 0 0").is_none(), "an older water");
    }
}
