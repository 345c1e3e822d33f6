//! Tests of `lanes.rs`: how lanes split a schedule, its cap and its pool.

use super::*;

#[test]
fn lanes_split_a_shard_as_finer_shards() {
    // Every request of the schedule has exactly one lane in exactly one process.
    for (n, t) in [(1u64, 1u64), (1, 3), (2, 2), (3, 4)] {
        for id in 0..100u64 {
            let owners: usize = (0..n)
                .map(|i| {
                    lane_shards(Some(Shard { index: i, count: n }), t)
                        .iter()
                        .filter(|s| s.owns(id))
                        .count()
                })
                .sum();
            assert_eq!(owners, 1, "id {id}, {n} shards of {t} lanes");
        }
    }
    // A lane's part of the cap: the lanes' parts add up to the process's share.
    let mut load = LoadSpec {
        max_concurrency: Some(10),
        ..LoadSpec::default()
    };
    for (n, t) in [(1u64, 3u64), (3, 2), (4, 2)] {
        for i in 0..n {
            load.shard = Some(Shard { index: i, count: n });
            let process = load.concurrency_cap().unwrap();
            let lanes = lanes_for(t, &load);
            let parts: Vec<u64> = lane_shards(load.shard, lanes)
                .into_iter()
                .map(|s| {
                    let mut l = load.clone();
                    l.shard = Some(s);
                    l.concurrency_cap().unwrap()
                })
                .collect();
            assert_eq!(parts.iter().sum::<u64>(), process, "{parts:?}");
            assert!(parts.iter().all(|&p| p >= 1), "a lane without a slot");
        }
    }
    // Never more lanes than slots.
    load.shard = None;
    load.max_concurrency = Some(2);
    assert_eq!(lanes_for(8, &load), 2);
}

#[test]
fn each_lane_holds_its_conversations_and_placeholders() {
    let pool: Vec<RequestSpec> = (0..6)
        .map(|i| RequestSpec {
            id: i,
            prompt: format!("prompt {i}"),
            ..RequestSpec::default()
        })
        .collect();
    let shards = lane_shards(None, 2);
    let lanes = split_pool(pool, &shards, 2, false);
    // Three conversations of two turns: lane 0 sends 0 and 2, lane 1 sends 1.
    let text =
        |l: &Vec<RequestSpec>| -> Vec<String> { l.iter().map(|r| r.prompt.clone()).collect() };
    let e = String::new;
    assert_eq!(
        text(&lanes[0]),
        ["prompt 0", "prompt 1", "", "", "prompt 4", "prompt 5"]
    );
    assert_eq!(
        text(&lanes[1]),
        [e(), e(), "prompt 2".into(), "prompt 3".into(), e(), e()]
    );
    assert!(lanes.iter().all(|l| l.len() == 6));
}
