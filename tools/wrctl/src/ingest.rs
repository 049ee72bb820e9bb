//! From bytes to [`Record`]s: the room's log lines, read from stdin or from the
//! bodies Fastly's HTTPS logging endpoint posts, parsed by the library's own
//! [`Record`] parser, and handed to the control thread in batches over a bounded
//! channel (a full channel blocks the reader: back-pressure, not memory).

use std::io::{self, BufRead, BufReader, Read};
use std::sync::mpsc::{SendError, SyncSender};

use control::record::Record;

use crate::state::{BadCounts, Views};

/// Lines parsed before a batch is handed over (a reader also hands over what it has
/// whenever its input has nothing more buffered).
pub const BATCH: usize = 4096;
/// Longest line read, in bytes: the room's lines are under 1 KiB; a longer line is
/// counted as a bad line, and the rest of it skipped.
pub const MAX_LINE: usize = 64 * 1024;

/// What the control thread is sent.
pub enum Msg {
    /// Parsed lines.
    Batch(Batch),
    /// A request for the state of the rooms and the writer, answered on the
    /// channel given.
    View(SyncSender<Views>),
}

/// Parsed lines on their way to the controller.
#[derive(Debug, Default)]
pub struct Batch {
    /// The readable room lines, in the order read.
    pub records: Vec<Record>,
    /// The others.
    pub bad: BadCounts,
    /// The room each bad room line names (`None`: the service room), in the
    /// order read; another program's line, and a line too long to read, name none.
    pub bad_rooms: Vec<Option<String>>,
}

impl Batch {
    /// Lines in the batch (blank lines are not counted at all).
    pub fn len(&self) -> usize {
        self.records.len() + self.bad.total() as usize
    }

    /// Whether nothing was added.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Parses one line (a trailing `\r\n` or `\n` is ignored); blank lines are skipped.
    pub fn push_line(&mut self, line: &[u8]) {
        let line = trim_end(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let text = String::from_utf8_lossy(line);
        match text.parse::<Record>() {
            Ok(record) => self.records.push(record),
            Err(why) => {
                self.bad.add(&why);
                if let Some(room) = Record::room_of(&text) {
                    self.bad_rooms.push(room.map(str::to_string));
                }
            }
        }
    }

    /// Counts one line that was too long to read.
    pub fn push_too_long(&mut self) {
        self.bad.unreadable_field += 1;
    }
}

fn trim_end(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = line {
        line = rest;
    }
    line
}

/// Reads lines from `input` until its end, sending batches to `tx`. Returns the
/// lines read; an error when reading fails or the control thread is gone.
pub fn read_stream(input: impl Read, tx: &SyncSender<Msg>) -> io::Result<u64> {
    let mut reader = BufReader::with_capacity(256 * 1024, input);
    let mut line = Vec::with_capacity(1024);
    let mut batch = Batch::default();
    let mut lines = 0;
    loop {
        line.clear();
        let n = reader
            .by_ref()
            .take(MAX_LINE as u64)
            .read_until(b'\n', &mut line)?;
        if n == 0 {
            break;
        }
        lines += 1;
        if line.len() >= MAX_LINE && line.last() != Some(&b'\n') {
            batch.push_too_long();
            skip_rest_of_line(&mut reader)?;
        } else {
            batch.push_line(&line);
        }
        if batch.len() >= BATCH || reader.buffer().is_empty() {
            send(tx, std::mem::take(&mut batch))?;
        }
    }
    send(tx, batch)?;
    Ok(lines)
}

fn skip_rest_of_line(reader: &mut impl BufRead) -> io::Result<()> {
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(());
        }
        match buf.iter().position(|&b| b == b'\n') {
            Some(i) => {
                reader.consume(i + 1);
                return Ok(());
            }
            None => {
                let n = buf.len();
                reader.consume(n);
            }
        }
    }
}

/// Parses a body of newline-separated lines (as Fastly's HTTPS logging posts them)
/// and sends it in batches. Returns the lines read and the bad ones among them.
pub fn read_body(body: &[u8], tx: &SyncSender<Msg>) -> io::Result<(u64, u64)> {
    let (mut lines, mut bad) = (0, 0);
    let mut batch = Batch::default();
    for line in body.split(|&b| b == b'\n') {
        if line.len() > MAX_LINE {
            batch.push_too_long();
        } else {
            batch.push_line(line);
        }
        if batch.len() >= BATCH {
            lines += batch.len() as u64;
            bad += batch.bad.total();
            send(tx, std::mem::take(&mut batch))?;
        }
    }
    lines += batch.len() as u64;
    bad += batch.bad.total();
    send(tx, batch)?;
    Ok((lines, bad))
}

fn send(tx: &SyncSender<Msg>, batch: Batch) -> io::Result<()> {
    if batch.is_empty() {
        return Ok(());
    }
    tx.send(Msg::Batch(batch))
        .map_err(|SendError(_)| io::Error::new(io::ErrorKind::BrokenPipe, "the controller stopped"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc::sync_channel;

    fn batches(rx: &std::sync::mpsc::Receiver<Msg>) -> (usize, BadCounts) {
        let (mut records, mut bad) = (0, BadCounts::default());
        while let Ok(Msg::Batch(b)) = rx.try_recv() {
            records += b.records.len();
            bad.merge(&b.bad);
        }
        (records, bad)
    }

    #[test]
    fn a_stream_of_mixed_lines_is_counted_by_kind() {
        let (tx, rx) = sync_channel(1000);
        let long = "x".repeat(MAX_LINE + 10);
        let input = format!(
            "waitingroom_log :: waitingroom t=5 decision=anon uid=192.0.2.1 p=50 exp=40 path=/\r\n\
             Listening on http://127.0.0.1:7676\n\
             \n\
             waitingroom t=6 uid=192.0.2.1\n\
             {long}\n\
             waitingroom t=x decision=anon uid=a\n\
             waitingroom t=7 decision=bypass scope=disabled uid=192.0.2.2 path=/"
        );
        assert_eq!(read_stream(input.as_bytes(), &tx).unwrap(), 7);
        let (records, bad) = batches(&rx);
        assert_eq!(records, 2);
        assert_eq!(
            bad,
            BadCounts {
                not_room_line: 1,
                missing_field: 1,
                unreadable_field: 2
            }
        );
    }

    #[test]
    fn a_body_is_split_on_newlines_and_invalid_utf8_is_a_bad_line() {
        let (tx, rx) = sync_channel(1000);
        let body =
            b"waitingroom t=5 decision=anon uid=a\n\xff\xfe\nwaitingroom t=6 decision=wait uid=b\n";
        assert_eq!(read_body(body, &tx).unwrap(), (3, 1));
        assert_eq!(batches(&rx).0, 2);
    }
}
