//! toolhost plugin `chart`: draws a bar or line chart from data as a PNG.
//!
//! The model gives labels and one or more series of numbers; the tool
//! answers with the picture (an image content part, contract 0.2) and a
//! short structured summary the model can read back (the value range, the
//! picture's size). Pure Rust: the drawing is in [`render`], the PNG
//! encoding is the `png` crate's. Its [`view`] is an MCP App: an HTML page
//! that shows the same data interactively, in clients that render Apps.

pub mod render;
pub mod view;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use toolhost_guest::{Content, Output, ToolError};

use render::{Chart, Kind, Series};

/// The kind of chart.
#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ChartKind {
    /// Bars side by side per label, one colour per series.
    #[default]
    Bar,
    /// Points joined by lines, one line per series.
    Line,
}

/// One series of values.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SeriesInput {
    /// The series' name, shown in the legend when there are several.
    #[serde(default)]
    pub name: String,
    /// One number per label, in the labels' order.
    pub values: Vec<f64>,
}

/// Input of `chart_draw`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DrawInput {
    /// `bar` (default) or `line`.
    #[serde(default)]
    pub kind: ChartKind,
    /// A title drawn above the chart.
    #[serde(default)]
    pub title: String,
    /// The categories along the x axis (1 to 1000), e.g. months.
    pub labels: Vec<String>,
    /// 1 to 8 series, each with one value per label.
    pub series: Vec<SeriesInput>,
    /// Width in pixels (64 to 2048, default 640).
    #[serde(default = "default_width")]
    pub width: u32,
    /// Height in pixels (64 to 2048, default 400).
    #[serde(default = "default_height")]
    pub height: u32,
}

fn default_width() -> u32 {
    640
}

fn default_height() -> u32 {
    400
}

/// What `chart_draw` says about the picture it returns.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DrawOutput {
    pub width: u32,
    pub height: u32,
    /// The smallest and largest value drawn.
    pub min: f64,
    pub max: f64,
    /// The PNG's size in bytes.
    pub bytes: usize,
}

/// A drawn chart: the PNG and its summary.
#[derive(Debug)]
pub struct Drawn {
    pub png: Vec<u8>,
    pub summary: DrawOutput,
}

/// Draws the chart `input` describes.
///
/// # Errors
///
/// `invalid_input` saying what to fix: a size out of bounds, no series or
/// too many, a series whose length differs from the labels', a value that
/// is not a finite number.
pub fn draw(input: DrawInput) -> Result<Drawn, ToolError> {
    let chart = Chart {
        kind: match input.kind {
            ChartKind::Bar => Kind::Bar,
            ChartKind::Line => Kind::Line,
        },
        title: input.title,
        labels: input.labels,
        series: input
            .series
            .into_iter()
            .enumerate()
            .map(|(i, s)| Series {
                name: if s.name.is_empty() {
                    format!("series {}", i + 1)
                } else {
                    s.name
                },
                values: s.values,
            })
            .collect(),
        width: input.width,
        height: input.height,
    };
    chart.check().map_err(ToolError::invalid_input)?;
    let png = chart.to_png().map_err(ToolError::failed)?;
    let values = chart.series.iter().flat_map(|s| s.values.iter().copied());
    let (min, max) = values.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    Ok(Drawn {
        summary: DrawOutput {
            width: chart.width,
            height: chart.height,
            min,
            max,
            bytes: png.len(),
        },
        png,
    })
}

/// The tool: the PNG as an image part, the summary as the structured
/// result (its schema is the tool's output schema).
pub fn draw_tool(input: DrawInput) -> Result<Output<DrawOutput>, ToolError> {
    let drawn = draw(input)?;
    Ok(Output::new(drawn.summary).with(Content::png(drawn.png)))
}

toolhost_guest::export_tools! {
    chart_draw: "Draw a bar or line chart of one or more series of numbers and return it \
                 as a PNG image. Use it when the user asks for a chart or a plot." => draw_tool {
        title: "Draw a chart",
        read_only: true,
        idempotent: true,
        open_world: false,
    },
}

toolhost_guest::export_offers!(view::View);

#[cfg(test)]
mod tests;
