//! Tests of the reproduction's files (the model's and simulator's tests are in the core).

mod reproduce;
