//! Drawing a bar or line chart into an RGB canvas and encoding it as PNG.
//!
//! Pure Rust and deliberately small: axis-aligned rectangles, lines drawn
//! with Bresenham's algorithm, and text in an 8×8 bitmap font, which is all
//! a readable chart needs. No system library, no font file.

use font8x8::{BASIC_FONTS, UnicodeFonts};

/// What to draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Bar,
    Line,
}

/// One named series of values, one per label.
#[derive(Debug, Clone)]
pub struct Series {
    pub name: String,
    pub values: Vec<f64>,
}

/// A chart, checked: see [`Chart::check`].
#[derive(Debug, Clone)]
pub struct Chart {
    pub kind: Kind,
    pub title: String,
    pub labels: Vec<String>,
    pub series: Vec<Series>,
    pub width: u32,
    pub height: u32,
}

/// Bounds that keep one call's work and output small.
pub const MAX_SIDE: u32 = 2048;
pub const MIN_SIDE: u32 = 64;
pub const MAX_POINTS: usize = 1000;
pub const MAX_SERIES: usize = 8;

/// Colours of the series, in order: distinct on white and for the common
/// kinds of colour blindness (Okabe–Ito).
pub const PALETTE: [[u8; 3]; MAX_SERIES] = [
    [0, 114, 178],
    [230, 159, 0],
    [0, 158, 115],
    [204, 121, 167],
    [86, 180, 233],
    [213, 94, 0],
    [240, 228, 66],
    [0, 0, 0],
];
const WHITE: [u8; 3] = [255, 255, 255];
const AXIS: [u8; 3] = [60, 60, 60];
const GRID: [u8; 3] = [225, 225, 225];
const TEXT: [u8; 3] = [20, 20, 20];
const GLYPH: u32 = 8;

impl Chart {
    /// Checks the chart against the bounds; the message says what to fix.
    pub fn check(&self) -> Result<(), String> {
        for (side, value) in [("width", self.width), ("height", self.height)] {
            if !(MIN_SIDE..=MAX_SIDE).contains(&value) {
                return Err(format!(
                    "`{side}` is {value}; use {MIN_SIDE} to {MAX_SIDE} pixels"
                ));
            }
        }
        if self.series.is_empty() || self.series.len() > MAX_SERIES {
            return Err(format!(
                "give 1 to {MAX_SERIES} series (got {})",
                self.series.len()
            ));
        }
        let points = self.labels.len();
        if points == 0 || points > MAX_POINTS {
            return Err(format!("give 1 to {MAX_POINTS} labels (got {points})"));
        }
        for series in &self.series {
            if series.values.len() != points {
                return Err(format!(
                    "series `{}` has {} values for {points} labels; give one value per label",
                    series.name,
                    series.values.len()
                ));
            }
            if let Some(bad) = series.values.iter().find(|v| !v.is_finite()) {
                return Err(format!(
                    "series `{}` has the value {bad}; values must be finite numbers",
                    series.name
                ));
            }
        }
        Ok(())
    }

    /// Draws the chart and encodes it as a PNG.
    pub fn to_png(&self) -> Result<Vec<u8>, String> {
        self.check()?;
        let canvas = self.draw();
        canvas.encode()
    }

    fn draw(&self) -> Canvas {
        let mut canvas = Canvas::new(self.width, self.height);
        let margin_left = 8 + GLYPH * 7;
        let margin_top = if self.title.is_empty() {
            12
        } else {
            12 + GLYPH + 8
        };
        let legend_rows = if self.series.len() > 1 {
            self.series.len() as u32
        } else {
            0
        };
        let margin_bottom = 12 + GLYPH + 6 + legend_rows * (GLYPH + 4);
        let margin_right = 12;
        if self.width <= margin_left + margin_right + 8
            || self.height <= margin_top + margin_bottom + 8
        {
            // Too small for axes: the title alone, if it fits.
            canvas.text(4, 4, &self.title, TEXT);
            return canvas;
        }
        let plot = Rect {
            x: margin_left,
            y: margin_top,
            w: self.width - margin_left - margin_right,
            h: self.height - margin_top - margin_bottom,
        };
        let (low, high) = self.range();
        let (low, high, step) = nice_ticks(low, high);
        let scale = Scale { low, high, plot };

        canvas.text(margin_left, 10, &self.title, TEXT);
        // Horizontal grid lines with their values, at round steps.
        let ticks = ((high - low) / step).round() as u32;
        for tick in 0..=ticks {
            let value = low + step * f64::from(tick);
            let y = scale.y(value);
            canvas.hline(plot.x, plot.x + plot.w, y, GRID);
            let label = short_number(value);
            let width = label.len() as u32 * GLYPH;
            canvas.text(
                plot.x.saturating_sub(width + 4),
                y.saturating_sub(GLYPH / 2),
                &label,
                TEXT,
            );
        }
        // The axes (the horizontal one at zero when the range crosses it),
        // then the data over them, so no point is hidden under a line.
        canvas.vline(plot.x, plot.y, plot.y + plot.h, AXIS);
        canvas.hline(
            plot.x,
            plot.x + plot.w,
            scale.y(low.max(0.0).min(high)),
            AXIS,
        );
        match self.kind {
            Kind::Bar => self.draw_bars(&mut canvas, &scale),
            Kind::Line => self.draw_lines(&mut canvas, &scale),
        }
        self.draw_labels(&mut canvas, &plot);
        if legend_rows > 0 {
            let top = plot.y + plot.h + 12 + GLYPH + 6;
            for (i, series) in self.series.iter().enumerate() {
                let y = top + i as u32 * (GLYPH + 4);
                canvas.fill(
                    Rect {
                        x: plot.x,
                        y,
                        w: GLYPH,
                        h: GLYPH,
                    },
                    PALETTE[i],
                );
                canvas.text(plot.x + GLYPH + 6, y, &series.name, TEXT);
            }
        }
        canvas
    }

    /// The value range on the y axis: always includes zero for bars, and
    /// never empty.
    fn range(&self) -> (f64, f64) {
        let values = self.series.iter().flat_map(|s| s.values.iter().copied());
        let (mut low, mut high) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
        if self.kind == Kind::Bar {
            low = low.min(0.0);
            high = high.max(0.0);
        }
        if high - low < f64::EPSILON * high.abs().max(1.0) {
            low -= 1.0;
            high += 1.0;
        }
        (low, high)
    }

    fn slot(&self, plot: &Rect, index: usize) -> (u32, u32) {
        let points = self.labels.len() as u32;
        let width = (plot.w / points).max(1);
        (plot.x + index as u32 * plot.w / points, width)
    }

    fn draw_bars(&self, canvas: &mut Canvas, scale: &Scale) {
        let plot = &scale.plot;
        let zero = scale.y(0.0);
        let count = self.series.len() as u32;
        for index in 0..self.labels.len() {
            let (x, width) = self.slot(plot, index);
            let inner = (width * 4 / 5).max(1);
            let bar = (inner / count).max(1);
            let start = x + (width - inner) / 2;
            for (s, series) in self.series.iter().enumerate() {
                let y = scale.y(series.values[index]);
                let (top, bottom) = if y < zero { (y, zero) } else { (zero, y) };
                let rect = Rect {
                    x: start + s as u32 * bar,
                    y: top,
                    w: bar,
                    h: (bottom - top).max(1),
                };
                canvas.fill(rect, PALETTE[s]);
            }
        }
    }

    fn draw_lines(&self, canvas: &mut Canvas, scale: &Scale) {
        for (s, series) in self.series.iter().enumerate() {
            let mut previous: Option<(u32, u32)> = None;
            for (index, value) in series.values.iter().enumerate() {
                let (x, width) = self.slot(&scale.plot, index);
                let point = (x + width / 2, scale.y(*value));
                if let Some(from) = previous {
                    canvas.line(from, point, PALETTE[s]);
                }
                canvas.fill(
                    Rect {
                        x: point.0.saturating_sub(2),
                        y: point.1.saturating_sub(2),
                        w: 5,
                        h: 5,
                    },
                    PALETTE[s],
                );
                previous = Some(point);
            }
        }
    }

    /// Category labels under the axis, skipping some when they would
    /// overlap.
    fn draw_labels(&self, canvas: &mut Canvas, plot: &Rect) {
        let widest = self
            .labels
            .iter()
            .map(|l| l.chars().count())
            .max()
            .unwrap_or(0)
            .clamp(1, 12) as u32;
        let (_, slot) = self.slot(plot, 0);
        let every = ((widest * GLYPH + 4) / slot.max(1) + 1) as usize;
        for (index, label) in self.labels.iter().enumerate().step_by(every) {
            let (x, width) = self.slot(plot, index);
            let label: String = label.chars().take(12).collect();
            let text_width = label.chars().count() as u32 * GLYPH;
            let left = (x + width / 2).saturating_sub(text_width / 2);
            canvas.text(left, plot.y + plot.h + 6, &label, TEXT);
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Rect {
    x: u32,
    y: u32,
    w: u32,
    h: u32,
}

struct Scale {
    low: f64,
    high: f64,
    plot: Rect,
}

impl Scale {
    fn y(&self, value: f64) -> u32 {
        let fraction = ((value - self.low) / (self.high - self.low)).clamp(0.0, 1.0);
        let from_bottom = (fraction * f64::from(self.plot.h)).round() as u32;
        self.plot.y + self.plot.h - from_bottom.min(self.plot.h)
    }
}

/// Widens `low..high` to multiples of a round step (1, 2 or 5 times a power
/// of ten) that gives about five intervals; returns the new ends and the
/// step.
pub(crate) fn nice_ticks(low: f64, high: f64) -> (f64, f64, f64) {
    let rough = (high - low) / 5.0;
    let power = 10f64.powf(rough.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * power)
        .find(|s| *s >= rough)
        .unwrap_or(10.0 * power);
    (
        (low / step).floor() * step,
        (high / step).ceil() * step,
        step,
    )
}

/// A value as a short axis label: at most 6 characters where possible.
fn short_number(value: f64) -> String {
    let magnitude = value.abs();
    let (scaled, suffix) = if magnitude >= 1e9 {
        (value / 1e9, "G")
    } else if magnitude >= 1e6 {
        (value / 1e6, "M")
    } else if magnitude >= 1e4 {
        (value / 1e3, "k")
    } else {
        (value, "")
    };
    let text = if scaled.fract().abs() < 1e-9 {
        format!("{scaled:.0}")
    } else {
        format!("{scaled:.1}")
    };
    format!("{text}{suffix}")
}

/// An RGB image in memory.
#[derive(Debug)]
pub struct Canvas {
    width: u32,
    height: u32,
    pixels: Vec<u8>,
}

impl Canvas {
    fn new(width: u32, height: u32) -> Self {
        let mut pixels = Vec::with_capacity(width as usize * height as usize * 3);
        for _ in 0..width as usize * height as usize {
            pixels.extend_from_slice(&WHITE);
        }
        Self {
            width,
            height,
            pixels,
        }
    }

    fn set(&mut self, x: u32, y: u32, colour: [u8; 3]) {
        if x < self.width && y < self.height {
            let at = (y as usize * self.width as usize + x as usize) * 3;
            self.pixels[at..at + 3].copy_from_slice(&colour);
        }
    }

    fn fill(&mut self, rect: Rect, colour: [u8; 3]) {
        for y in rect.y..rect.y.saturating_add(rect.h).min(self.height) {
            for x in rect.x..rect.x.saturating_add(rect.w).min(self.width) {
                self.set(x, y, colour);
            }
        }
    }

    fn hline(&mut self, x0: u32, x1: u32, y: u32, colour: [u8; 3]) {
        self.fill(
            Rect {
                x: x0,
                y,
                w: x1.saturating_sub(x0) + 1,
                h: 1,
            },
            colour,
        );
    }

    fn vline(&mut self, x: u32, y0: u32, y1: u32, colour: [u8; 3]) {
        self.fill(
            Rect {
                x,
                y: y0,
                w: 1,
                h: y1.saturating_sub(y0) + 1,
            },
            colour,
        );
    }

    /// A two-pixel-wide line from `a` to `b` (Bresenham).
    fn line(&mut self, a: (u32, u32), b: (u32, u32), colour: [u8; 3]) {
        let (mut x, mut y) = (i64::from(a.0), i64::from(a.1));
        let (x1, y1) = (i64::from(b.0), i64::from(b.1));
        let dx = (x1 - x).abs();
        let dy = -(y1 - y).abs();
        let sx = if x < x1 { 1 } else { -1 };
        let sy = if y < y1 { 1 } else { -1 };
        let mut err = dx + dy;
        loop {
            for (ox, oy) in [(0, 0), (1, 0), (0, 1)] {
                if let (Ok(px), Ok(py)) = (u32::try_from(x + ox), u32::try_from(y + oy)) {
                    self.set(px, py, colour);
                }
            }
            if x == x1 && y == y1 {
                break;
            }
            let e2 = 2 * err;
            if e2 >= dy {
                err += dy;
                x += sx;
            }
            if e2 <= dx {
                err += dx;
                y += sy;
            }
        }
    }

    /// Text in the 8×8 font; characters it lacks are drawn as `?`.
    fn text(&mut self, x: u32, y: u32, text: &str, colour: [u8; 3]) {
        for (i, c) in text.chars().enumerate() {
            let glyph = BASIC_FONTS
                .get(c)
                .or_else(|| BASIC_FONTS.get('?'))
                .unwrap_or([0; 8]);
            let left = x + i as u32 * GLYPH;
            if left >= self.width {
                break;
            }
            for (row, bits) in glyph.iter().enumerate() {
                for col in 0..8u32 {
                    if bits & (1 << col) != 0 {
                        self.set(left + col, y + row as u32, colour);
                    }
                }
            }
        }
    }

    /// The pixel at (x, y), for tests.
    pub fn pixel(&self, x: u32, y: u32) -> [u8; 3] {
        let at = (y as usize * self.width as usize + x as usize) * 3;
        [self.pixels[at], self.pixels[at + 1], self.pixels[at + 2]]
    }

    fn encode(&self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::Balanced);
        let mut writer = encoder
            .write_header()
            .map_err(|e| format!("PNG encoding failed: {e}"))?;
        writer
            .write_image_data(&self.pixels)
            .map_err(|e| format!("PNG encoding failed: {e}"))?;
        writer
            .finish()
            .map_err(|e| format!("PNG encoding failed: {e}"))?;
        Ok(out)
    }
}

#[cfg(test)]
pub(crate) fn draw_for_test(chart: &Chart) -> Canvas {
    chart.draw()
}
