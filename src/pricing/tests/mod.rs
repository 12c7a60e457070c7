//! Tests of the Section 5 reproduction's files (the algorithms' tests are in the core crate).

mod reproduce;
