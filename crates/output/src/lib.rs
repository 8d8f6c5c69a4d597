//! satpep-output (in progress).
