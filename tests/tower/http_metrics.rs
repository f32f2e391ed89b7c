//! `/metrics` of `examples/http_server` (#20): the example runs (cargo
//! builds it), loads itself over capacity, and this test scrapes its
//! `/metrics` over HTTP on 127.0.0.1 and parses the Prometheus text: the
//! sidejob resource guarding the handlers, named `http`, shows its
//! capacity, admissions, refusals and, once the sampler has ticked, its
//! rates.
#![cfg(all(feature = "http", feature = "prometheus"))]

use crate::support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use support::examples::example;

/// `GET /metrics` over HTTP/1.1: the status line and the body.
fn scrape(address: SocketAddr) -> (String, String) {
    let mut stream = TcpStream::connect(address).expect("the server accepts");
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("a response");
    let (head, body) = response
        .split_once("\r\n\r\n")
        .expect("headers, then a body");
    let status = head.lines().next().unwrap_or_default().to_owned();
    (status, body.to_owned())
}

/// Sample lines of the text format: `name{labels}` to value.
fn samples(text: &str) -> HashMap<String, f64> {
    text.lines()
        .filter(|line| !line.starts_with('#') && !line.is_empty())
        .map(|line| {
            let (series, value) = line.rsplit_once(' ').expect("name{labels} value");
            (
                series.to_owned(),
                value.parse().unwrap_or_else(|_| panic!("a number: {line}")),
            )
        })
        .collect()
}

#[test]
fn the_example_serves_its_resource_in_prometheus_text() {
    let mut server = Command::new(example("http_server"))
        .args(["--addr", "127.0.0.1:0", "--capacity", "2", "--work-ms", "2"])
        .args(["--self-load", "16", "--duration", "8"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the example starts");
    let mut stderr = BufReader::new(server.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let address: SocketAddr = line
        .split("http://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|address| address.parse().ok())
        .unwrap_or_else(|| panic!("no address in {line:?}"));

    let deadline = Instant::now() + Duration::from_secs(7);
    let rates_seen = loop {
        let (status, body) = scrape(address);
        assert!(status.contains("200"), "{status}");
        assert!(
            body.contains("# TYPE sidejob_resource_accepted counter"),
            "{body}"
        );
        let samples = samples(&body);
        let figure = |name: &str| samples.get(&format!("{name}{{name=\"http\"}}")).copied();
        assert_eq!(figure("sidejob_resource_capacity"), Some(2.0), "{body}");
        assert!(figure("sidejob_resource_usage").unwrap() <= 2.0, "{body}");
        let accepted = figure("sidejob_resource_accepted_total").unwrap();
        let rejected = samples
            .get(r#"sidejob_resource_rejected_total{name="http",priority="normal"}"#)
            .copied()
            .unwrap();
        let in_rate = figure("sidejob_resource_in_rate").unwrap();
        if accepted > 0.0 && rejected > 0.0 && in_rate > 0.0 {
            break true;
        }
        if Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        rates_seen,
        "admissions, refusals and an in rate never showed"
    );
}
