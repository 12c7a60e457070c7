//! Property tests of every parser that reads outside input (RELIABILITY.md): each test is named
//! `prop_…`, so `-E 'test(/prop_/)'` selects them all, and runs proptest's default 256 cases
//! unless `PROPTEST_CASES` asks for more.

// The netlink parser's properties live in `nfqueue::props`, beside the private parser.
mod daemon_control;
mod units;
