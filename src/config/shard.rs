//! Which share of a run's one global schedule this process sends (`--shard I/N`), and the
//! `--start-at` time value. Pure values: the sharded run itself is `drive::shard`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::error::{ShardWhy, ValueError};

/// The most shards a run may be split into: far more client machines than any run needs, and
/// small enough that listing the missing ones stays short work.
pub const MAX_SHARDS: u64 = 65_536;

/// Shard `index` of `count` (0-based): it sends the requests whose id ≡ index (mod count).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shard {
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// True when request `id` of the global schedule is this shard's.
    pub fn owns(self, id: u64) -> bool {
        id % self.count == self.index
    }

    /// This shard's share of a concurrency cap: floor(cap / N), plus one for the first
    /// cap mod N shards, so the shares add up to `cap`.
    pub fn concurrency_share(self, cap: u64) -> u64 {
        cap / self.count + u64::from(self.index < cap % self.count)
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl FromStr for Shard {
    type Err = ValueError;
    fn from_str(s: &str) -> Result<Self, ValueError> {
        let bad = |why| ValueError::Shard {
            shard: s.to_string(),
            why,
        };
        let (i, n) = s.split_once('/').ok_or_else(|| bad(ShardWhy::Shape))?;
        let parse = |x: &str| x.trim().parse::<u64>().ok();
        let (Some(index), Some(count)) = (parse(i), parse(n)) else {
            return Err(bad(ShardWhy::NotNumbers));
        };
        if count == 0 {
            return Err(bad(ShardWhy::NoCount));
        }
        if count > MAX_SHARDS {
            return Err(bad(ShardWhy::TooMany(MAX_SHARDS)));
        }
        if index >= count {
            return Err(bad(ShardWhy::IndexPastCount));
        }
        Ok(Shard { index, count })
    }
}

/// Shards `indices` of `count`, as `1/4, 2/4` (the first 20, then how many more).
pub fn list(indices: &[u64], count: u64) -> String {
    const SHOWN: usize = 20;
    let shards: Vec<String> = indices
        .iter()
        .take(SHOWN)
        .map(|i| format!("{i}/{count}"))
        .collect();
    match indices.len().saturating_sub(SHOWN) {
        0 => shards.join(", "),
        more => format!("{} and {more} more", shards.join(", ")),
    }
}

/// Parses `--start-at`: an RFC 3339 time, e.g. `2026-05-01T12:00:00Z`.
pub fn parse_start_at(s: &str) -> Result<OffsetDateTime, ValueError> {
    OffsetDateTime::parse(s, &Rfc3339).map_err(|e| ValueError::StartAt {
        text: s.to_string(),
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_parse_and_bad_ones_say_why() {
        assert_eq!(
            "3/4".parse::<Shard>().unwrap(),
            Shard { index: 3, count: 4 }
        );
        for (bad, why) in [
            ("5/4", "below COUNT"),
            ("4/4", "below COUNT"),
            ("0/0", "at least 1"),
            ("x/2", "whole numbers"),
            ("-1/2", "whole numbers"),
            ("3", "INDEX/COUNT"),
        ] {
            let e = bad.parse::<Shard>().unwrap_err().to_string();
            assert!(e.contains(why) && e.contains(bad), "{bad}: {e}");
        }
    }

    #[test]
    fn every_request_has_exactly_one_shard() {
        for n in 1..7u64 {
            for id in 0..50 {
                let owners = (0..n)
                    .filter(|&i| Shard { index: i, count: n }.owns(id))
                    .count();
                assert_eq!(owners, 1, "id {id} of {n} shards");
            }
        }
    }

    #[test]
    fn concurrency_shares_add_up_to_the_cap() {
        for n in 1..9u64 {
            for cap in n..40 {
                let shares: Vec<u64> = (0..n)
                    .map(|i| Shard { index: i, count: n }.concurrency_share(cap))
                    .collect();
                assert_eq!(shares.iter().sum::<u64>(), cap, "{shares:?}");
                assert!(shares.iter().max().unwrap() - shares.iter().min().unwrap() <= 1);
                assert!(shares.iter().all(|&s| s >= 1));
            }
        }
        let s = |i| Shard { index: i, count: 4 }.concurrency_share(10);
        assert_eq!([s(0), s(1), s(2), s(3)], [3, 3, 2, 2]);
    }

    #[test]
    fn start_times_parse_as_rfc3339_only() {
        let t = parse_start_at("2026-05-01T12:00:00.250Z").unwrap();
        assert_eq!(t.unix_timestamp_nanos() % 1_000_000_000, 250_000_000);
        assert!(parse_start_at("2026-05-01T12:00:00+02:00").is_ok());
        let e = parse_start_at("tomorrow").unwrap_err().to_string();
        assert!(e.contains("tomorrow") && e.contains("RFC 3339"), "{e}");
    }
}
