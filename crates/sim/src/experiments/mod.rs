//! Paper reproductions that need more than one `satpep sim` run: the scheme definitions and the
//! run loop, shared by [`crate::reproduce`] (`satpep reproduce`: tables, CSV and PNG) and by the
//! integration tests that assert the papers' orderings.

pub mod arora;
pub mod karaliopoulos;
pub mod samaraweera;
