//! Two processes under one name (#37, defect 5): both would renew one
//! ledger entry and hold twice its grant. Each `Fleet` holds a random
//! token; a join under a name whose live lease another token holds is
//! refused naming `node`, and the name is free again once its holder left.

use std::sync::Arc;

use sidejob::Resource;

use crate::support::redis_server::{join, RedisServer, LEASE, REFRESH};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_under_a_live_name_is_refused() {
    let server = RedisServer::start();
    let (first, second) = (Arc::new(Resource::new(10)), Arc::new(Resource::new(10)));
    let web = join(&server, "names", 10, "web", &first).await;
    let err = sidejob::fleet::Fleet::builder(&server.url(), "names")
        .capacity(10)
        .lease(LEASE)
        .refresh(REFRESH)
        .node("web")
        .join(&second)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("node"), "{err}");
    assert!(err.to_string().contains("`web`"), "{err}");
    assert_eq!(
        second.capacity(),
        0,
        "a refused join leaves its resource shut"
    );
    assert_eq!(first.capacity(), web.grant());
    assert_eq!(server.grants("names").len(), 1);

    // Once the first leaves, the name is free.
    web.leave().await;
    let again = join(&server, "names", 10, "web", &second).await;
    again.leave().await;
}
