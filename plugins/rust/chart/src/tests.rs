use super::*;
use crate::render::{PALETTE, draw_for_test};

fn input(kind: ChartKind, labels: &[&str], series: &[(&str, &[f64])]) -> DrawInput {
    DrawInput {
        kind,
        title: "Sales".into(),
        labels: labels.iter().map(|s| s.to_string()).collect(),
        series: series
            .iter()
            .map(|(name, values)| SeriesInput {
                name: name.to_string(),
                values: values.to_vec(),
            })
            .collect(),
        width: 320,
        height: 200,
    }
}

/// Decodes a PNG into (width, height, RGB pixels).
fn decode(png: &[u8]) -> (u32, u32, Vec<u8>) {
    let decoder = png::Decoder::new(std::io::Cursor::new(png));
    let mut reader = decoder.read_info().expect("a PNG header");
    let mut pixels = vec![0; reader.output_buffer_size().expect("a size")];
    let info = reader.next_frame(&mut pixels).expect("a frame");
    assert_eq!(info.color_type, png::ColorType::Rgb);
    pixels.truncate(info.buffer_size());
    (info.width, info.height, pixels)
}

fn count(pixels: &[u8], colour: [u8; 3]) -> usize {
    pixels.chunks_exact(3).filter(|p| *p == colour).count()
}

/// Rows (top first) where `colour` appears in the decoded image.
fn rows_with(pixels: &[u8], width: u32, colour: [u8; 3]) -> Vec<u32> {
    let row_len = width as usize * 3;
    pixels
        .chunks_exact(row_len)
        .enumerate()
        .filter(|(_, row)| row.chunks_exact(3).any(|p| p == colour))
        .map(|(y, _)| y as u32)
        .collect()
}

#[test]
fn a_bar_chart_is_a_png_of_the_asked_size_with_each_series_colour() {
    let drawn = draw(input(
        ChartKind::Bar,
        &["Jan", "Feb", "Mar"],
        &[("2025", &[3.0, 5.0, 2.0]), ("2026", &[4.0, 1.0, 6.0])],
    ))
    .unwrap();
    assert_eq!(&drawn.png[..8], b"\x89PNG\r\n\x1a\n");
    let (width, height, pixels) = decode(&drawn.png);
    assert_eq!((width, height), (320, 200));
    assert!(
        count(&pixels, PALETTE[0]) > 100,
        "the first series' bars are drawn"
    );
    assert!(
        count(&pixels, PALETTE[1]) > 100,
        "the second series' bars are drawn"
    );
    assert_eq!(count(&pixels, PALETTE[2]), 0, "no third series");
    assert_eq!((drawn.summary.min, drawn.summary.max), (1.0, 6.0));
    assert_eq!(drawn.summary.bytes, drawn.png.len());
}

#[test]
fn a_taller_value_draws_a_taller_bar() {
    let small = draw(input(ChartKind::Bar, &["a", "b"], &[("s", &[1.0, 10.0])])).unwrap();
    let (width, _, pixels) = decode(&small.png);
    // Column of each bar: the pixels of the series colour, split by x.
    let row_len = width as usize * 3;
    let mut heights = [0u32; 2];
    for row in pixels.chunks_exact(row_len) {
        for (x, p) in row.chunks_exact(3).enumerate() {
            if p == PALETTE[0] {
                heights[usize::from(x as u32 >= width / 2)] += 1;
            }
        }
    }
    assert!(
        heights[1] > heights[0] * 5,
        "the bar for 10 is far taller than the bar for 1: {heights:?}"
    );
}

#[test]
fn negative_values_hang_below_the_zero_line() {
    let chart = draw(input(
        ChartKind::Bar,
        &["up", "down"],
        &[("s", &[5.0, -5.0])],
    ))
    .unwrap();
    let (width, _, pixels) = decode(&chart.png);
    let rows = rows_with(&pixels, width, PALETTE[0]);
    let (top, bottom) = (rows[0], *rows.last().unwrap());
    // The two bars together span both sides of the middle of the plot.
    assert!(
        bottom - top > 80,
        "bars above and below zero: rows {top}..{bottom}"
    );
}

#[test]
fn a_line_chart_joins_its_points() {
    let drawn = draw(input(
        ChartKind::Line,
        &["1", "2", "3", "4"],
        &[("s", &[1.0, 4.0, 2.0, 8.0])],
    ))
    .unwrap();
    let (width, _, pixels) = decode(&drawn.png);
    let rows = rows_with(&pixels, width, PALETTE[0]);
    // A continuous line covers every row between its lowest and highest
    // point, not just the five-pixel dots.
    let span = rows.last().unwrap() - rows[0] + 1;
    assert_eq!(rows.len() as u32, span, "no gap between points");
    assert!(span > 100);
}

#[test]
fn every_bad_input_says_what_to_fix() {
    let cases: Vec<(DrawInput, &str)> = vec![
        (
            input(ChartKind::Bar, &["a", "b"], &[("s", &[1.0])]),
            "one value per label",
        ),
        (input(ChartKind::Bar, &[], &[("s", &[])]), "labels"),
        (input(ChartKind::Bar, &["a"], &[]), "series"),
        (
            input(ChartKind::Bar, &["a"], &[("s", &[f64::NAN])]),
            "finite",
        ),
        (
            DrawInput {
                width: 10,
                ..input(ChartKind::Bar, &["a"], &[("s", &[1.0])])
            },
            "`width`",
        ),
        (
            DrawInput {
                height: 5000,
                ..input(ChartKind::Bar, &["a"], &[("s", &[1.0])])
            },
            "`height`",
        ),
    ];
    for (bad, says) in cases {
        let error = draw(bad).unwrap_err();
        assert_eq!(error.kind(), toolhost_guest::ToolErrorKind::InvalidInput);
        assert!(
            error.message().contains(says),
            "{:?} should mention {says}",
            error.message()
        );
    }
    let nine: Vec<(&str, &[f64])> = vec![("s", &[1.0]); 9];
    assert!(
        draw(input(ChartKind::Bar, &["a"], &nine))
            .unwrap_err()
            .message()
            .contains("1 to 8 series")
    );
}

#[test]
fn equal_values_and_the_smallest_canvas_still_draw() {
    let flat = draw(input(ChartKind::Line, &["a", "b"], &[("s", &[3.0, 3.0])])).unwrap();
    assert_eq!(decode(&flat.png).0, 320);
    let tiny = draw(DrawInput {
        width: 64,
        height: 64,
        ..input(ChartKind::Bar, &["a"], &[("s", &[1.0])])
    })
    .unwrap();
    assert_eq!(decode(&tiny.png).0, 64);
}

#[test]
fn the_title_is_drawn_in_text_colour() {
    let chart = Chart {
        kind: render::Kind::Bar,
        title: "T".into(),
        labels: vec!["a".into()],
        series: vec![Series {
            name: "s".into(),
            values: vec![1.0],
        }],
        width: 200,
        height: 120,
    };
    let with_title = draw_for_test(&chart);
    let without = draw_for_test(&Chart {
        title: String::new(),
        ..chart
    });
    // The glyph for `T` starts at the plot's left edge, in the title row.
    let row = (10..18).find(|y| (64..72).any(|x| with_title.pixel(x, *y) != [255, 255, 255]));
    assert!(row.is_some(), "a title glyph is drawn");
    assert!((64..72).all(|x| without.pixel(x, 10) == [255, 255, 255]));
}

#[test]
fn axis_steps_are_round_numbers_that_cover_the_data() {
    for (low, high) in [
        (0.0, 6.0),
        (-1.5, 6.0),
        (1.0, 12000.0),
        (0.0, 0.37),
        (-250.0, -3.0),
    ] {
        let (from, to, step) = crate::render::nice_ticks(low, high);
        assert!(
            from <= low && to >= high,
            "{from}..{to} covers {low}..{high}"
        );
        let mantissa = step / 10f64.powf(step.log10().floor());
        assert!(
            [1.0, 2.0, 5.0].iter().any(|m| (m - mantissa).abs() < 1e-9),
            "step {step}"
        );
        let intervals = ((to - from) / step).round();
        assert!(
            (3.0..=10.0).contains(&intervals),
            "{intervals} intervals for {low}..{high}"
        );
    }
}

#[test]
fn the_view_is_one_self_contained_app_page_under_the_plugins_own_authority() {
    use toolhost_guest::offers::{Offers, ResourceContents};
    let listed = view::View::resources();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].uri, "ui://chart/view.html");
    assert_eq!(
        listed[0].mime_type.as_deref(),
        Some("text/html;profile=mcp-app")
    );
    let parts = view::View::read(view::VIEW_URI, &Default::default()).unwrap();
    assert_eq!(parts[0].mime_type.as_deref(), Some(view::APP_MIME_TYPE));
    let ResourceContents::Text(html) = &parts[0].contents else {
        panic!("the view is text");
    };
    assert!(html.starts_with("<!doctype html>") && html.contains("ui/initialize"));
    // Nothing fetched from elsewhere: the only URL is SVG's namespace name.
    let urls = html.matches("http").count();
    assert_eq!(urls, html.matches("http://www.w3.org/2000/svg").count());
    assert!(!html.contains("src=") && !html.contains("<link"));
    assert!(
        html.len() < 8 * 1024,
        "keep the page small: {} bytes",
        html.len()
    );
    assert!(view::View::read("ui://chart/other.html", &Default::default()).is_err());
}
