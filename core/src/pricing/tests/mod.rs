//! Tests of PARM and of the Section 5 model and simulation, which need more set-up than fits
//! beside the code.

mod experiment;
mod parm;
mod traffic;
