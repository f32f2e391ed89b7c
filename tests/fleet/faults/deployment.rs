//! What a deployment needs, as `docs/operations.md` lists it (#37): a
//! node whose ACL user has only the documented commands on the budget's
//! keys joins, renews and leaves; without the feature `redis-tls`, a
//! `rediss://` URL is refused naming `redis_url`.

use std::sync::Arc;

use sidejob::fleet::Fleet;
use sidejob::Resource;

use crate::support::redis_server::{RedisServer, LEASE, REFRESH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_with_the_documented_acl_joins_renews_and_leaves() {
    let server = RedisServer::start();
    // The user of `docs/operations.md`, word for word.
    let acl = "ACL SETUSER fleet on >secret ~{sidejob:fleet:* +evalsha +script|load +time \
               +type +exists +unlink +del +pexpire +pexpiretime +set +hget +hmget +hset +hsetnx \
               +hdel +hgetall +hlen +hexists +hincrby +zadd +zrem +zscore +zcard +zcount +zrank \
               +zrange +zrangebyscore";
    let words: Vec<&str> = acl.split_whitespace().collect();
    server.run(&words);
    let documented = include_str!("../../../docs/operations.md")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    assert!(
        documented.contains(
            acl.split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .as_str()
        ),
        "the docs' ACL line differs"
    );
    let url = format!("redis://fleet:secret@127.0.0.1:{}/", server.port);
    // Redis forgets its scripts: the first call loads it again.
    server.run(&["SCRIPT", "FLUSH"]);
    let resource = Arc::new(Resource::new(4));
    let fleet = Fleet::builder(&url, "acl")
        .capacity(4)
        .lease(LEASE)
        .refresh(REFRESH)
        .join(&resource)
        .await
        .expect("joins with the documented ACL");
    tokio::time::sleep(REFRESH * 3).await;
    let stats = fleet.stats();
    assert!(
        stats.renewals >= 3 && stats.failed_renewals == 0,
        "{stats:?}"
    );
    fleet.leave().await;
    assert!(server.grants("acl").is_empty());
}

/// Without the feature `redis-tls` (`.ci/run` runs this test so; with it,
/// `tests/fleet/tls.rs` joins over TLS).
#[cfg(not(feature = "redis-tls"))]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tls_url_is_refused_naming_the_url() {
    use std::time::Duration;
    let resource = Arc::new(Resource::new(4));
    let err = Fleet::builder("rediss://127.0.0.1:6380/", "tls")
        .capacity(4)
        .lease(Duration::from_secs(3))
        .refresh(Duration::from_millis(500))
        .join(&resource)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("redis_url"), "{err}");
    assert!(err.to_string().contains("TLS"), "{err}");
}
