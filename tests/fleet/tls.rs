//! A fleet's Redis over TLS (#41, feature `redis-tls`): a real
//! `redis-server` listening with a certificate a private authority signed
//! (made here with the `openssl` command); a node given that authority
//! with `FleetBuilder::tls_root_certificate` joins over `rediss://`,
//! renews and leaves; one given another authority, or none (the system's
//! roots), or facing a certificate for another address or out of date, is
//! refused at its join with the TLS error.
#![cfg(feature = "redis-tls")]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use sidejob::fleet::{Fleet, FleetError};
use sidejob::Resource;

use crate::support;
use support::redis_server::{free_port, Options, RedisServer, REFRESH};

fn openssl(dir: &Path, args: &[&str]) {
    let status = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("openssl runs (this test makes its certificates with it)");
    assert!(status.success(), "openssl {args:?}");
}

/// A certificate authority `name` (`<name>.pem`, `<name>.key`) in `dir`.
fn authority(dir: &Path, name: &str) -> PathBuf {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-keyout",
            &format!("{name}.key"),
            "-out",
            &format!("{name}.pem"),
            "-subj",
            &format!("/CN={name}"),
        ],
    );
    dir.join(format!("{name}.pem"))
}

/// A certificate for `san` (a subjectAltName), good for `days`, signed by
/// authority `ca`: `redis.pem`, `redis.key`.
fn server_certificate(dir: &Path, ca: &str, (san, days): (&str, &str)) {
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "redis.key",
            "-out",
            "redis.csr",
            "-subj",
            "/CN=127.0.0.1",
        ],
    );
    std::fs::write(dir.join("san.cnf"), format!("subjectAltName={san}\n")).unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "redis.csr",
            "-CA",
            &format!("{ca}.pem"),
            "-CAkey",
            &format!("{ca}.key"),
            "-CAcreateserial",
            "-out",
            "redis.pem",
            "-days",
            days,
            "-extfile",
            "san.cnf",
        ],
    );
}

/// A server with TLS on a port of its own (and plain on another, for the
/// test to read the ledger), its certificate for 127.0.0.1 signed by `ca`.
fn tls_server(dir: &Path, ca: &str) -> (RedisServer, u16) {
    tls_server_with(dir, ca, ("IP:127.0.0.1", "2"))
}

/// As [`tls_server`], its certificate for `san`, good for `days`.
fn tls_server_with(dir: &Path, ca: &str, certificate: (&str, &str)) -> (RedisServer, u16) {
    server_certificate(dir, ca, certificate);
    let tls_port = free_port();
    let path = |file: &str| dir.join(file).display().to_string();
    let server = RedisServer::start_with(
        free_port(),
        Options {
            args: vec![
                "--tls-port".into(),
                tls_port.to_string(),
                "--tls-cert-file".into(),
                path("redis.pem"),
                "--tls-key-file".into(),
                path("redis.key"),
                "--tls-ca-cert-file".into(),
                path(&format!("{ca}.pem")),
                "--tls-auth-clients".into(),
                "no".into(),
            ],
            ..Options::default()
        },
    );
    (server, tls_port)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sidejob-tls-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The lease the TLS nodes hold: longer than the other tests' (1.5 s), as a
/// join must finish its TLS handshake and first renewal within it, and on a
/// loaded 2-core machine OpenSSL's handshake alone took most of that (a
/// join failed `NoGrant` once with every test binary running at once).
const TLS_LEASE: Duration = Duration::from_secs(6);

fn builder(tls_port: u16, budget: &str) -> sidejob::fleet::FleetBuilder {
    Fleet::builder(&format!("rediss://127.0.0.1:{tls_port}/"), budget)
        .capacity(4)
        .lease(TLS_LEASE)
        .refresh(REFRESH)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_trusting_the_authority_joins_renews_and_leaves_over_tls() {
    let dir = scratch("trusted");
    let ca = authority(&dir, "ca");
    let (server, tls_port) = tls_server(&dir, "ca");
    let resource = Arc::new(Resource::new(4));
    let fleet = builder(tls_port, "tls")
        .tls_root_certificate(std::fs::read(&ca).unwrap())
        .join(&resource)
        .await
        .expect("joins over TLS");
    tokio::time::sleep(REFRESH * 3).await;
    let stats = fleet.stats();
    assert!(
        stats.renewals >= 3 && stats.failed_renewals == 0,
        "{stats:?}"
    );
    assert_eq!(server.grants("tls").len(), 1, "the ledger has the node");
    fleet.leave().await;
    assert!(server.grants("tls").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_trusting_another_authority_or_none_is_refused() {
    let dir = scratch("untrusted");
    authority(&dir, "ca");
    let other = authority(&dir, "other");
    let (server, tls_port) = tls_server(&dir, "ca");
    for root in [Some(std::fs::read(&other).unwrap()), None] {
        let resource = Arc::new(Resource::new(4));
        let mut joining = builder(tls_port, "refused");
        if let Some(root) = root.clone() {
            joining = joining.tls_root_certificate(root);
        }
        let err = joining.join(&resource).await.unwrap_err();
        assert!(
            matches!(err, FleetError::Redis(_)),
            "{err} (root given: {})",
            root.is_some()
        );
        assert_eq!(resource.capacity(), 0, "left at its floor");
    }
    assert!(server.grants("refused").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_certificate_for_another_address_or_out_of_date_is_refused() {
    // Found holding by the adversarial review: another name, another
    // address, and a certificate that expired (`-days -1`).
    for (i, certificate) in [
        ("DNS:other.example", "2"),
        ("IP:127.0.0.2", "2"),
        ("IP:127.0.0.1", "-1"),
    ]
    .into_iter()
    .enumerate()
    {
        let dir = scratch(&format!("wrong-{i}"));
        let ca = authority(&dir, "ca");
        let (server, tls_port) = tls_server_with(&dir, "ca", certificate);
        let resource = Arc::new(Resource::new(4));
        let err = builder(tls_port, "wrong")
            .tls_root_certificate(std::fs::read(&ca).unwrap())
            .join(&resource)
            .await
            .unwrap_err();
        assert!(
            matches!(err, FleetError::Redis(_)),
            "{certificate:?}: {err}"
        );
        assert!(server.grants("wrong").is_empty());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_certificate_that_is_no_pem_is_refused_naming_it() {
    let dir = scratch("not-pem");
    authority(&dir, "ca");
    let (server, tls_port) = tls_server(&dir, "ca");
    let resource = Arc::new(Resource::new(4));
    let err = builder(tls_port, "not-pem")
        .tls_root_certificate(b"not a certificate".to_vec())
        .join(&resource)
        .await
        .unwrap_err();
    assert_eq!(err.setting(), Some("tls_root_certificate"), "{err}");
    assert_eq!(resource.capacity(), 0, "left at its floor");
    assert!(server.grants("not-pem").is_empty());
}

#[test]
fn a_builder_shows_neither_the_password_nor_the_certificate() {
    let shown = format!(
        "{:?}",
        Fleet::builder("rediss://fleet:s3cret@127.0.0.1:6380/0", "shown")
            .tls_root_certificate(b"-----BEGIN CERTIFICATE-----".to_vec())
    );
    assert!(!shown.contains("s3cret"), "{shown}");
    assert!(
        shown.contains("rediss://fleet:***@127.0.0.1:6380/0"),
        "{shown}"
    );
    assert!(!shown.contains("BEGIN"), "{shown}");
    assert!(shown.contains("27 bytes"), "{shown}");
    let password_only = format!("{:?}", Fleet::builder("redis://:pw@host/", "shown"));
    assert!(
        password_only.contains("redis://:***@host/"),
        "{password_only}"
    );
}
