//! The proptest configuration the model-based tests share.

use proptest::test_runner::Config;

/// 64 cases unless `PROPTEST_CASES` says otherwise; failures print their
/// minimal case and no regression file is written into the source tree.
pub fn config() -> Config {
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 64;
    }
    config
}
