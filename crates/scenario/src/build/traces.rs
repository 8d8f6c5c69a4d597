//! Trace files named by a `[[link]]` (`rate_trace`, `delay_trace`, `loss_trace`): resolved
//! against the scenario file's folder, read with the limits of docs/scenario.md ("Limits"),
//! parsed by `satpep_proto::link::schedule`. A mistake inside a trace is reported as
//! `TRACE_FILE:LINE: key link.NAME.rate_trace: …`; a file that cannot be read, at the key's
//! line in the scenario. Each file is read once per load, however many links or sweep points
//! name it.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use satpep_proto::link::{DeliveryTrace, LinkConfig, StepKind, StepTrace, TraceError, TraceFile};

use super::{join, Builder, Result};
use crate::keys::{self, Seg};

/// Largest trace file accepted, in bytes (64 MiB: Mahimahi's largest bundled trace is 3.4 MB;
/// a trace at the line limit, `MAX_TRACE_LINES`, of 7-digit timestamps is about 80 MB).
pub const MAX_TRACE_BYTES: u64 = 64 << 20;

impl Builder<'_, '_> {
    /// Read and parse every trace file `config` names; `path` is the link's key path.
    pub(super) fn read_traces(&self, config: &mut LinkConfig, path: &[Seg]) -> Result<()> {
        if let Some(t) = &mut config.rate_trace {
            self.load(
                t,
                &join(path, "rate_trace"),
                0,
                DeliveryTrace::parse_mahimahi,
            )?;
        }
        if let Some(t) = &mut config.delay_trace {
            let parse = |text: &str| StepTrace::parse(text, StepKind::DelayMs);
            self.load(t, &join(path, "delay_trace"), 1, parse)?;
        }
        if let Some(t) = &mut config.loss_trace {
            let parse = |text: &str| StepTrace::parse(text, StepKind::Probability);
            self.load(t, &join(path, "loss_trace"), 2, parse)?;
        }
        Ok(())
    }

    /// Resolve `trace.path`, then fill `trace.data` from the cache or the file.
    fn load<T: Any + Send + Sync>(
        &self,
        trace: &mut TraceFile<T>,
        at: &[Seg],
        kind: u8,
        parse: impl Fn(&str) -> std::result::Result<T, TraceError>,
    ) -> Result<()> {
        let (shown, absolute) = self.resolve(&trace.path);
        trace.path = absolute.display().to_string();
        let cache_key = (trace.path.clone(), kind);
        if let Some(hit) = self.src.cached_trace(&cache_key) {
            if let Ok(data) = hit.downcast::<T>() {
                trace.data = Some(data);
                return Ok(());
            }
        }
        let text = read_trace(&absolute)
            .map_err(|msg| self.err(at, format!("trace file `{}`: {msg}", shown.display())))?;
        let data = parse(&text).map_err(|e| {
            keys::invalid(
                &shown.display().to_string(),
                Some(e.line),
                None,
                Some(keys::display_path(self.root, at)),
                e.message,
            )
        })?;
        let data = Arc::new(data);
        self.src.cache_trace(cache_key, data.clone());
        trace.data = Some(data);
        Ok(())
    }

    /// The path as shown in messages (relative paths joined to the scenario's folder) and as
    /// kept in the scenario (absolute, so that a `run.json` replays from anywhere).
    fn resolve(&self, written: &str) -> (PathBuf, PathBuf) {
        let p = Path::new(written);
        let origin = self.src.origin();
        let from_file = !(origin.starts_with('<') || origin.starts_with("--set"));
        let shown = match Path::new(origin).parent() {
            Some(dir) if from_file && p.is_relative() => dir.join(p),
            _ => p.to_path_buf(),
        };
        let absolute = std::path::absolute(&shown).unwrap_or_else(|_| shown.clone());
        (shown, absolute)
    }
}

/// The text of a regular file of at most [`MAX_TRACE_BYTES`], or why not.
fn read_trace(path: &Path) -> std::result::Result<String, String> {
    use std::io::Read as _;
    let meta = std::fs::metadata(path).map_err(|e| format!("cannot read it: {e}"))?;
    if !meta.is_file() {
        return Err("is not a regular file (a trace is read whole, at load)".into());
    }
    if meta.len() > MAX_TRACE_BYTES {
        return Err(format!(
            "is {} bytes; at most {MAX_TRACE_BYTES} bytes ({} MiB) are accepted (see \
             docs/scenario.md, \"Limits\")",
            meta.len(),
            MAX_TRACE_BYTES >> 20
        ));
    }
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read it: {e}"))?;
    let mut bytes = Vec::new();
    file.take(MAX_TRACE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_TRACE_BYTES {
        return Err(format!(
            "grew beyond {MAX_TRACE_BYTES} bytes while being read"
        ));
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()]
            .iter()
            .filter(|&&b| b == b'\n')
            .count()
            + 1;
        format!("is not UTF-8 text (line {line})")
    })
}
