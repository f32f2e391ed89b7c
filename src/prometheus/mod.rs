//! Feature `prometheus`: [`Collector`] hands the figures of the faces
//! registered with it to a
//! [`prometheus-client`](https://docs.rs/prometheus-client) (0.25)
//! `Registry`, read at scrape time: no thread, nothing between scrapes.

mod collector;

pub use collector::Collector;
