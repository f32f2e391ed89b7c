//! A line chart over time as SVG, for the examples that draw one
//! (`examples/adaptive.rs`, `examples/client_limit.rs`): a title, a grid at
//! the given values, a label every second, lines and a legend.

use std::fmt::Write as _;

/// A chart being drawn: 720 × 360, a margin of 40, `seconds` across and
/// values from 0 to `top` up.
pub struct LineChart {
    out: String,
    seconds: f64,
    top: f64,
}

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 360.0;
const MARGIN: f64 = 40.0;

impl LineChart {
    /// A chart titled `title`, its grid at `ticks`, a label every second.
    pub fn new(title: &str, seconds: f64, top: f64, ticks: &[u32]) -> LineChart {
        let mut chart = LineChart {
            out: String::new(),
            seconds,
            top,
        };
        let _ = write!(
            chart.out,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" font-family="sans-serif" font-size="12">"#
        );
        let _ = write!(
            chart.out,
            r#"<rect width="100%" height="100%" fill="white"/>"#
        );
        let _ = write!(chart.out, r#"<text x="{MARGIN}" y="20">{title}</text>"#);
        for &tick in ticks {
            let ty = chart.y(f64::from(tick));
            let _ = write!(
                chart.out,
                r##"<line x1="{MARGIN}" x2="{}" y1="{ty}" y2="{ty}" stroke="#ddd"/><text x="8" y="{}">{tick}</text>"##,
                WIDTH - MARGIN,
                ty + 4.0
            );
        }
        for second in 0..=seconds as u64 {
            let tx = chart.x(second as f64);
            let _ = write!(
                chart.out,
                r#"<text x="{}" y="{}">{second}s</text>"#,
                tx - 6.0,
                HEIGHT - MARGIN + 16.0
            );
        }
        chart
    }

    /// Where second `t` is across.
    pub fn x(&self, t: f64) -> f64 {
        MARGIN + t / self.seconds * (WIDTH - 2.0 * MARGIN)
    }

    /// Where `value` is up.
    pub fn y(&self, value: f64) -> f64 {
        HEIGHT - MARGIN - value / self.top * (HEIGHT - 2.0 * MARGIN)
    }

    /// Draws `element` (SVG) as it is.
    pub fn draw(&mut self, element: &str) {
        self.out.push_str(element);
    }

    /// A line through `points` (seconds, value), values past the top at
    /// the top.
    pub fn line(&mut self, colour: &str, points: impl IntoIterator<Item = (f64, f64)>) {
        let points: Vec<String> = points
            .into_iter()
            .map(|(t, value)| format!("{:.1},{:.1}", self.x(t), self.y(value.min(self.top))))
            .collect();
        let _ = write!(
            self.out,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
            points.join(" ")
        );
    }

    /// A legend of (label, colour), one a row from (`x`, `y`) down, `x` a
    /// share of the width.
    pub fn legend<'a>(
        &mut self,
        x: f64,
        y: f64,
        entries: impl IntoIterator<Item = (&'a str, &'a str)>,
    ) {
        let (x, mut y) = (WIDTH * x, y);
        for (label, colour) in entries {
            let _ = write!(
                self.out,
                r#"<line x1="{}" x2="{}" y1="{y}" y2="{y}" stroke="{colour}" stroke-width="2"/><text x="{}" y="{}">{label}</text>"#,
                x,
                x + 20.0,
                x + 25.0,
                y + 4.0
            );
            y += 16.0;
        }
    }

    /// The SVG.
    pub fn finish(mut self) -> String {
        self.out.push_str("</svg>\n");
        self.out
    }
}
