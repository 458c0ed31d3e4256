//! A small server-sent events parser (the WHATWG `text/event-stream`
//! format), fed with whatever byte chunks the network delivers.
//!
//! Lines end in LF, CRLF or CR, and a CRLF may be split across chunks.
//! `data:` lines accumulate (joined with `\n`), `event:` names the event,
//! lines starting with `:` are comments, `id:` and `retry:` are ignored (no
//! provider reconnects a chat stream), and a blank line dispatches. Bytes
//! are decoded as UTF-8 per whole line, so a character split across chunks
//! survives.
//!
//! At the end of the body, an event whose lines all arrived but whose
//! closing blank line did not is still dispatched (every line is complete);
//! a last line without its line end is dropped, as the standard says.
//!
//! One event (its `data` so far plus the line being read) is held up to a
//! cap: past it, [`SseParser::push`] fails with [`EventTooLarge`] instead
//! of growing, so a line that never ends costs at most the cap.

/// One event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` name; empty when none was given (the standard's
    /// `message`).
    pub(crate) event: String,
    /// The `data:` lines joined with `\n`.
    pub(crate) data: String,
}

/// An event (or a line) grew past the parser's cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct EventTooLarge;

/// Incremental parser state.
#[derive(Debug)]
pub(crate) struct SseParser {
    /// The most bytes one event holds: its `data` and the current line.
    max_event: usize,
    line: Vec<u8>,
    after_cr: bool,
    event: String,
    /// The `data` lines so far, as the bytes that came (decoded once the
    /// event is whole: the cap counts bytes received, not the text they
    /// become, which is up to three times as long for invalid UTF-8).
    data: Vec<u8>,
    has_data: bool,
    started: bool,
}

impl SseParser {
    /// A parser that holds at most `max_event` bytes of one event.
    pub(crate) fn new(max_event: usize) -> Self {
        Self {
            max_event,
            line: Vec::new(),
            after_cr: false,
            event: String::new(),
            data: Vec::new(),
            has_data: false,
            started: false,
        }
    }

    /// Feed one chunk; returns the events it completed.
    ///
    /// # Errors
    ///
    /// [`EventTooLarge`] when the event being read (its data so far and
    /// its current line) passes the cap; the parser is then spent.
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, EventTooLarge> {
        let mut out = Vec::new();
        for &byte in chunk {
            match byte {
                b'\n' if self.after_cr => self.after_cr = false,
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    self.end_line(&mut out);
                }
                _ => {
                    self.after_cr = false;
                    if self.line.len() + self.data.len() >= self.max_event {
                        return Err(EventTooLarge);
                    }
                    self.line.push(byte);
                }
            }
        }
        Ok(out)
    }

    /// The body ended: return an event whose lines all arrived.
    pub(crate) fn finish(&mut self) -> Vec<SseEvent> {
        self.line.clear();
        let mut out = Vec::new();
        self.dispatch(&mut out);
        out
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        let mut line = std::mem::take(&mut self.line);
        if !self.started {
            self.started = true;
            if line.starts_with("\u{feff}".as_bytes()) {
                line.drain(..3);
            }
        }
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(b":") {
            return;
        }
        let (field, value) = match line.iter().position(|b| *b == b':') {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (&line[..], &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(value);
                self.has_data = true;
            }
            b"event" => self.event = String::from_utf8_lossy(value).into_owned(),
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.has_data) {
            let data = String::from_utf8(data)
                .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
            out.push(SseEvent { event, data });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
        }
    }

    fn parse_in_chunks(input: &[u8], size: usize) -> Vec<SseEvent> {
        let mut parser = SseParser::new(1 << 20);
        let mut out = Vec::new();
        for chunk in input.chunks(size) {
            out.extend(parser.push(chunk).expect("under the cap"));
        }
        out.extend(parser.finish());
        out
    }

    #[test]
    fn every_chunk_boundary_gives_the_same_events() {
        let input = "\u{feff}: comment\r\nevent: message_start\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n\
                     data: caf\u{e9} \u{1f600}\n\ndata:[DONE]\r\rid: 7\nretry: 10\nevent: x\ndata\n\n"
            .as_bytes();
        let expected = vec![
            ev("message_start", "{\"a\":\n1}"),
            ev("", "caf\u{e9} \u{1f600}"),
            ev("", "[DONE]"),
            ev("x", ""),
        ];
        for size in 1..=input.len() {
            assert_eq!(parse_in_chunks(input, size), expected, "chunk size {size}");
        }
    }

    #[test]
    fn blank_lines_without_data_dispatch_nothing() {
        assert_eq!(parse_in_chunks(b"\n\n: ping\n\nevent: ping\n\n", 3), vec![]);
    }

    #[test]
    fn a_complete_last_event_without_blank_line_is_kept_a_partial_line_is_dropped() {
        assert_eq!(parse_in_chunks(b"data: a\n", 4), vec![ev("", "a")]);
        assert_eq!(
            parse_in_chunks(b"data: a\n\ndata: {\"cut", 4),
            vec![ev("", "a")]
        );
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_end() {
        let mut parser = SseParser::new(1 << 20);
        assert_eq!(parser.push(b"data: x\r"), Ok(vec![]));
        assert_eq!(parser.push(b"\n"), Ok(vec![]));
        assert_eq!(parser.push(b"\r\n"), Ok(vec![ev("", "x")]));
    }

    #[test]
    fn a_line_or_an_event_past_the_cap_fails_and_one_at_it_passes() {
        // One line that never ends: refused once it reaches the cap.
        let mut parser = SseParser::new(16);
        assert_eq!(parser.push(b"data: 0123456789"), Ok(vec![]));
        assert_eq!(parser.push(b"x"), Err(EventTooLarge));
        // Many short data lines of one event add up.
        let mut parser = SseParser::new(16);
        assert_eq!(parser.push(b"data: abcde\ndata: abcde\n"), Ok(vec![]));
        assert_eq!(parser.push(b"data: abcdefgh\n"), Err(EventTooLarge));
        // Events under the cap, one after the other, never add up.
        let mut parser = SseParser::new(16);
        for _ in 0..100 {
            assert_eq!(
                parser.push(b"data: abcdefgh\n\n"),
                Ok(vec![ev("", "abcdefgh")])
            );
        }
        // Bytes that are not UTF-8 count as the bytes that came, not as
        // the longer text they are shown as.
        let mut parser = SseParser::new(16);
        let mut line = b"data: ".to_vec();
        line.extend([0xff; 9]);
        line.extend(b"\n\n");
        assert_eq!(parser.push(&line), Ok(vec![ev("", &"\u{fffd}".repeat(9))]));
        // A comment line that never ends counts too.
        let mut parser = SseParser::new(16);
        assert_eq!(parser.push(&[b':'; 17]), Err(EventTooLarge));
    }
}
