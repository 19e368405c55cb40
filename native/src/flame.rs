//! Folded stacks and flame graphs, by the `inferno` crate (the Rust port of Brendan
//! Gregg's FlameGraph scripts): `perf script` text in, `stack count` pairs out, and an
//! interactive SVG from such pairs. The samplers and the report call these through
//! `wannabet.engine.flame`; nothing here knows about samples or conditions.

use std::collections::HashMap;
use std::io::Cursor;

use inferno::collapse::perf::{Folder, Options as FoldOptions};
use inferno::collapse::Collapse;
use inferno::flamegraph::color::{parse_hex_color, PaletteMap};
use inferno::flamegraph::{self, FuncFrameAttrsMap, Options};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Folds `perf script` output: one `(stack, weight)` per distinct stack, frames root first
/// (the process name, then its callers down to the sampled function), separated by `;`.
/// The weight is the sum of the event's periods, as perf prints them: for `cpu-clock`,
/// nanoseconds of CPU (at a fixed frequency every stack sample weighs about the same).
pub fn fold(text: &[u8]) -> std::io::Result<Vec<(String, u64)>> {
    let mut options = FoldOptions::default();
    // One thread: the profiler runs between samples, next to nothing else that needs it, and
    // the multithreaded feature is not built.
    options.nthreads = 1;
    let mut folder = Folder::from(options);
    let mut out = Vec::new();
    folder.collapse(Cursor::new(text), &mut out)?;
    let folded = String::from_utf8_lossy(&out);
    let mut stacks = Vec::new();
    for line in folded.lines() {
        if let Some((stack, count)) = line.rsplit_once(' ') {
            if let Ok(n) = count.parse::<u64>() {
                stacks.push((stack.to_string(), n));
            }
        }
    }
    Ok(stacks)
}

/// An interactive flame graph (SVG with its own search and zoom script) of `stacks`.
///
/// `colors` maps function names to `#rrggbb` (frames not named get the "hot" palette, chosen
/// from the name so the same function has the same colour in every graph); `titles` replaces
/// the hover text of the named functions.
pub fn svg(
    stacks: &[(String, u64)],
    title: &str,
    subtitle: Option<&str>,
    colors: &HashMap<String, String>,
    titles: &HashMap<String, String>,
) -> Result<String, String> {
    let mut palette = PaletteMap::default();
    for (name, hex) in colors {
        let color = parse_hex_color(hex).ok_or_else(|| format!("not a #rrggbb colour: {hex}"))?;
        palette.insert(name, color);
    }
    let mut attrs_text = String::new();
    for (name, text) in titles {
        // The attribute file's own format: one function a line, tab-separated name=value.
        let clean = |s: &str| s.replace(['\t', '\n', '\r'], " ");
        attrs_text.push_str(&format!("{}\ttitle={}\n", clean(name), clean(text)));
    }
    let attrs = FuncFrameAttrsMap::from_reader(Cursor::new(attrs_text.into_bytes()))
        .map_err(|e| e.to_string())?;
    let mut options = Options::default();
    options.title = title.to_string();
    options.subtitle = subtitle.map(str::to_string);
    options.deterministic = true;
    options.hash = true;
    options.count_name = "ns of CPU".to_string();
    options.func_frameattrs = attrs;
    options.palette_map = Some(&mut palette);
    let mut lines: Vec<String> = stacks
        .iter()
        .filter(|(stack, n)| *n > 0 && !stack.is_empty())
        .map(|(stack, n)| format!("{stack} {n}"))
        .collect();
    // `from_lines` expects sorted input.
    lines.sort();
    let mut out = Vec::new();
    flamegraph::from_lines(&mut options, lines.iter().map(String::as_str), &mut out)
        .map_err(|e| e.to_string())?;
    String::from_utf8(out).map_err(|e| e.to_string())
}

/// Python: `fold_perf(text) -> list[(stack, count)]`.
#[pyfunction]
pub fn fold_perf(py: Python<'_>, text: &[u8]) -> PyResult<Vec<(String, u64)>> {
    let text = text.to_vec();
    py.detach(move || fold(&text))
        .map_err(|e| PyValueError::new_err(format!("cannot fold the perf script output: {e}")))
}

/// Python: `flame_graph(stacks, title, subtitle=None, colors=None, titles=None) -> str`.
#[pyfunction]
#[pyo3(signature = (stacks, title, subtitle=None, colors=None, titles=None))]
pub fn flame_graph(
    py: Python<'_>,
    stacks: Vec<(String, u64)>,
    title: String,
    subtitle: Option<String>,
    colors: Option<HashMap<String, String>>,
    titles: Option<HashMap<String, String>>,
) -> PyResult<String> {
    let colors = colors.unwrap_or_default();
    let titles = titles.unwrap_or_default();
    py.detach(move || svg(&stacks, &title, subtitle.as_deref(), &colors, &titles))
        .map_err(PyValueError::new_err)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCRIPT: &str = "postgres 1234 [000] 1.000001: 1000000 cpu-clock:\n\
\tffff0001 md5_block_data_order+0x10 (/usr/lib/libcrypto.so.3)\n\
\tffff0002 pg_md5_hash+0x20 (/usr/lib/postgresql/15/bin/postgres)\n\
\tffff0003 main+0x30 (/usr/lib/postgresql/15/bin/postgres)\n\
\n\
postgres 1234 [000] 1.000002: 1000000 cpu-clock:\n\
\tffff0001 md5_block_data_order+0x10 (/usr/lib/libcrypto.so.3)\n\
\tffff0002 pg_md5_hash+0x20 (/usr/lib/postgresql/15/bin/postgres)\n\
\tffff0003 main+0x30 (/usr/lib/postgresql/15/bin/postgres)\n\
\n\
postgres 1234 [001] 1.000003: 1000000 cpu-clock:\n\
\tffff0004 ExecScan+0x10 (/usr/lib/postgresql/15/bin/postgres)\n\
\tffff0003 main+0x30 (/usr/lib/postgresql/15/bin/postgres)\n\
\n";

    #[test]
    fn folds_stacks_root_first_with_period_weights() {
        let mut stacks = fold(SCRIPT.as_bytes()).unwrap();
        stacks.sort();
        assert_eq!(
            stacks,
            vec![
                ("postgres;main;ExecScan".to_string(), 1_000_000),
                (
                    "postgres;main;pg_md5_hash;md5_block_data_order".to_string(),
                    2_000_000
                ),
            ]
        );
    }

    #[test]
    fn draws_named_colours_and_titles() {
        let stacks = fold(SCRIPT.as_bytes()).unwrap();
        let colors = HashMap::from([("pg_md5_hash".to_string(), "#d62728".to_string())]);
        let titles = HashMap::from([("pg_md5_hash".to_string(), "grew by 60 pp".to_string())]);
        let svg = svg(&stacks, "md5", None, &colors, &titles).unwrap();
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("rgb(214,39,40)"));
        assert!(svg.contains("grew by 60 pp"));
        assert!(svg.contains("md5_block_data_order"));
        assert!(svg.contains("<script"));
    }

    #[test]
    fn refuses_a_bad_colour() {
        let colors = HashMap::from([("f".to_string(), "red".to_string())]);
        let err = svg(
            &[("a;f".to_string(), 1)],
            "t",
            None,
            &colors,
            &HashMap::new(),
        );
        assert!(err.unwrap_err().contains("red"));
    }
}
