//! satpep-scenario (in progress).
