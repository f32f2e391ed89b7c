//! Renders the results page's tables and charts from the benchmarks' own
//! output: `bash benches/report.sh` runs the benches, keeps their console
//! output in `target/report/*.log`, then runs this with
//!
//! ```text
//! cargo bench --bench report -- --input target/report --page docs/benchmarks.md --img docs/img
//! ```
//!
//! It reads criterion's console lines (`<id>` then `time: [low mid high]`,
//! the middle estimate kept), the admission matrix's lines (`threads N
//! capacity C: sidejob A (B) ...`) and the examples' summaries, and:
//!
//! * replaces each block between `<!-- report:NAME -->` and
//!   `<!-- /report:NAME -->` in the page: `machine` (the input's
//!   `machine.txt`), a bench family's table (`admission/uncontended`,
//!   `object_pool`, `tower`, ...: one row per contender, one column per
//!   thread count, ns per operation per thread, with each contender's time
//!   over sidejob's at the most threads), `matrix` (goodput under
//!   overload), and `example:NAME` (the lines of `NAME.log` the example
//!   marks as its summary);
//! * writes `scaling.svg` (throughput against threads for admission, the
//!   object pool and the tower layer, per contender, log scales) and
//!   `overload.svg` (goodput under overload against capacity / threads).
//!
//! Run without `--input` (as a plain `cargo bench` does), it does nothing.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |flag: &str| {
        args.iter()
            .position(|arg| arg == flag)
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
    };
    let (Some(input), Some(page), Some(img)) = (value("--input"), value("--page"), value("--img"))
    else {
        eprintln!("report: nothing to do (usage: --input DIR --page FILE --img DIR)");
        return;
    };
    let results = Results::read(&input);
    let mut text = std::fs::read_to_string(&page).expect("the page reads");
    let blocks = names(&text);
    for name in &blocks {
        match results.block(name, &input) {
            Some(block) => text = replace(&text, name, &block),
            None => eprintln!("report: no figures for block `{name}`: left as it was"),
        }
    }
    std::fs::write(&page, text).expect("the page writes");
    let scaling = results.scaling_svg();
    std::fs::write(img.join("scaling.svg"), scaling).expect("scaling.svg writes");
    if let Some(overload) = results.overload_svg() {
        std::fs::write(img.join("overload.svg"), overload).expect("overload.svg writes");
    }
    println!(
        "report: {} figures, {} matrix cells; {} blocks in {}; charts in {}",
        results.times.len(),
        results.matrix.len(),
        blocks.len(),
        page.display(),
        img.display()
    );
}

/// Every figure read from the input.
struct Results {
    /// Criterion's middle estimates, ns, by benchmark id.
    times: BTreeMap<String, f64>,
    /// The matrix: (threads, capacity) -> contender -> admitted M/s.
    matrix: BTreeMap<(usize, usize), BTreeMap<String, f64>>,
}

impl Results {
    fn read(dir: &Path) -> Results {
        let mut times = BTreeMap::new();
        let mut matrix = BTreeMap::new();
        let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
            .expect("the input directory reads")
            .filter_map(|entry| entry.ok().map(|entry| entry.path()))
            .filter(|path| path.extension().is_some_and(|ext| ext == "log"))
            .collect();
        logs.sort();
        for log in logs {
            let text = std::fs::read_to_string(&log).expect("a log reads");
            read_criterion(&text, &mut times);
            read_matrix(&text, &mut matrix);
        }
        Results { times, matrix }
    }

    /// The block `name`'s new contents, if there are figures for it.
    fn block(&self, name: &str, input: &Path) -> Option<String> {
        if name == "machine" {
            let machine = std::fs::read_to_string(input.join("machine.txt")).ok()?;
            return Some(machine.trim_end().to_owned());
        }
        if name == "matrix" {
            return self.matrix_table();
        }
        if let Some(example) = name.strip_prefix("example:") {
            let log = std::fs::read_to_string(input.join(format!("{example}.log"))).ok()?;
            let summary: Vec<&str> = log
                .lines()
                .skip_while(|line| !line.starts_with("== summary"))
                .skip(1)
                .filter(|line| !line.trim().is_empty())
                .collect();
            if summary.is_empty() {
                return None;
            }
            // A Markdown table goes in as it is, with its notes as a list;
            // anything else as text.
            if summary.iter().any(|line| line.starts_with('|')) {
                let lines: Vec<String> = summary
                    .iter()
                    .map(|line| {
                        if line.starts_with('|') {
                            (*line).to_owned()
                        } else {
                            format!("\n{line}\n")
                        }
                    })
                    .collect();
                return Some(lines.join("\n"));
            }
            return Some(format!("```text\n{}\n```", summary.join("\n")));
        }
        self.family_table(name)
    }

    /// `family`'s figures: contender -> threads -> ns.
    fn family(&self, family: &str) -> BTreeMap<String, BTreeMap<usize, f64>> {
        let mut rows: BTreeMap<String, BTreeMap<usize, f64>> = BTreeMap::new();
        for (id, &ns) in &self.times {
            let Some((prefix, threads, contender)) = split_id(id) else {
                continue;
            };
            if prefix == family {
                rows.entry(contender).or_default().insert(threads, ns);
            }
        }
        rows
    }

    fn family_table(&self, family: &str) -> Option<String> {
        let rows = self.family(family);
        if rows.is_empty() {
            return None;
        }
        let mut columns: Vec<usize> = rows.values().flat_map(|row| row.keys().copied()).collect();
        columns.sort_unstable();
        columns.dedup();
        let widest = *columns.last()?;
        let reference = order(&rows)
            .into_iter()
            .find(|(name, _)| ours(name))
            .and_then(|(_, row)| row.get(&widest).copied());
        let mut table = String::from("| contender |");
        for threads in &columns {
            let _ = write!(table, " {} |", threads_label(family, *threads));
        }
        if widest == 0 {
            table.push_str(" vs sidejob |\n");
        } else {
            let _ = writeln!(table, " vs sidejob at {} |", threads_label(family, widest));
        }
        table.push_str("|---|");
        for _ in &columns {
            table.push_str("---:|");
        }
        table.push_str("---:|\n");
        for (contender, row) in order(&rows) {
            let _ = write!(table, "| `{contender}` |");
            for threads in &columns {
                let cell = row.get(threads).map_or("-".to_owned(), |ns| ns_text(*ns));
                let _ = write!(table, " {cell} |");
            }
            let ratio = match (row.get(&widest), reference) {
                (Some(ns), Some(reference)) => format!("{:.2}x", ns / reference),
                _ => "-".to_owned(),
            };
            let _ = writeln!(table, " {ratio} |");
        }
        Some(table.trim_end().to_owned())
    }

    fn matrix_table(&self) -> Option<String> {
        if self.matrix.is_empty() {
            return None;
        }
        let contenders = self.matrix_contenders();
        let mut table = String::from("| threads | capacity |");
        for contender in &contenders {
            let _ = write!(table, " `{contender}` M/s |");
        }
        table.push_str(" sidejob vs best other | refusal p50 ns (");
        table.push_str(&contenders.join(" / "));
        table.push_str(") |\n|---:|---:|");
        for _ in &contenders {
            table.push_str("---:|");
        }
        table.push_str("---:|---:|\n");
        for ((threads, capacity), cells) in &self.matrix {
            let _ = write!(table, "| {threads} | {capacity} |");
            for contender in &contenders {
                let cell = cells
                    .get(contender)
                    .map_or("-".to_owned(), |m| format!("{m:.2}"));
                let _ = write!(table, " {cell} |");
            }
            let ours = cells.get("sidejob").copied();
            let best = contenders
                .iter()
                .filter(|name| name.as_str() != "sidejob")
                .filter_map(|name| cells.get(name).copied())
                .fold(0.0, f64::max);
            let ratio = match ours {
                Some(ours) if best > 0.0 => format!("{:.2}", ours / best),
                _ => "-".to_owned(),
            };
            let p50s: Vec<String> = contenders
                .iter()
                .map(|name| {
                    cells
                        .get(&format!("{name} refusal p50 ns"))
                        .map_or("-".to_owned(), |ns| format!("{ns:.0}"))
                })
                .collect();
            let p50s = if p50s.iter().all(|p| p == "-") {
                "-".to_owned()
            } else {
                p50s.join(" / ")
            };
            let _ = writeln!(table, " {ratio} | {p50s} |");
        }
        Some(table.trim_end().to_owned())
    }

    fn matrix_contenders(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .matrix
            .values()
            .flat_map(|cells| cells.keys().cloned())
            .filter(|name| !name.ends_with("refusal p50 ns"))
            .collect();
        names.sort_by_key(|name| (name != "sidejob", name.clone()));
        names.dedup();
        names
    }

    /// Throughput (M operations a second, all threads together) against
    /// threads, one panel per family.
    fn scaling_svg(&self) -> String {
        let panels: Vec<Panel> = [
            ("admission/uncontended", "Resource: try_acquire + drop"),
            ("object_pool", "object pool: take + return"),
            ("tower", "tower layer: one request"),
        ]
        .iter()
        .filter_map(|&(family, title)| {
            let rows = self.family(family);
            let series: Vec<Series> = order(&rows)
                .into_iter()
                .filter(|(name, _)| {
                    !name.contains("adaptive") && !name.contains("leased") && *name != "bare"
                })
                .map(|(name, row)| Series {
                    name: name.clone(),
                    points: row
                        .iter()
                        .map(|(&threads, &ns)| (threads as f64, threads as f64 * 1e3 / ns))
                        .collect(),
                })
                .collect();
            (!series.is_empty()).then(|| Panel {
                title: title.to_owned(),
                series,
            })
        })
        .collect();
        svg(
            &panels,
            "threads",
            "million operations / s, all threads",
            "Throughput against threads (log scales): sidejob's admission stays on its own cache line",
        )
    }

    /// Goodput under overload (admitted M/s) against capacity / threads,
    /// one panel per thread count of 4 or more.
    fn overload_svg(&self) -> Option<String> {
        let mut by_threads: BTreeMap<usize, BTreeMap<String, Vec<(f64, f64)>>> = BTreeMap::new();
        for (&(threads, capacity), cells) in &self.matrix {
            let goodput = cells
                .iter()
                .filter(|(name, _)| !name.ends_with("refusal p50 ns"));
            for (contender, &admitted) in goodput {
                by_threads
                    .entry(threads)
                    .or_default()
                    .entry(contender.clone())
                    .or_default()
                    .push((capacity as f64 / threads as f64, admitted));
            }
        }
        let mut panels: Vec<Panel> = by_threads
            .into_iter()
            .filter(|(threads, _)| *threads >= 2)
            .map(|(threads, lines)| Panel {
                title: format!("{threads} threads"),
                series: {
                    let mut series: Vec<Series> = lines
                        .into_iter()
                        .map(|(name, points)| Series { name, points })
                        .collect();
                    series.sort_by_key(|s| (!ours(&s.name), s.name.clone()));
                    series
                },
            })
            .collect();
        if panels.is_empty() {
            return None;
        }
        // The three widest thread counts: where sharding shows.
        let skip = panels.len().saturating_sub(3);
        panels.drain(..skip);
        Some(svg(
            &panels,
            "capacity / threads",
            "million admitted / s",
            "Goodput under overload: admitted permits per second, each held briefly",
        ))
    }
}

/// Reads criterion's console output into `times`.
fn read_criterion(text: &str, times: &mut BTreeMap<String, f64>) {
    let mut last_id: Option<String> = None;
    for line in text.lines() {
        if line.starts_with("Benchmarking") || line.trim().is_empty() {
            continue;
        }
        let starts_with_id = !line.starts_with(char::is_whitespace);
        let first = line.split_whitespace().next().unwrap_or("");
        if starts_with_id && first.contains('/') {
            last_id = Some(first.to_owned());
        }
        if let Some(at) = line.find("time:") {
            let Some(id) = last_id.clone() else { continue };
            if let Some(ns) = middle_estimate(&line[at + 5..]) {
                // The first `time:` after an id is the estimate; a later
                // one is the change since the last run, in percent.
                times.entry(id).or_insert(ns);
                last_id = None;
            }
        }
    }
}

/// `[low unit mid unit high unit]` -> mid in ns.
fn middle_estimate(text: &str) -> Option<f64> {
    let inner = text.trim().strip_prefix('[')?.strip_suffix(']')?;
    let fields: Vec<&str> = inner.split_whitespace().collect();
    let [_, _, value, unit, _, _] = fields.as_slice() else {
        return None;
    };
    let scale = match *unit {
        "ps" => 1e-3,
        "ns" => 1.0,
        "µs" | "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    value.parse::<f64>().ok().map(|value| value * scale)
}

/// Reads the admission matrix's table into `matrix`: a header `threads
/// capacity | <contenders> | <refusal p50s> | ...`, then rows `T C | <M
/// admitted/s each> | <refusal p50 ns each, or -> | ...`. A refusal p50 is
/// kept as the contender `<name> refusal p50 ns`.
fn read_matrix(text: &str, matrix: &mut BTreeMap<(usize, usize), BTreeMap<String, f64>>) {
    let mut contenders: Vec<String> = Vec::new();
    for line in text.lines() {
        let sections: Vec<&str> = line.split('|').map(str::trim).collect();
        if sections.len() < 3 {
            continue;
        }
        if sections[0].starts_with("threads capacity") {
            contenders = sections[1].split_whitespace().map(str::to_owned).collect();
            continue;
        }
        let head: Vec<usize> = sections[0]
            .split_whitespace()
            .filter_map(|field| field.parse().ok())
            .collect();
        let [threads, capacity] = head.as_slice() else {
            continue;
        };
        let mut entry = BTreeMap::new();
        let goodput = sections[1].split_whitespace();
        for (name, value) in contenders.iter().zip(goodput) {
            if let Ok(value) = value.parse::<f64>() {
                entry.insert(name.clone(), value);
            }
        }
        let p50s = sections[2].split_whitespace();
        for (name, value) in contenders.iter().zip(p50s) {
            if let Ok(value) = value.parse::<f64>() {
                entry.insert(format!("{name} refusal p50 ns"), value);
            }
        }
        if !entry.is_empty() {
            matrix.insert((*threads, *capacity), entry);
        }
    }
}

/// `prefix/<N>-thread(s)|worker(s)/contender` -> (prefix, N, contender);
/// `prefix/contender`, with no thread count, -> (prefix, 0, contender).
fn split_id(id: &str) -> Option<(String, usize, String)> {
    let parts: Vec<&str> = id.split('/').collect();
    let Some(at) = parts.iter().position(|part| threads_of(part).is_some()) else {
        let (contender, prefix) = parts.split_last()?;
        return (!prefix.is_empty()).then(|| (prefix.join("/"), 0, (*contender).to_owned()));
    };
    if at + 2 != parts.len() {
        return None;
    }
    Some((
        parts[..at].join("/"),
        threads_of(parts[at])?,
        parts[at + 1].to_owned(),
    ))
}

fn threads_of(part: &str) -> Option<usize> {
    if part == "current-thread" {
        return Some(1);
    }
    let (count, unit) = part.split_once('-')?;
    matches!(unit, "thread" | "threads" | "worker" | "workers")
        .then(|| count.parse().ok())
        .flatten()
}

fn threads_label(family: &str, threads: usize) -> String {
    if threads == 0 {
        return "ns".to_owned();
    }
    let unit = if family.starts_with("task_supervisor") || family.starts_with("async_object_pool") {
        "workers"
    } else {
        "threads"
    };
    if threads == 1 {
        format!("1 {}", unit.trim_end_matches('s'))
    } else {
        format!("{threads} {unit}")
    }
}

/// Whether contender `name` is sidejob's: `sidejob...`, or its tower
/// layers `shed`, `http-shed` and `grpc-shed`.
fn ours(name: &str) -> bool {
    name.starts_with("sidejob") || name == "shed" || name == "http-shed" || name == "grpc-shed"
}

/// sidejob's contenders first (`sidejob` and `shed` before their
/// variants), then the others by name.
fn order(rows: &BTreeMap<String, BTreeMap<usize, f64>>) -> Vec<(&String, &BTreeMap<usize, f64>)> {
    let mut rows: Vec<_> = rows.iter().collect();
    rows.sort_by_key(|(name, _)| {
        let plain = *name == "sidejob" || *name == "shed";
        (!ours(name), !plain, *name)
    });
    rows
}

fn ns_text(ns: f64) -> String {
    if ns >= 10_000.0 {
        format!("{:.1} µs", ns / 1e3)
    } else if ns >= 100.0 {
        format!("{ns:.0}")
    } else {
        format!("{ns:.1}")
    }
}

/// The names of the page's blocks.
fn names(text: &str) -> Vec<String> {
    text.match_indices("<!-- report:")
        .filter_map(|(at, _)| {
            let rest = &text[at + "<!-- report:".len()..];
            rest.find(" -->").map(|end| rest[..end].to_owned())
        })
        .collect()
}

/// `text` with block `name`'s contents replaced by `block`.
fn replace(text: &str, name: &str, block: &str) -> String {
    let open = format!("<!-- report:{name} -->");
    let close = format!("<!-- /report:{name} -->");
    let (Some(start), Some(end)) = (text.find(&open), text.find(&close)) else {
        eprintln!("report: block `{name}` has no end marker");
        return text.to_owned();
    };
    format!("{}{open}\n{block}\n{}", &text[..start], &text[end..])
}

struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

struct Panel {
    title: String,
    series: Vec<Series>,
}

const COLOURS: [&str; 8] = [
    "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#7f7f7f",
];

/// Side-by-side panels with log-scaled axes and a legend each.
fn svg(panels: &[Panel], x_label: &str, y_label: &str, title: &str) -> String {
    const W: f64 = 330.0;
    const H: f64 = 250.0;
    const LEFT: f64 = 58.0;
    const TOP: f64 = 48.0;
    let width = LEFT + panels.len() as f64 * (W + 20.0);
    let most_series = panels.iter().map(|p| p.series.len()).max().unwrap_or(0);
    let height = TOP + H + 56.0 + most_series as f64 * 13.0;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" font-family="sans-serif" font-size="11">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="{LEFT}" y="18" font-size="13" font-weight="bold">{}</text>"#,
        escape(title)
    );
    let all = || {
        panels
            .iter()
            .flat_map(|p| p.series.iter().flat_map(|s| s.points.iter()))
    };
    // x: exactly the values' range (powers of two: threads, capacity over
    // threads); y: whole decades.
    let x_min = all().map(|p| p.0).fold(f64::MAX, f64::min);
    let x_max = all().map(|p| p.0).fold(f64::MIN, f64::max);
    let (x_lo, x_hi) = if x_min < x_max {
        (x_min.log10(), x_max.log10())
    } else {
        (0.0, 1.0)
    };
    let (y_lo, y_hi) = decades(all().map(|p| p.1));
    for (k, panel) in panels.iter().enumerate() {
        let x0 = LEFT + k as f64 * (W + 20.0);
        let px = |x: f64| x0 + (x.log10() - x_lo) / (x_hi - x_lo) * W;
        let py = |y: f64| TOP + H - (y.log10() - y_lo) / (y_hi - y_lo) * H;
        let _ = writeln!(
            out,
            r##"<rect x="{x0}" y="{TOP}" width="{W}" height="{H}" fill="none" stroke="#999"/>"##
        );
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" font-weight="bold">{}</text>"#,
            x0 + 4.0,
            TOP - 6.0,
            escape(&panel.title)
        );
        // Grid: each power of two on x, each power of ten on y.
        let mut x = 2f64.powf(x_min.max(1e-9).log2().floor());
        while x.log10() <= x_hi + 1e-9 {
            let gx = px(x);
            let _ = writeln!(
                out,
                r##"<line x1="{gx:.1}" y1="{TOP}" x2="{gx:.1}" y2="{}" stroke="#eee"/><text x="{gx:.1}" y="{}" text-anchor="middle">{}</text>"##,
                TOP + H,
                TOP + H + 14.0,
                short(x)
            );
            x *= 2.0;
        }
        let mut y = 10f64.powf(y_lo);
        while y.log10() <= y_hi + 1e-9 {
            let gy = py(y);
            let _ = writeln!(
                out,
                r##"<line x1="{x0}" y1="{gy:.1}" x2="{}" y2="{gy:.1}" stroke="#eee"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
                x0 + W,
                x0 - 4.0,
                gy + 4.0,
                short(y)
            );
            y *= 10.0;
        }
        let _ = writeln!(
            out,
            r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
            x0 + W / 2.0,
            TOP + H + 30.0,
            escape(x_label)
        );
        for (i, series) in panel.series.iter().enumerate() {
            let colour = COLOURS[i % COLOURS.len()];
            let mut points = series.points.clone();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let path: Vec<String> = points
                .iter()
                .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
                .collect();
            let stroke = if ours(&series.name) { 3.0 } else { 1.5 };
            let _ = writeln!(
                out,
                r#"<polyline points="{}" fill="none" stroke="{colour}" stroke-width="{stroke}"/>"#,
                path.join(" ")
            );
            for &(x, y) in &points {
                let _ = writeln!(
                    out,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="2.5" fill="{colour}"/>"#,
                    px(x),
                    py(y)
                );
            }
            let ly = TOP + H + 46.0 + i as f64 * 13.0;
            let _ = writeln!(
                out,
                r#"<line x1="{x0}" y1="{ly}" x2="{}" y2="{ly}" stroke="{colour}" stroke-width="{stroke}"/><text x="{}" y="{}">{}</text>"#,
                x0 + 18.0,
                x0 + 24.0,
                ly + 4.0,
                escape(&series.name)
            );
        }
    }
    let _ = writeln!(
        out,
        r#"<text transform="translate(14,{}) rotate(-90)" text-anchor="middle">{}</text>"#,
        TOP + H / 2.0,
        escape(y_label)
    );
    out.push_str("</svg>\n");
    out
}

/// The log10 range covering `values`, widened to whole decades.
fn decades(values: impl Iterator<Item = f64>) -> (f64, f64) {
    let (lo, hi) = values
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if lo > hi {
        return (0.0, 1.0);
    }
    let (lo, hi) = (lo.log10().floor(), hi.log10().ceil());
    (lo, if hi > lo { hi } else { lo + 1.0 })
}

fn short(value: f64) -> String {
    if value >= 1.0 {
        format!("{value:.0}")
    } else {
        format!("{}", (value * 1000.0).round() / 1000.0)
    }
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
