//! satpep-sim (in progress).
