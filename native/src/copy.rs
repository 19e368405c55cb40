//! `\copy` bulk loads: what to load (a file or a generated series) and how
//! its rows are read where the database has no COPY (SQLite).
//!
//! PostgreSQL gets the bytes as they are, through COPY ... FROM STDIN with
//! the options the script wrote, so the server parses them exactly as psql's
//! `\copy` would have it do. SQLite has no COPY: the rows are read here
//! (PostgreSQL's text or CSV format, with the same options) and inserted with
//! one prepared INSERT inside one transaction.

use std::io::{BufRead, Read};

/// One `\copy` of a script: into what, from where, with which options.
#[derive(Clone, Debug)]
pub struct CopySpec {
    pub table: String,
    pub columns: Vec<String>,
    /// None: a generated series.
    pub path: Option<String>,
    /// COPY's options, keys in lower case.
    pub options: Vec<(String, String)>,
    /// The options as written, for PostgreSQL's COPY.
    pub options_sql: String,
}

impl CopySpec {
    /// `table (columns)`, as COPY and INSERT name their target.
    pub(crate) fn target(&self) -> String {
        if self.columns.is_empty() {
            self.table.clone()
        } else {
            format!("{} ({})", self.table, self.columns.join(", "))
        }
    }

    /// PostgreSQL: the COPY that reads what the client sends.
    pub fn copy_sql(&self) -> String {
        let options = if self.path.is_some() && !self.options_sql.is_empty() {
            format!(" ({})", self.options_sql)
        } else {
            String::new()
        };
        format!("COPY {} FROM STDIN{options}", self.target())
    }

    /// SQLite: one row's INSERT with `n` values.
    pub fn insert_sql(&self, n: usize) -> String {
        let marks: Vec<String> = (1..=n).map(|i| format!("?{i}")).collect();
        format!(
            "INSERT INTO {} VALUES ({})",
            self.target(),
            marks.join(", ")
        )
    }

    /// The source's bytes: the file, or the series `range` in COPY's text format.
    pub fn open(&self, range: Option<(i64, i64)>) -> Result<Box<dyn Read>, String> {
        match (&self.path, range) {
            (Some(path), _) => std::fs::File::open(path)
                .map(|f| Box::new(f) as Box<dyn Read>)
                .map_err(|e| format!("cannot read {path}: {e}")),
            (None, Some((first, last))) => Ok(Box::new(Series {
                next: first,
                last,
                columns: self.columns.len().max(1),
                buf: Vec::new(),
                pos: 0,
            })),
            (None, None) => Err("a generated \\copy needs its bounds".into()),
        }
    }

    /// How SQLite reads the rows (a series is always COPY's text format).
    pub fn format(&self) -> Result<Format, String> {
        if self.path.is_none() {
            return Format::new(&[]);
        }
        Format::new(&self.options)
    }
}

/// The rows `next..=last` as text-format lines, produced as they are read.
struct Series {
    next: i64,
    last: i64,
    columns: usize,
    buf: Vec<u8>,
    pos: usize,
}

impl Read for Series {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        if self.pos == self.buf.len() {
            if self.next > self.last {
                return Ok(0);
            }
            self.buf.clear();
            self.pos = 0;
            let end = self.next.saturating_add(4095).min(self.last);
            series_text(self.next, end, self.columns, &mut self.buf);
            self.next = end.saturating_add(1);
            if end == i64::MAX {
                self.last = i64::MIN; // nothing after i64::MAX
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// How a `\copy` file is written, from its options (COPY's names and defaults).
#[derive(Clone, Debug, PartialEq)]
pub struct Format {
    pub csv: bool,
    pub delimiter: u8,
    pub null: String,
    pub header: bool,
    pub quote: u8,
    pub escape: u8,
}

impl Format {
    /// COPY's defaults: text format, tab, `\N`; CSV: comma, empty string, `"`.
    pub fn new(options: &[(String, String)]) -> Result<Format, String> {
        let csv = match options.iter().find(|(k, _)| k == "format") {
            None => false,
            Some((_, v)) if v == "text" => false,
            Some((_, v)) if v == "csv" => true,
            Some((_, v)) => return Err(format!("FORMAT {v} cannot be read here (text or csv)")),
        };
        let mut f = Format {
            csv,
            delimiter: if csv { b',' } else { b'\t' },
            null: if csv { String::new() } else { "\\N".into() },
            header: false,
            quote: b'"',
            escape: b'"',
        };
        let one_byte = |k: &str, v: &str| -> Result<u8, String> {
            match v.as_bytes() {
                [b] => Ok(*b),
                _ => Err(format!(
                    "{} must be one single-byte character",
                    k.to_uppercase()
                )),
            }
        };
        for (k, v) in options {
            match k.as_str() {
                "format" => {}
                "delimiter" => f.delimiter = one_byte(k, v)?,
                "null" => f.null = v.clone(),
                "header" => f.header = matches!(v.as_str(), "true" | "on" | "1" | ""),
                "quote" => f.quote = one_byte(k, v)?,
                "escape" => f.escape = one_byte(k, v)?,
                other => {
                    return Err(format!(
                        "the option {} is PostgreSQL's; SQLite loads take FORMAT, DELIMITER, NULL, \
                         HEADER, QUOTE and ESCAPE",
                        other.to_uppercase()
                    ))
                }
            }
        }
        Ok(f)
    }
}

/// Counts the bytes read through it.
pub struct Counted<R> {
    pub inner: R,
    pub bytes: u64,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        Ok(n)
    }
}

/// Calls `row` with the fields of every row of `input` (None: NULL).
pub fn read_rows<R: Read>(
    input: R,
    format: &Format,
    mut row: impl FnMut(&[Option<&str>]) -> Result<(), String>,
) -> Result<(), String> {
    if format.csv {
        let mut reader = csv::ReaderBuilder::new()
            .delimiter(format.delimiter)
            .quote(format.quote)
            .escape((format.escape != format.quote).then_some(format.escape))
            .double_quote(format.escape == format.quote)
            .has_headers(format.header)
            .flexible(true)
            .from_reader(input);
        let mut record = csv::ByteRecord::new();
        let mut texts: Vec<String> = Vec::new();
        loop {
            match reader.read_byte_record(&mut record) {
                Ok(false) => return Ok(()),
                Ok(true) => {}
                Err(e) => return Err(format!("cannot read the CSV: {e}")),
            }
            texts.clear();
            for field in record.iter() {
                texts.push(String::from_utf8_lossy(field).into_owned());
            }
            // COPY's CSV: an unquoted field equal to NULL is NULL; ByteRecord has
            // lost the quoting, so a quoted empty string is NULL here too when
            // NULL is the empty string (a documented difference).
            let fields: Vec<Option<&str>> = texts
                .iter()
                .map(|t| (t.as_str() != format.null).then_some(t.as_str()))
                .collect();
            row(&fields)?;
        }
    }
    let mut lines = std::io::BufReader::new(input);
    let mut line = String::new();
    let mut decoded: Vec<String> = Vec::new();
    let mut first = true;
    loop {
        line.clear();
        let n = lines
            .read_line(&mut line)
            .map_err(|e| format!("cannot read the file: {e}"))?;
        if n == 0 {
            return Ok(());
        }
        let text = line.strip_suffix('\n').unwrap_or(&line);
        let text = text.strip_suffix('\r').unwrap_or(text);
        if std::mem::take(&mut first) && format.header {
            continue;
        }
        if text == "\\." {
            return Ok(()); // COPY's end-of-data marker
        }
        decoded.clear();
        let mut nulls: Vec<bool> = Vec::new();
        for raw in text.split(format.delimiter as char) {
            nulls.push(raw == format.null);
            decoded.push(unescape(raw));
        }
        let fields: Vec<Option<&str>> = decoded
            .iter()
            .zip(&nulls)
            .map(|(d, &null)| (!null).then_some(d.as_str()))
            .collect();
        row(&fields)?;
    }
}

/// COPY's text format: backslash escapes (`\t`, `\n`, `\\`, ...) become what they stand for.
fn unescape(raw: &str) -> String {
    if !raw.contains('\\') {
        return raw.to_string();
    }
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('v') => out.push('\u{b}'),
            Some(other) => out.push(other),
            None => out.push('\\'),
        }
    }
    out
}

/// The rows of a generated load, `start..=end`, in COPY's text format: each
/// listed column (or the one) gets the row's number.
pub fn series_text(start: i64, end: i64, columns: usize, out: &mut Vec<u8>) {
    use std::io::Write;
    for i in start..=end {
        for c in 0..columns.max(1) {
            if c > 0 {
                out.push(b'\t');
            }
            let _ = write!(out, "{i}");
        }
        out.push(b'\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(input: &str, options: &[(&str, &str)]) -> Vec<Vec<Option<String>>> {
        let options: Vec<(String, String)> = options
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let format = Format::new(&options).unwrap();
        let mut out = Vec::new();
        read_rows(input.as_bytes(), &format, |r| {
            out.push(r.iter().map(|f| f.map(str::to_string)).collect());
            Ok(())
        })
        .unwrap();
        out
    }

    fn s(v: &str) -> Option<String> {
        Some(v.to_string())
    }

    #[test]
    fn text_format_as_copy_reads_it() {
        let got = rows("1\ta\\tb\t\\N\n2\tx\\\\y\tz\n\\.\n3\tignored\n", &[]);
        assert_eq!(
            got,
            vec![
                vec![s("1"), s("a\tb"), None],
                vec![s("2"), s("x\\y"), s("z")]
            ]
        );
        let got = rows(
            "id|v\n1|NA\n",
            &[("delimiter", "|"), ("null", "NA"), ("header", "true")],
        );
        assert_eq!(got, vec![vec![s("1"), None]]);
    }

    #[test]
    fn csv_format_with_quotes_headers_and_nulls() {
        let got = rows(
            "id,name,note\n1,\"a, b\",\n2,\"say \"\"hi\"\"\",x\n",
            &[("format", "csv"), ("header", "")],
        );
        assert_eq!(
            got,
            vec![
                vec![s("1"), s("a, b"), None],
                vec![s("2"), s("say \"hi\""), s("x")]
            ]
        );
    }

    #[test]
    fn options_sqlite_cannot_honour_are_refused() {
        let o = |k: &str, v: &str| vec![(k.to_string(), v.to_string())];
        assert!(Format::new(&o("format", "binary")).is_err());
        assert!(Format::new(&o("freeze", "true")).is_err());
        assert!(Format::new(&o("delimiter", "ab")).is_err());
    }

    #[test]
    fn a_series_is_text_format_rows() {
        let mut out = Vec::new();
        series_text(3, 5, 2, &mut out);
        assert_eq!(out, b"3\t3\n4\t4\n5\t5\n");
    }
}
