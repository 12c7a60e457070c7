//! Tests of PARM and of the Section 5 reproduction, which need more set-up than fits beside the
//! code.

mod experiment;
mod parm;
mod reproduce;
mod traffic;
